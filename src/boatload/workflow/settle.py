"""`boatload reproduce --settle MINUTES` (`make settle`): more repetitions of
the points behind the claims a run left undecided, looked at by the design of
:mod:`boatload.analysis.sequential`, until each is decided or the time is spent.

Each look adds repetitions (rep numbers continue after the existing ones) to
the points of the claims still open, measures them through the workflow
(shuffled with the seed, chained one at a time, quiet), reruns those studies'
notebooks at the look's level, and freezes every claim the look decides. At
the end the workflow reruns the notebooks and the paper; each notebook takes
the frozen verdicts from the record (boatload.analysis.settle_record).
"""

from __future__ import annotations

import math
from collections import Counter
import os
import subprocess
import sys
import time
from pathlib import Path

from boatload.workflow import plan
from boatload.analysis import settle_record
from boatload.studies.config import ConfigError, load
from boatload.workflow.notebooks import notebook_arguments
from boatload.analysis.intervals import mann_whitney_rank
from boatload.workflow.preflight import analysis_seconds, estimates, tail_seconds
from boatload.workflow.reproduce import main as reproduce
from boatload.analysis.sequential import Design
from boatload.studies import study
from boatload.base.system import hostname
from boatload.analysis.verdict import DECIDED, NOT_TESTED, OPEN, Rule

DEFAULT_LOOKS = 3


def _load(configfile, studies) -> dict:
    """The config, limited to `studies` when given; a bad one ends the run in one line."""
    try:
        config = load(Path(configfile))
    except ConfigError as exc:
        raise SystemExit(f"boatload: {exc}") from None
    if studies:
        config["only_studies"] = ",".join(studies)
    return config


def _say(line: str) -> None:
    print(f"boatload settle: {line}", file=sys.stderr, flush=True)


def _summary(results: Path, name: str) -> dict:
    import json

    path = results / "tables" / f"{name}-summary.json"
    if not path.is_file():
        raise SystemExit(f"boatload settle: no {path}; run `make reproduce` first")
    return json.loads(path.read_text(encoding="utf-8"))


def first_alpha(first_runs: int, level: float) -> float:
    """What the workflow's own analysis of `first_runs` per side spends: the tail
    share its interval at `level` has (0 when those runs allow none); the design's
    first look is that analysis, so its decisions stand within the total alpha."""
    rank = mann_whitney_rank(first_runs, first_runs, level)
    return 0.0 if rank is None else round(1.0 - rank[1], 12)


def claim_first_alpha(entry: dict) -> float:
    """What the workflow's analysis spent on one claim: the tail share its interval has (a
    claim of no difference: one tail of its interval at 2 x level - 1, as its two one-sided
    tests have it); 0 without an interval. Paired runs give other shares than first_alpha's."""
    coverage = entry.get("coverage")
    if coverage is None:
        return 0.0
    tail = 1.0 - float(coverage)
    return round(tail / 2.0 if entry.get("test") == "no difference" else tail, 12)


def _designs(config: dict, names: list[str], spent: dict[str, float] | None = None) -> dict[str, Design]:
    """Each study's design; `spent`: what its first look spent where the claims a look carries say
    (claim_first_alpha), else what its first rounds' unpaired analysis spends (first_alpha)."""
    s = config.get("settle") or {}
    looks = int(s.get("looks", DEFAULT_LOOKS))
    level = Rule(**(config.get("verdicts") or {})).level
    alpha = round(1.0 - level, 12)
    out = {}
    for name in names:
        first = plan.repetitions_of(config, name)
        own = (s.get("per_study") or {}).get(name)  # the schema requires its max_repetitions
        most = own["max_repetitions"] if own else s.get("max_repetitions", max(2 * first, first + looks - 1))
        if int(most) < first + looks - 1:
            field = f"settle.per_study.{name}.max_repetitions" if own else "settle.max_repetitions"
            raise SystemExit(f"boatload settle: {field}: {most} cannot hold {looks} looks from the {name} study's "
                             f"{first} repetitions (at least {first + looks - 1})")
        try:
            out[name] = Design.planned(alpha, first, int(most), looks,
                                       (spent or {}).get(name, first_alpha(first, level)))
        except ValueError as exc:
            raise SystemExit(f"boatload settle: {exc}") from None
    return out


