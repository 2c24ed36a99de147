"""Are the known answers wrong no more often than the rule's level allows, over many quick runs?
The calibration study's claims (boatload.studies.calibration: null pairs whose true ratio is 1, a
modelled effect whose ratio the model predicts) pooled over the runs of several clones.

    uv run python bench/known_answers.py CLONE [CLONE ...] [--permutations 20000] [--seed 1]

Per known-answer claim, from CLONE/results/tables/calibration-summary.json: the runs that answered it
right, left it open and answered it wrong, and the most the level allows: a wrong answer needs the
interval to miss the truth, which an interval at level L does at most 1 - L of the time (the equivalence
test's interval too). With it, the chance of at least as many wrong answers were every run's rate at
that bound (an exact binomial tail; over all claims, the claims taken as independent), and the exact
95 % upper bound of the claim's wrong rate (Clopper-Pearson).

Per null pair, from the raw results CLONE/data/runs/<host>/calibration/<target>/<point>/rep<N>.json:
each run's mean log ratio over its rounds (a over b, paired by round) and its standard error, the
mean over all runs, and a permutation test of whether the runs differ by more than their rounds do
(one-way F of the rounds' log ratios grouped by run, against the same rounds shuffled between runs).
A run-to-run shift one run's rounds cannot see would make each run's interval miss the truth more
often than its level says; a shift every run shares (the same run order: one seed for all quick
runs) shows as a mean over the runs away from 0.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from fragility import at_least  # bench/ is this script's first sys.path entry
from quickrun import KNOWN, summaries

NULL_TRUTH = "1"  # a null pair's known truth in the calibration's claims


def binomial_tail(wrong: int, runs: int, rate: float) -> float:
    """P(at least `wrong` of `runs`) when each is wrong with chance `rate`: fragility's Poisson-binomial
    tail at one rate."""
    return at_least([rate] * runs, wrong)


def upper_bound(wrong: int, runs: int, confidence: float = 0.95) -> float:
    """The exact (Clopper-Pearson) one-sided upper confidence bound of a rate seen `wrong` of `runs` times."""
    if wrong >= runs:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(60):  # bisection: the tail P(X <= wrong) falls as the rate rises
        mid = (low + high) / 2
        below = 1.0 - binomial_tail(wrong + 1, runs, mid)
        low, high = (mid, high) if below > 1.0 - confidence else (low, mid)
    return high


def tally(clones: list[Path]) -> list[dict]:
    """Per known-answer claim: runs, right, open, wrong and the wrong rate its level allows (1 - level)."""
    rows: dict[str, dict] = {}
    for clone in clones:
        entries = summaries(clone).get(KNOWN)
        if entries is None:
            raise SystemExit(f"{clone}: no results/tables/{KNOWN}-summary.json (not a clone after a quick run?)")
        for v in entries:
            row = rows.setdefault(v["claim"], {"claim": v["claim"], "runs": 0, "right": 0, "open": 0, "wrong": 0,
                                               "allowed": 0.0})
            row["runs"] += 1
            row[v.get("answer") or "open"] += 1
            row["allowed"] = max(row["allowed"], 1.0 - v["level"])
    for row in rows.values():
        row["tail"] = binomial_tail(row["wrong"], row["runs"], row["allowed"])
        row["upper"] = upper_bound(row["wrong"], row["runs"])
    return list(rows.values())


def null_pairs(clone: Path) -> dict[tuple[str, str, str], list[float]]:
    """(target, numerator, denominator) -> the log ratios of the rounds both points measured, per null pair."""
    out = {}
    for v in summaries(clone).get(KNOWN) or []:
        if str(v.get("truth")) != NULL_TRUTH:
            continue
        key = (v["target"], v["numerator"], v["denominator"])
        if key in out:  # the claim of no difference and the effect claim share one pair
            continue
        rates = [_rates(clone, v["target"], point) for point in key[1:]]
        out[key] = [math.log(rates[0][r] / rates[1][r]) for r in sorted(set(rates[0]) & set(rates[1]))]
    return out


def _rates(clone: Path, target: str, point: str) -> dict[int, float]:
    """{round: rate} of one point's good runs, over every host's raw results."""
    out = {}
    for raw in clone.glob(f"data/runs/*/{KNOWN}/{target}/{point}/rep*.json"):
        result = json.loads(raw.read_text()).get("result") or {}
        if result.get("status") == "ok" and result.get("rate"):
            out[int(raw.stem.removeprefix("rep"))] = float(result["rate"])
    return out


def f_statistic(groups: list[list[float]]) -> float:
    """One-way F: the variance between the groups' means over the variance within them."""
    values, means = [x for g in groups for x in g], [statistics.fmean(g) for g in groups]
    grand = statistics.fmean(values)
    between = sum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means)) / (len(groups) - 1)
    within = sum((x - m) ** 2 for g, m in zip(groups, means) for x in g) / (len(values) - len(groups))
    return between / within if within > 0 else math.inf


