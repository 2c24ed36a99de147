"""`boatload reproduce --settle MINUTES` (`make settle`): more repetitions of
the points behind the claims a run left undecided, looked at by the design of
:mod:`boatload.sequential`, until each is decided or the time is spent.

Each look adds repetitions (rep numbers continue after the existing ones) to
the points of the claims still open, measures them through the workflow
(shuffled with the seed, chained one at a time, quiet), reruns those studies'
notebooks at the look's level, and freezes every claim the look decides. At
the end the workflow reruns the notebooks and the paper; each notebook takes
the frozen verdicts from the record (boatload.settle_record).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from boatload import plan, settle_record
from boatload.config import ConfigError, load
from boatload.intervals import mann_whitney_rank
from boatload.reproduce import ANALYSIS_ESTIMATE_S, main as reproduce
from boatload.sequential import Design
from boatload.studies import study
from boatload.system import hostname
from boatload.verdict import NOT_TESTED, OPEN, Rule

DEFAULT_LOOKS = 3


def _say(line: str) -> None:
    print(f"boatload settle: {line}", file=sys.stderr, flush=True)


def _summary(results: Path, name: str) -> dict:
    import json

    path = results / "tables" / f"{name}-summary.json"
    if not path.is_file():
        raise SystemExit(f"boatload settle: no {path}; run `make reproduce` first")
    return json.loads(path.read_text(encoding="utf-8"))


def _designs(config: dict, names: list[str]) -> dict[str, Design]:
    s = config.get("settle") or {}
    looks = int(s.get("looks", DEFAULT_LOOKS))
    alpha = round(1.0 - Rule(**(config.get("verdicts") or {})).level, 12)
    out = {}
    for name in names:
        first = plan.repetitions_of(config, name)
        try:
            out[name] = Design.planned(alpha, first, int(s.get("max_repetitions", max(2 * first, first + looks - 1))),
                                       looks)
        except ValueError as exc:
            raise SystemExit(f"boatload settle: {exc}") from None
    return out


def _new_record(config: dict, names: list[str], results: Path) -> dict:
    """The claims the run left open, the points behind them, and the designs."""
    designs = _designs(config, names)
    all_runs = plan.runs(config)
    claims = {}
    for name in names:
        jobs = [r.job for r in all_runs if r.study == name]
        for entry in _summary(results, name).get("verdicts", []):
            if entry.get("verdict") not in OPEN:
                continue
            points = sorted(study(name).claim_points(entry, jobs))
            if points:
                claims[settle_record.claim_key(name, entry)] = {
                    "study": name, "points": [settle_record.point_key(name, *p) for p in points],
                    "test": entry.get("test"), "decided": False, "look": None, "level": None,
                    "runs_per_side": entry.get("runs_per_side"), "runs_added": 0, "entry": entry,
                }
    any_design = next(iter(designs.values()))
    return {
        "scale": config["scale"], "seed": config["seed"],
        "design": {"alpha": any_design.alpha, "looks": any_design.looks, "text": _design_text(designs, claims)},
        "schedules": {n: list(d.schedule) for n, d in designs.items()},
        "first_reps": {n: d.schedule[0] for n, d in designs.items()},
        "points": {}, "claims": claims, "looks_made": 0, "stopped": None,
    }


def _design_text(designs: dict[str, Design], claims: dict) -> str:
    """Each design once, with the studies that follow it (one line when they all share one)."""
    by_text: dict[str, list[str]] = {}
    for name, design in designs.items():
        if any(c["study"] == name for c in claims.values()):
            by_text.setdefault(design.text(), []).append(name)
    if len(by_text) == 1:
        return next(iter(by_text))
    return "; ".join(f"{', '.join(names)}: {text}" for text, names in by_text.items())


def _possible(claim: dict, reps: int, level: float) -> bool:
    """Whether `reps` runs per side allow the claim's interval at the look's level at all."""
    lvl = 2.0 * level - 1.0 if claim["test"] == "no difference" else level
    return mann_whitney_rank(reps, reps, lvl) is not None


def _notebook(root: Path, config: dict, configfile: str, name: str, host: str, out: Path, level: float) -> dict:
    """The study's notebook at `level` on the runs made, into `out`; its summary."""
    params = [a for k, v in sorted((config.get("verdicts") or {}).items()) for a in ("-p", k, str(v))]
    argv = ["papermill", f"notebooks/{name}.ipynb", str(out / "notebooks" / f"{name}.ipynb"), "-k", "python3",
            "--cwd", ".", "-p", "data", f"data/runs/{host}/{name}.parquet", "-p", "reference",
            f"data/reference/{name}.csv", "-p", "out_dir", str(out), "-p", "level", repr(level), *params]
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    log = out / f"{name}.log"
    with open(log, "w") as handle:
        code = subprocess.call(argv, cwd=root, stdout=handle, stderr=subprocess.STDOUT,
                               env={**os.environ, settle_record.LOOK_ENV: "1"})
    if code != 0:
        raise SystemExit(f"boatload settle: the {name} notebook failed at a look (see {log})")
    return _summary(out, name)


