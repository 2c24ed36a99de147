"""What one `make reproduce` measured and decided, from its clone: the table of
#38 and the counts the quick paper's sections in bench/README.md quote.

    uv run python bench/quickrun.py CLONE [CLONE ...]

Per study, from the raw results in CLONE/data/runs/<host>/ (every host there):
runs, seconds a run (each raw result's `started_at` to `finished_at`), the
share of that in timed phases (the measured phases of the run's interference
record: the worker's and a peer tool's) and
the runs redone (the interference monitor measured them again after a passing
load) and kept disturbed by a constant load; the span from the first run's start to the last run's end;
the median of the points' spread (the `cv` column of CLONE/results/tables/<study>.csv,
each point's coefficient of variation across its runs), which tells a run on a
noisy host from one on a quiet host.
From CLONE/results/tables/<study>-summary.json: the claims tested (those
verdict.claims_tested keeps), decided (verdict.DECIDED), each
word's count, the median width of the claims' intervals (high ÷ low) and the
known answers the calibration study got right. Then each claim left open (not the
known answers'): its interval, the rule's line inside it nearest its estimate (an
edge of the original's band, or an end of the margin of a claim of no difference:
a verdict needs its interval clear of every such line, while it may keep 1) and
how far the estimate lies from that line, against the interval's half-width (both
in per cent on the log scale), and the runs per side the verdict estimated would
settle it: what tells a claim left open by too few runs from one whose effect
sits on a line of the rule.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

from boatload.analysis.verdict import DECIDED, claims_tested

KNOWN = "calibration"  # the study of known answers: its claims are not the originals'


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def timed_seconds(doc: dict) -> float:
    """A raw result's timed seconds: the measured phases of its interference record (the worker's and a
    peer tool's alike). bench/overhead.py counts the same."""
    phases = (doc.get("interference") or {}).get("phases") or []
    return sum(p.get("seconds") or 0.0 for p in phases if p.get("measured", True))


def runs_table(clone: Path) -> dict:
    """{study: {runs, wall, timed, redone, constant}} and the span of the runs, over every host's raw results."""
    studies: dict[str, Counter] = defaultdict(Counter)
    first = last = None
    for raw in sorted(clone.glob("data/runs/*/*/*/*/rep*.json")):
        doc = json.loads(raw.read_text())
        if "started_at" not in doc or "finished_at" not in doc:
            continue
        start, end = _when(doc["started_at"]), _when(doc["finished_at"])
        first, last = min(first or start, start), max(last or end, end)
        row = studies[raw.parts[-4]]
        row["runs"] += 1
        row["wall"] += (end - start).total_seconds()
        row["timed"] += timed_seconds(doc)
        watched = doc.get("interference") or {}
        row["redone"] += len(watched.get("redone") or [])
        row["constant"] += watched.get("disturbance") == "constant"
    return {"studies": dict(studies), "span": (last - first).total_seconds() if first else 0.0}


def median_spread(clone: Path, study: str) -> float | None:
    """The median of the study's points' coefficients of variation (its tidy table's `cv`), or None."""
    table = clone / "results" / "tables" / f"{study}.csv"
    if not table.is_file():
        return None
    with table.open(newline="") as f:
        cvs = [float(r["cv"]) for r in csv.DictReader(f) if r.get("cv") not in (None, "", "nan", "NaN")]
    return statistics.median(cvs) if cvs else None


def summaries(clone: Path) -> dict[str, list[dict]]:
    """{study: its summary's verdict entries}, from CLONE/results/tables/<study>-summary.json."""
    return {path.name.removesuffix("-summary.json"): json.loads(path.read_text()).get("verdicts") or []
            for path in sorted((clone / "results" / "tables").glob("*-summary.json"))}


def verdicts(clone: Path) -> dict:
    """Claims tested and decided per study, the words, the median width, the known answers."""
    tested, decided, words, widths, known = Counter(), Counter(), Counter(), [], Counter()
    for study, entries in summaries(clone).items():
        if study == KNOWN:
            known.update(v.get("answer") for v in entries)
            continue
        for v in claims_tested(entries):
            tested[study] += 1
            decided[study] += v.get("verdict") in DECIDED
            words[v.get("verdict")] += 1
            if v.get("ours_low") and v.get("ours_high"):
                widths.append(v["ours_high"] / v["ours_low"])
    return {"tested": tested, "decided": decided, "words": words,
            "median_width": statistics.median(widths) if widths else None, "known": known}