def _new_record(config: dict, names: list[str], results: Path) -> dict:
    """The claims the run left open, the points behind them, and the designs."""
    designs = _designs(config, names)
    all_runs = plan.runs(config)
    claims, first_decided = {}, {}
    for name in names:
        jobs = [r.job for r in all_runs if r.study == name]
        for entry in _summary(results, name).get("verdicts", []):
            # decided by the first rounds (the design's first look): kept, whatever runs a look adds to its
            # points for another claim (settle_record.applied)
            if entry.get("verdict") in DECIDED:
                first_decided[settle_record.claim_key(name, entry)] = entry
            # a claim whose first analysis rested on more runs than the design's first look (points a study
            # measures in more rounds) spent its alpha there: a look would add no runs to it
            if entry.get("verdict") not in OPEN or min(entry.get("runs_per_side") or [0]) > designs[name].schedule[0] \
                    or claim_first_alpha(entry) >= designs[name].alpha:
                continue
            points = sorted(study(name).claim_points(entry, jobs))
            if points:
                claims[settle_record.claim_key(name, entry)] = {
                    "study": name, "points": [settle_record.point_key(name, *p) for p in points],
                    # what its own first analysis spent: its later looks get the rest (look_level)
                    "first_alpha": claim_first_alpha(entry),
                    "test": entry.get("test"), "decided": False, "look": None, "level": None,
                    "runs_per_side": entry.get("runs_per_side"), "runs_added": 0, "entry": entry,
                }
    # each study's later looks get what the most its carried claims' first analysis spent leaves
    # (paired claims spend other shares than the unpaired first_alpha assumes); a study whose carried
    # claims had no interval keeps first_alpha's
    spent: dict[str, float] = {}
    for claim in claims.values():
        if (share := claim_first_alpha(claim["entry"])) > 0.0:
            spent[claim["study"]] = max(spent.get(claim["study"], 0.0), share)
    designs = _designs(config, names, spent)
    any_design = next(iter(designs.values()))
    return {
        "scale": config["scale"], "seed": config["seed"], "rule": settle_record.rule_fingerprint(),
        "design": {"alpha": any_design.alpha, "looks": any_design.looks, "text": _design_text(designs, claims)},
        "schedules": {n: list(d.schedule) for n, d in designs.items()},
        "first_reps": {n: d.schedule[0] for n, d in designs.items()},
        # the first look is the workflow's analysis where it spent alpha (first_alpha): made already
        "points": {}, "claims": claims, "first_decided": first_decided,
        "looks_made": 1 if any_design.first_alpha > 0.0 else 0, "stopped": None,
        "first_alphas": {n: d.first_alpha for n, d in designs.items()},
    }


def _first_share(claim: dict, study_share: float) -> float:
    """What a carried claim's first analysis spent: its own share, or its study's (the most the study's
    carried claims spent) where it had no interval or the record predates the claims' own shares."""
    return claim.get("first_alpha") or study_share


def claim_design(record: dict, claim: dict) -> Design:
    """A carried claim's design: its study's looks, its first analysis' share spent first."""
    name = claim["study"]
    spent = _first_share(claim, record.get("first_alphas", {}).get(name, 0.0))
    return Design(record["design"]["alpha"], tuple(record["schedules"][name]), spent)


def look_level(record: dict, claim: dict, look: int) -> float:
    """The level a carried claim is judged at by look `look`: 1 - the share its design spends there. Each
    claim's looks stay within the alpha on their own (the union bound), so a claim whose first analysis
    spent less is not judged at the level of a sibling's that spent more."""
    return claim_design(record, claim).levels()[look - 1]


def level_groups(record: dict, claims: dict[str, dict], look: int) -> list[tuple[float, dict[str, dict]]]:
    """The claims a look judges, {key: claim}, grouped by the level each is judged at, lowest first."""
    by_level: dict[float, dict[str, dict]] = {}
    for key, claim in claims.items():
        by_level.setdefault(look_level(record, claim, look), {})[key] = claim
    return sorted(by_level.items())