def _judge(record: dict, name: str, look: int, level: float, summary: dict) -> int:
    """Freeze every open claim of `name` the look decides; how many it decided."""
    entries = {e.get("claim"): e for e in summary.get("verdicts", [])}
    decided = 0
    for key, claim in record["claims"].items():
        if claim["study"] != name or claim["decided"]:
            continue
        entry = entries.get(key.split(": ", 1)[1])
        if entry is None:
            continue
        claim.update(entry=entry, look=look, level=level, runs_per_side=entry.get("runs_per_side"))
        if entry["verdict"] not in OPEN and entry["verdict"] != NOT_TESTED:
            claim["decided"] = True
            decided += 1
    return decided


def main(configfile: str, minutes: float, profile: str | None = None, studies: list[str] | None = None) -> int:
    started = time.monotonic()
    budget_s = minutes * 60.0
    root = Path.cwd().resolve()
    if profile:
        raise SystemExit("boatload reproduce: --settle measures on this host only; drop --profile")
    if not minutes > 0:
        raise SystemExit(f"boatload reproduce: --settle {minutes}: give the minutes it may take, above 0")
    try:
        config = load(Path(configfile))
        if studies:
            config["only_studies"] = ",".join(studies)
    except ConfigError as exc:
        raise SystemExit(f"boatload: {exc}") from None
    host = config.get("host") or hostname()
    runs_dir = root / "data" / "runs" / host
    names = [n for n in plan.studies(config) if (root / "notebooks" / f"{n}.ipynb").is_file()]
    record = settle_record.load(runs_dir, config) or _new_record(config, names, root / "results")
    open_claims = [c for c in record["claims"].values() if not c["decided"]]
    if not open_claims or record["looks_made"] >= record["design"]["looks"]:
        _say("nothing to settle: " + ("no claim is open" if not open_claims else "every look was made"))
        return 0
    _say(f"{len(open_claims)} open claims; {record['design']['text']}")
    looks_dir = root / "results" / "settle"
    for look in range(record["looks_made"] + 1, record["design"]["looks"] + 1):
        open_by_study = {}
        for claim in record["claims"].values():
            if not claim["decided"]:
                open_by_study.setdefault(claim["study"], []).append(claim)
        if not open_by_study:
            break
        # this look's repetitions for the open claims' points
        points = dict(record["points"])
        for name, claims in open_by_study.items():
            reps = record["schedules"][name][look - 1]
            for claim in claims:
                for key in claim["points"]:
                    points[key] = max(points.get(key, record["first_reps"][name]), reps)
        new = plan.pending(plan.runs(config, added={tuple(k.split("/", 2)): v for k, v in points.items()}),
                           str(runs_dir))
        cost = sum(plan.estimate_s(r) for r in new) + ANALYSIS_ESTIMATE_S * len(open_by_study)
        if time.monotonic() - started + cost > budget_s:
            record["stopped"] = f"the time budget ({minutes:g} min) before look {look}"
            _say(f"look {look} would take about {cost:.0f} s more than the budget leaves: stopping")
            break
        record["points"] = {k: v for k, v in points.items() if v > record["first_reps"][k.split("/", 1)[0]]}
        settle_record.save(runs_dir, record)
        if new:
            _say(f"look {look}: {len(new)} more runs of {len({(r.study, r.target, r.point) for r in new})} points")
            parquets = [f"data/runs/{host}/{name}.parquet" for name in open_by_study]
            status = reproduce(configfile, parquets, studies=studies)
            if status != 0:
                record["stopped"] = f"a failed measurement at look {look}"
                settle_record.save(runs_dir, record)
                return status
        decided = 0
        for name, claims in open_by_study.items():
            design = Design(record["design"]["alpha"], tuple(record["schedules"][name]))
            level = design.levels()[look - 1]
            reps = design.schedule[look - 1]
            for claim in claims:
                claim["runs_added"] = sum(points.get(k, reps) - record["first_reps"][name] for k in claim["points"])
            if any(_possible(c, reps, level) for c in claims):
                summary = _notebook(root, config, configfile, name, host, looks_dir / f"look{look}", level)
                decided += _judge(record, name, look, level, summary)
            else:
                for claim in claims:
                    claim.update(look=look, level=level, runs_per_side=[reps, reps])
        record["looks_made"] = look
        settle_record.save(runs_dir, record)
        _say(f"look {look}: {decided} claims decided, {sum(not c['decided'] for c in record['claims'].values())} open")
    settle_record.save(runs_dir, record)
    carried = sorted({c["study"] for c in record["claims"].values()})
    status = reproduce(configfile, ["--forcerun", *[f"results/tables/{n}-summary.json" for n in carried]],
                       studies=studies)
    settled = sum(c["decided"] for c in record["claims"].values())
    added = sum(v - record["first_reps"][k.split("/", 1)[0]] for k, v in record["points"].items())
    _say(f"{settled} of {len(record['claims'])} claims decided, {added} runs added, "
         f"{(time.monotonic() - started) / 60:.1f} min" + (f"; stopped at {record['stopped']}" if record["stopped"] else ""))
    return status