def rule_lines(entry: dict) -> list[float]:
    """The lines an open claim's interval must clear to be decided: the band's edges (a claim of an
    effect), the margin's two ends (a claim of no difference)."""
    return list(entry.get("band") or entry.get("margin") or [])


def open_claims(clone: Path) -> list[dict]:
    """Each open claim's study, text, interval, the rule's line inside its interval nearest the estimate,
    the estimate's distance to it and the interval's half-width (per cent, log scale), the runs per side
    made and the runs to settle it."""
    out = []
    for study, entries in summaries(clone).items():
        if study == KNOWN:
            continue
        for v in claims_tested(entries):
            if v.get("verdict") in DECIDED or not (v.get("ours") and v.get("ours_low") and v.get("ours_high")):
                continue
            low, high, ours, lines = v["ours_low"], v["ours_high"], v["ours"], rule_lines(v)
            inside = [x for x in lines if low <= x <= high] or lines or [1.0]
            line = min(inside, key=lambda x: abs(math.log(ours / x)))
            out.append({"study": study, "claim": v["claim"], "hardware": v.get("hardware"), "ours": ours,
                        "low": low, "high": high, "line": line,
                        "distance_pct": 100 * abs(math.log(ours / line)),
                        "half_width_pct": 100 * math.log(high / low) / 2,
                        "runs": min(v.get("runs_per_side") or [0]), "runs_to_settle": v.get("runs_to_settle")})
    return out


def _open_row(c: dict) -> str:
    settle = c["runs_to_settle"] if c["runs_to_settle"] is not None else "-"
    where = f" ({c['hardware']})" if c.get("hardware") else ""
    text = c["claim"] if len(c["claim"]) <= 72 else c["claim"][:71] + "…"
    return (f"  {c['study']}: {text}{where}: {c['ours']:.3g} [{c['low']:.3g}, {c['high']:.3g}], "
            f"{c['distance_pct']:.1f} % from the line {c['line']:.3g} (half-width {c['half_width_pct']:.1f} %), "
            f"{c['runs']} runs a side, {settle} to settle")


def _runs_row(name: str, row: Counter) -> str:
    """A study's (or all studies') runs, seconds a run, timed share, wall seconds, redone and kept."""
    return (f"{name:<12} {row['runs']:>5} {row['wall'] / row['runs']:>8.2f} {100 * row['timed'] / row['wall']:>5.0f}% "
            f"{row['wall']:>7.0f} {row['redone']:>6} {row['constant']:>4}")


def report(clone: Path) -> str:
    runs, claims = runs_table(clone), verdicts(clone)
    lines = [f"{clone}",
             f"{'study':<12} {'runs':>5} {'s a run':>8} {'timed':>6} {'wall s':>7} {'redone':>6} {'kept':>4} "
             f"{'spread':>7}"]
    total = Counter()
    for study, row in sorted(runs["studies"].items()):
        total.update(row)
        spread = median_spread(clone, study)
        lines.append(_runs_row(study, row) + " " + (f"{100 * spread:>6.1f}%" if spread is not None else f"{'-':>7}"))
    if total["runs"]:
        lines.append(_runs_row("all", total) + f"   (first run's start to last run's end: {runs['span']:.0f} s)")
    tested, decided = sum(claims["tested"].values()), sum(claims["decided"].values())
    by_study = ", ".join(f"{s} {claims['decided'][s]} of {n}" for s, n in sorted(claims["tested"].items()))
    lines.append(f"decided: {decided} of {tested} claims tested"
                 + (f" ({100 * decided / tested:.0f} %)" if tested else "") + f"; {by_study}")
    lines.append("words: " + ", ".join(f"{w} {n}" for w, n in claims["words"].most_common()))
    if claims["median_width"] is not None:
        lines.append(f"median interval width (high / low): {claims['median_width']:.3f}")
    if claims["known"]:
        lines.append("known answers: " + ", ".join(f"{a} {n}" for a, n in sorted(claims["known"].items())))
    if still_open := open_claims(clone):
        lines.append("open (estimate's distance from the rule's line nearest it, the interval's half-width):")
        lines.extend(_open_row(c) for c in still_open)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clones", type=Path, nargs="+", help="a clone `make reproduce` ran in")
    args = parser.parse_args(argv)
    for clone in args.clones:
        if not (clone / "results" / "tables").is_dir() or not (clone / "data" / "runs").is_dir():
            parser.error(f"{clone}: no results/tables or data/runs: not a clone `make reproduce` ran in")
    print("\n\n".join(report(c) for c in args.clones))
    return 0


if __name__ == "__main__":
    sys.exit(main())