def _design_text(designs: dict[str, Design], claims: dict) -> str:
    """Each design once, with the studies that follow it (one line when they all share one): a study
    whose carried claims spent different shares first has a design for each."""
    by_text: dict[str, list[str]] = {}
    for name, design in designs.items():
        spent = sorted({_first_share(c, design.first_alpha) for c in claims.values() if c["study"] == name})
        for share in spent:
            by_text.setdefault(Design(design.alpha, design.schedule, share).text(), []).append(name)
    if len(by_text) == 1:
        return next(iter(by_text))
    return "; ".join(f"{', '.join(names)}: {text}" for text, names in by_text.items())


def _possible(claim: dict, reps: int, level: float) -> bool:
    """Whether `reps` runs per side allow the claim's interval at the look's level at all."""
    lvl = 2.0 * level - 1.0 if claim["test"] == "no difference" else level
    return mann_whitney_rank(reps, reps, lvl) is not None


def _notebook(root: Path, config: dict, configfile: str, name: str, host: str, out: Path, level: float) -> dict:
    """The study's notebook at `level` on the runs made, into `out`; its summary."""
    argv = ["papermill", f"notebooks/{name}.ipynb", str(out / "notebooks" / f"{name}.ipynb"), "-k", "python3",
            "--cwd", ".", "-p", "data", f"data/runs/{host}/{name}.parquet", "-p", "reference",
            f"data/reference/{name}.csv", "-p", "out_dir", str(out), "-p", "level", repr(level),
            # a look's figures are shown nowhere: only the SVG the notebook always writes
            *notebook_arguments(config, formats=["svg"])]
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    log = out / f"{name}.log"
    with open(log, "w") as handle:
        code = subprocess.call(argv, cwd=root, stdout=handle, stderr=subprocess.STDOUT,
                               env={**os.environ, settle_record.LOOK_ENV: "1"})
    if code != 0:
        raise SystemExit(f"boatload settle: the {name} notebook failed at a look (see {log})")
    return _summary(out, name)


def _judge(record: dict, name: str, look: int, level: float, summary: dict, chosen: set[str] | None = None) -> int:
    """Freeze every claim of `name` the look measured (`chosen`, None: every open one) and decides; how many."""
    entries = {e.get("claim"): e for e in summary.get("verdicts", [])}
    decided = 0
    for key, claim in record["claims"].items():
        if claim["study"] != name or claim["decided"] or (chosen is not None and key not in chosen):
            continue
        entry = entries.get(key.split(": ", 1)[1])
        if entry is None:
            continue
        claim.update(entry=entry, look=look, level=level, runs_per_side=entry.get("runs_per_side"))
        if entry["verdict"] not in OPEN and entry["verdict"] != NOT_TESTED:
            claim["decided"] = True
            decided += 1
    return decided


def _choose(record: dict, config: dict, runs_dir: Path, results: Path, look: int,
            left_s: float) -> tuple[dict, dict, list]:
    """The open claims look `look` measures, {key: claim}, the points' repetitions
    then, and the new runs: claims in order of the seconds they would take to be
    decided (the runs to settle still missing per side times the measured cost
    of a round of their points), those the design's last look cannot reach at
    the observed spread after all others, each taken while its new runs and its
    study's analysis (as long as it last took here) fit in `left_s`. The same
    record and results give the same choice (ties broken by the claim)."""
    everything = plan.runs(config, added=settle_record.added_reps(runs_dir, config))
    per_run = {key[:3]: seconds for key, seconds in estimates(everything, runs_dir).items()}
    # each point's runs before the looks: the study's first rounds, or more where it measures a point in more
    planned = Counter(settle_record.point_key(r.study, r.target, r.point) for r in plan.runs(config))
    have = dict(record["points"])
    last = {name: sched[-1] for name, sched in record["schedules"].items()}

    def current(key: str) -> int:
        return have.get(key, planned[key])

    def order(item: tuple[str, dict]) -> tuple:
        key, claim = item
        name, entry = claim["study"], claim["entry"]
        made = min(current(p) for p in claim["points"])
        need = entry.get("runs_to_settle")
        round_s = sum(per_run.get(tuple(p.split("/", 2)), 0.0) for p in claim["points"])
        if need is None:
            return (True, math.inf, key)
        return (need > last[name], max(need - made, 1) * round_s, key)

    chosen, points, spent, studies_in = {}, dict(have), 0.0, set()
    for key, claim in sorted(((k, c) for k, c in record["claims"].items() if not c["decided"]), key=order):
        name = claim["study"]
        reps = record["schedules"][name][look - 1]
        raise_to = {p: reps for p in claim["points"] if points.get(p, planned[p]) < reps}
        # the study's analysis once for each level its chosen claims are judged at (level_groups)
        analysis = (name, look_level(record, claim, look))
        cost = sum((reps - points.get(p, planned[p])) * per_run.get(tuple(p.split("/", 2)), 0.0)
                   for p in raise_to) + (analysis_seconds(results, name) if analysis not in studies_in else 0.0)
        if spent + cost > left_s:
            continue
        chosen[key], spent = claim, spent + cost
        studies_in.add(analysis)
        points.update(raise_to)
    new = plan.pending(plan.runs(config, added={tuple(k.split("/", 2)): v for k, v in points.items()}),
                       str(runs_dir)) if chosen else []
    return chosen, points, new


