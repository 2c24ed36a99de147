"""What `boatload reproduce --settle` decided, kept beside the runs it added:
data/runs/<host>/settle.json.

The workflow reads it for the repetitions it added (their runs belong to the
plan from then on), and each notebook, through :func:`applied`, for the
claims it carried: a claim decided at a look keeps the verdict of that look,
so a later analysis of more runs does not reopen it. So does a claim the
first rounds decided (the design's first look): a look may add runs to its
points for another claim that shares them, and the analysis after would
otherwise look at it again, unplanned.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from boatload.analysis import intervals, verdict
from boatload.base.results import write_atomic

NAME = "settle.json"
#: set while settle itself runs a notebook at a look: the look's own verdicts, not the record's
LOOK_ENV = "BOATLOAD_SETTLE_LOOK"


def rule_fingerprint() -> str:
    """What decides a verdict, as code: the sources of the verdict rule and its
    intervals. A record made under other code froze verdicts that rule no
    longer gives, so its claims are not carried (its runs still count)."""
    digest = hashlib.sha256()
    for module in (verdict, intervals):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def path(runs_dir: str | Path) -> Path:
    return Path(runs_dir) / NAME


def load(runs_dir: str | Path, config: dict | None = None) -> dict | None:
    """The record, or None (none yet, or one made at another scale than `config`'s)."""
    p = path(runs_dir)
    if not p.is_file():
        return None
    record = json.loads(p.read_text(encoding="utf-8"))
    if config is not None and record.get("scale") != config.get("scale"):
        return None
    return record


def save(runs_dir: str | Path, record: dict) -> None:
    write_atomic(path(runs_dir), json.dumps(record, indent=2, allow_nan=False) + "\n")


def point_key(study: str, target: str, point: str) -> str:
    return f"{study}/{target}/{point}"


def claim_key(study: str, claim: dict) -> str:
    return f"{study}: {claim['claim']}"


def added_reps(runs_dir: str | Path, config: dict) -> dict[tuple[str, str, str], int]:
    """(study, target, point) -> that point's repetitions in all, for boatload.workflow.plan.runs."""
    record = load(runs_dir, config) or {}
    return {tuple(key.split("/", 2)): reps for key, reps in record.get("points", {}).items()}


def _of_study(by_claim_key: dict, study: str) -> dict:
    """{claim text: value} of the entries of a {claim_key: value} mapping that belong to `study`."""
    return {k.split(": ", 1)[1]: v for k, v in by_claim_key.items() if k.startswith(f"{study}: ")}


def applied(summary: dict, study: str, data: str | Path) -> dict:
    """`summary` with each claim settle carried replaced by the verdict it was
    decided with (or, undecided, its last look's), with the look, the runs per
    side and the runs it added in `settle`, and the design in summary['settle']
    (a study with claims carried); each claim the first rounds decided with the
    verdict they gave it. `data` is the study's run table, beside which the
    record lives."""
    record = load(Path(data).parent)
    if record is None or os.environ.get(LOOK_ENV):
        return summary
    carried, first = _of_study(record["claims"], study), _of_study(record.get("first_decided") or {}, study)
    if not carried and not first:
        return summary
    if record.get("rule") != rule_fingerprint():
        return {**summary, "settle": {"stale": f"{path(Path(data).parent)} froze its verdicts under another verdict "
                                                f"rule: each claim is decided here on all its runs"}}

    def settled(entry: dict) -> dict:
        done = carried.get(entry.get("claim"))
        if done is None:
            return first.get(entry.get("claim"), entry)
        return {**done["entry"], "settle": {k: done[k] for k in ("look", "decided", "runs_per_side", "level",
                                                                   "runs_added")}}

    out = {**summary, "verdicts": [settled(e) for e in summary.get("verdicts", [])]}
    if isinstance(summary.get("verdict"), dict) and "claim" in summary["verdict"]:
        out["verdict"] = settled(summary["verdict"])
    if not carried:
        return out
    mine = [v for v in carried.values()]
    out["settle"] = {
        "design": record["design"]["text"],
        "alpha": record["design"]["alpha"],
        "looks_made": record["looks_made"],
        "stopped": record.get("stopped"),
        "claims": len(mine),
        "decided": sum(v["decided"] for v in mine),
        "runs_added": sum(reps - record["first_reps"].get(key.split("/", 1)[0], reps)
                          for key, reps in record["points"].items() if key.startswith(f"{study}/")),
    }
    return out


def decided_so_far(results: str | Path, runs_dir: str | Path) -> tuple[int, int] | None:
    """(claims decided, claims tested) over every study's summary in `results`,
    each claim the record carries counted as the record has it (decided at a look,
    or still open); None before any study was analysed. Claims not tested here by
    design (verdict.UNTESTABLE) are in neither count."""
    record = load(runs_dir) or {"claims": {}}
    decided = tested = 0
    for summary in sorted(Path(results, "tables").glob("*-summary.json")):
        study = summary.name.removesuffix("-summary.json")
        try:
            entries = json.loads(summary.read_text(encoding="utf-8")).get("verdicts") or []
        except (OSError, ValueError):
            continue
        for entry in verdict.claims_tested(entries):
            carried = record["claims"].get(claim_key(study, entry)) if "claim" in entry else None
            tested += 1
            decided += carried["decided"] if carried is not None else entry.get("verdict") in verdict.DECIDED
    return (decided, tested) if tested else None