def between_runs(groups: list[list[float]], permutations: int, seed: int) -> dict:
    """The runs' log ratios (a list per run): the F statistic and its permutation p-value."""
    groups = [g for g in groups if len(g) >= 2]
    if len(groups) < 2:
        return {"f": None, "p": None}
    observed = f_statistic(groups)
    pooled, rng = [x for g in groups for x in g], random.Random(seed)
    bounds = [(sum(len(g) for g in groups[:i]), len(g)) for i, g in enumerate(groups)]
    as_large = 0
    for _ in range(permutations):
        rng.shuffle(pooled)
        as_large += f_statistic([pooled[start:start + n] for start, n in bounds]) >= observed
    return {"f": observed, "p": (as_large + 1) / (permutations + 1)}


def pair_rows(clones: list[Path], permutations: int, seed: int) -> list[dict]:
    per_pair: dict[tuple, list[list[float]]] = defaultdict(list)
    for clone in clones:
        for key, logs in null_pairs(clone).items():
            per_pair[key].append(logs)
    rows = []
    for key, groups in per_pair.items():
        pooled = [x for g in groups for x in g]
        if len(pooled) < 2:
            rows.append({"pair": key, "rounds": len(pooled)})
            continue
        sd = statistics.stdev(pooled)
        rows.append({"pair": key, "runs": [(statistics.fmean(g), statistics.stdev(g) / math.sqrt(len(g)), len(g))
                                           for g in groups if len(g) >= 2],
                     "mean": statistics.fmean(pooled), "se": sd / math.sqrt(len(pooled)), "rounds": len(pooled),
                     **between_runs(groups, permutations, seed)})
    return rows


def report(clones: list[Path], permutations: int, seed: int) -> str:
    rows = tally(clones)
    lines = [f"known answers over {len(clones)} runs: right / open / wrong, the wrong rate the level allows, "
             "P(at least as many wrong at that rate), the wrong rate's 95 % upper bound"]
    for r in rows:
        lines.append(f"  {r['right']:3d} / {r['open']:3d} / {r['wrong']:3d} of {r['runs']:3d}, allowed "
                     f"{r['allowed']:.1%}, P {r['tail']:.2f}, upper {r['upper']:.1%}: {r['claim']}")
    allowed = [r["allowed"] for r in rows for _ in range(r["runs"])]
    wrong = sum(r["wrong"] for r in rows)
    lines.append(f"all: {wrong} wrong of {len(allowed)} answers; at most {sum(allowed):.1f} expected at the levels; "
                 f"P(at least {wrong}) = {at_least(allowed, wrong):.2f}")
    for p in pair_rows(clones, permutations, seed):
        target, num, den = p["pair"]
        if "mean" not in p:
            lines.append(f"null pair {target} {num} / {den}: {p['rounds']} rounds in the raw results (data/runs)")
            continue
        runs = ", ".join(f"{100 * m:+.1f} ± {100 * se:.1f}" for m, se, _ in p["runs"])
        between = ("-" if p["f"] is None else f"F {p['f']:.2f}, permutation p {p['p']:.3f}")
        lines.append(f"null pair {target} {num} / {den}: log ratio per run, % ({runs}); over all "
                     f"{p['rounds']} rounds {100 * p['mean']:+.2f} ± {100 * p['se']:.2f} %; between runs: {between}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clones", type=Path, nargs="+", help="clones after a quick run (their results/ and data/)")
    parser.add_argument("--permutations", type=int, default=20000, help="shuffles of the between-runs test")
    parser.add_argument("--seed", type=int, default=1, help="the shuffles' seed")
    args = parser.parse_args(argv)
    if args.permutations < 1:
        parser.error(f"--permutations: {args.permutations} (at least 1)")
    for clone in args.clones:
        if not (clone / "results" / "tables").is_dir():
            parser.error(f"{clone}: not a clone after a quick run (no results/tables/)")
    print(report(args.clones, args.permutations, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