def main(configfile: str, minutes: float, profile: str | None = None, studies: list[str] | None = None,
         budget: bool = False) -> int:
    """`budget`: called by :func:`budgeted` with what is left of the config's budget
    (it may be nothing); the record then says the budget's looks were made."""
    started = time.monotonic()
    budget_s = minutes * 60.0
    root = Path.cwd().resolve()
    if profile:
        raise SystemExit("boatload reproduce: --settle measures on this host only; drop --profile")
    if not minutes > 0 and not budget:
        raise SystemExit(f"boatload reproduce: --settle {minutes}: give the minutes it may take, above 0")
    config = _load(configfile, studies)
    host = config.get("host") or hostname()
    runs_dir = root / "data" / "runs" / host
    names = [n for n in plan.studies(config) if (root / "notebooks" / f"{n}.ipynb").is_file()]
    record = settle_record.load(runs_dir, config) or _new_record(config, names, root / "results")
    if budget:
        record["budget_spent"] = True
        settle_record.save(runs_dir, record)
    open_claims = [c for c in record["claims"].values() if not c["decided"]]
    if not open_claims or record["looks_made"] >= record["design"]["looks"]:
        _say("nothing to settle: " + ("no claim a look can add runs to is open" if not open_claims
                                      else "every look was made"))
        return 0
    _say(f"{len(open_claims)} open claims; {record['design']['text']}")
    looks_dir = root / "results" / "settle"
    looked = False  # a look measured runs or judged claims: the analysis is run again at the end
    for look in range(record["looks_made"] + 1, record["design"]["looks"] + 1):
        if not any(not c["decided"] for c in record["claims"].values()):
            break
        chosen, points, new = _choose(record, config, runs_dir, root / "results", look,
                                      budget_s - (time.monotonic() - started))
        if not chosen:
            record["stopped"] = f"the time budget ({minutes:.1f} min) at look {look}"
            _say(f"look {look}: no open claim's runs fit in the {max(budget_s - (time.monotonic() - started), 0):.0f} s "
                 "left: stopping")
            break
        open_by_study: dict[str, dict[str, dict]] = {}
        for key, claim in chosen.items():
            open_by_study.setdefault(claim["study"], {})[key] = claim
        record["points"] = {k: v for k, v in points.items() if v > record["first_reps"][k.split("/", 1)[0]]}
        settle_record.save(runs_dir, record)
        looked = True
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
            reps = record["schedules"][name][look - 1]
            for claim in claims.values():
                claim["runs_added"] = sum(points.get(k, reps) - record["first_reps"][name] for k in claim["points"])
            # the study's analysis once at each level its claims are judged at
            groups = level_groups(record, claims, look)
            for i, (level, group) in enumerate(groups):
                if any(_possible(c, reps, level) for c in group.values()):
                    out = looks_dir / (f"look{look}" if len(groups) == 1 else f"look{look}-{i + 1}")
                    summary = _notebook(root, config, configfile, name, host, out, level)
                    decided += _judge(record, name, look, level, summary, set(group))
                else:
                    for claim in group.values():
                        claim.update(look=look, level=level, runs_per_side=[reps, reps])
        record["looks_made"] = look
        settle_record.save(runs_dir, record)
        so_far = settle_record.decided_so_far(root / "results", runs_dir)
        _say(f"look {look}: {decided} claims decided ({sum(c['decided'] for c in record['claims'].values())} of "
             f"{len(record['claims'])} open after the first rounds so far), "
             f"{sum(not c['decided'] for c in record['claims'].values())} open"
             + (f"; {so_far[0]} of {so_far[1]} claims tested decided so far" if so_far else ""))
    settle_record.save(runs_dir, record)
    if not looked:
        # nothing measured or judged since the first rounds' analysis: it stands (and the paper has no looks' paragraph)
        _say("no look was made: the first rounds' analysis stands, not run again"
             + (f"; stopped at {record['stopped']}" if record["stopped"] else ""))
        return 0
    carried = sorted({c["study"] for c in record["claims"].values()})
    status = reproduce(configfile, ["--forcerun", *[f"results/tables/{n}-summary.json" for n in carried]],
                       studies=studies)
    settled = sum(c["decided"] for c in record["claims"].values())
    added = sum(v - record["first_reps"][k.split("/", 1)[0]] for k, v in record["points"].items())
    so_far = settle_record.decided_so_far(root / "results", runs_dir)
    _say(f"{settled} of {len(record['claims'])} claims decided, {added} runs added, "
         f"{(time.monotonic() - started) / 60:.1f} min" + (f"; stopped at {record['stopped']}" if record["stopped"] else "")
         + (f"; in all {so_far[0]} of {so_far[1]} claims tested decided" if so_far else ""))
    return status


