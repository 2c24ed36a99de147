"""How likely is a second run of the same design to answer each claim differently? A forecast from
one quick run's intervals (issue #38: two runs of one commit should give the same answer to 95 %).

For every claim tested in RESULTS/tables/<study>-summary.json with an interval, the run-to-run spread
of its log ratio is inferred from the interval's width and design: the exact interval the verdicts use
(boatload.analysis.intervals: Mann-Whitney for n + n runs, signed-rank for n pairs) is simulated for
normal log rates of spread 1 at that design, and the claim's spread is its half-width over the
simulated median half-width. Then two independent runs of a design are simulated with the claim's
ratio as the truth (the plug-in: a claim measured near a line is forecast to split often) and the
rule's own decision (verdict.decide, decide_equivalence, ANSWERS, at the rule's default band factor and
margin, the configs' own); the forecast split is the share
of pairs of runs whose answers differ. `--rounds N` forecasts the same at N rounds (N + N runs, or
N pairs where the claim was paired) for comparison.

    uv run python bench/fragility.py RESULTS [--rounds 8] [--draws 2000] [--seed 1]

A forecast, not a measurement: the spread is one run's estimate (at 4 + 4 runs a rough one), and
the truth is taken to be where this run found it. `bench/verdicts.py` over real runs is the check.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from functools import cache
from pathlib import Path

import numpy as np

from boatload.analysis.intervals import paired_ratio_interval, ratio_interval
from boatload.analysis.verdict import ANSWERS, UNTESTABLE, Rule, decide, decide_equivalence

RULE = Rule()


@cache
def unit_half_width(design: tuple[str, int, int], level: float, draws: int = 800) -> float:
    """The median half-width (log scale) of the design's interval for normal log rates of spread 1."""
    rng = np.random.default_rng(12345)
    kind, m, n = design
    widths = []
    for _ in range(draws):
        r = _interval(kind, m, n, 0.0, 1.0, level, rng)
        if r.low is not None:
            widths.append((math.log(r.high) - math.log(r.low)) / 2)
    return float(np.median(widths))


def _interval(kind: str, m: int, n: int, shift: float, sd: float, level: float, rng):
    if kind == "paired":  # the rounds' log differences: one side carries the whole spread
        return paired_ratio_interval(np.exp(rng.normal(shift, sd, m)), np.ones(m), level)
    return ratio_interval(np.exp(rng.normal(shift, sd, m)), np.exp(rng.normal(0.0, sd, n)), level)


def answer(entry: dict, low: float, high: float) -> str:
    if entry["test"] == "no difference":
        return ANSWERS[decide_equivalence(low, high, RULE.equivalence_margin)[0]]
    return ANSWERS[decide(entry["original_ratio"], low, high, RULE.band_factor)[0]]


def design_of(entry: dict) -> tuple[str, int, int]:
    m, n = entry["runs_per_side"]
    return ("paired", entry["pairs"], entry["pairs"]) if entry.get("pairs") else ("unpaired", m, n)


def split_share(entry: dict, design: tuple[str, int, int], shift: float, sd: float, draws: int, rng) -> float:
    """The share of two independent runs of `design` whose answers differ."""
    level = entry["level"]
    answers = {}
    for _ in range(draws):
        r = _interval(design[0], design[1], design[2], shift, sd, level, rng)
        if r.low is None:
            continue
        a = answer(entry, r.low, r.high)
        answers[a] = answers.get(a, 0) + 1
    total = sum(answers.values())
    return 1.0 - sum((c / total) ** 2 for c in answers.values()) if total else 0.0


def forecast(results: Path, rounds: int | None, draws: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for path in sorted((results / "tables").glob("*-summary.json")):
        for entry in json.loads(path.read_text()).get("verdicts") or []:
            if entry["verdict"] in UNTESTABLE or entry.get("ours_low") is None or entry.get("ours_high") is None:
                continue
            lo, hi = math.log(entry["ours_low"]), math.log(entry["ours_high"])
            design = design_of(entry)
            sd = (hi - lo) / 2 / unit_half_width(design, entry["level"])
            shift = (lo + hi) / 2
            row = {"study": path.name.removesuffix("-summary.json"), "claim": entry["claim"],
                   "verdict": entry["verdict"], "design": design, "log_sd": sd,
                   "split": split_share(entry, design, shift, sd, draws, rng)}
            if rounds:
                more = (design[0], rounds, rounds)
                row["split_at"] = split_share(entry, more, shift, sd, draws, rng)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--rounds", type=int, help="also forecast every claim at this many rounds")
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rows = forecast(args.results, args.rounds, args.draws, args.seed)
    if not rows:
        raise SystemExit(f"{args.results}: no claim with an interval")
    rows.sort(key=lambda r: -r["split"])
    for r in rows:
        at = f"  at {args.rounds} rounds {r['split_at']:5.1%}" if args.rounds else ""
        kind, m, n = r["design"]
        print(f"{r['split']:6.1%}{at}  sd {r['log_sd']:.3f}  {kind} {m}+{n}  {r['study']}: {r['claim']} "
              f"[{r['verdict']}]")
    expected = 1.0 - sum(r["split"] for r in rows) / len(rows)
    print(f"forecast: two runs of this design give the same answer to {expected:.1%} of {len(rows)} claims "
          f"with an interval (expected splits {sum(r['split'] for r in rows):.1f})")
    if args.rounds:
        expected_at = 1.0 - sum(r["split_at"] for r in rows) / len(rows)
        print(f"forecast at {args.rounds} rounds for every claim: {expected_at:.1%} "
              f"(expected splits {sum(r['split_at'] for r in rows):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