def _open_studies(names: list[str]) -> list[str]:
    """The studies whose first rounds left a claim open: the only ones a look measures and
    whose analysis :func:`main` runs again at the end."""
    return [n for n in names
            if any(e.get("verdict") in OPEN for e in _summary(Path("results"), n).get("verdicts", []))]


def budgeted(configfile: str, studies: list[str] | None = None) -> int:
    """`make reproduce` with the config's `budget_minutes`: the first rounds every
    point needs (the config's repetitions) and their analysis, then the looks of
    :func:`main` with what is left of the budget after the paper's estimated
    analysis, then the paper. Once the budget's looks were made (the record says
    so) it is the workflow as it stands: nothing to do when nothing changed, one
    run measured again when one raw run was deleted."""
    started = time.monotonic()
    config = _load(configfile, studies)
    runs_dir = Path.cwd().resolve() / "data" / "runs" / (config.get("host") or hostname())
    record = settle_record.load(runs_dir, config)
    if record is not None and record.get("budget_spent"):
        return reproduce(configfile, [], studies=studies)
    minutes = float(config["budget_minutes"])
    names = [n for n in plan.studies(config) if (Path("notebooks") / f"{n}.ipynb").is_file()]
    _say(f"time budget {minutes:g} min: first the rounds every point needs "
         f"({', '.join(sorted({str(plan.repetitions_of(config, n)) for n in names}))} a point), then rounds of the "
         "points of claims still open, cheapest to decide first, while the budget lasts")
    status = reproduce(configfile, [f"results/tables/{n}-summary.json" for n in names], studies=studies)
    if status != 0:
        return status
    if so_far := settle_record.decided_so_far("results", runs_dir):
        _say(f"the first rounds decided {so_far[0]} of {so_far[1]} claims tested")
    # kept for the paper: the analysis again of each study a look may measure (those with an open
    # claim: main reruns only theirs) and the paper itself
    left = minutes - (time.monotonic() - started) / 60.0 - tail_seconds(Path("results"), _open_studies(names)) / 60.0
    status = main(configfile, left, studies=studies, budget=True)
    if status != 0:
        return status
    # the paper (and anything main left unmade when nothing was open)
    return reproduce(configfile, [], studies=studies)
