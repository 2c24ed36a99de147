"""How likely is a second run of the same design to answer each claim differently, and how many
claims does a run decide? A forecast from the intervals of one quick run or several (issue #38: a
quick run should decide 90 % of the claims it tests, and two runs of one commit give the same answer
to 95 %).

For every claim tested in RESULTS/tables/<study>-summary.json with an interval, the run-to-run spread
of its log ratio is inferred from the interval's width and design: the exact interval the verdicts use
(boatload.analysis.intervals: Mann-Whitney for n + n runs, signed-rank for n pairs) is simulated for
normal log rates of spread 1 at that design, and the claim's spread is its half-width over the
simulated median half-width. Then runs of a design are simulated with the claim's ratio as the
truth (the plug-in: a claim measured near a line is forecast to split often) and the rule's own
decision (verdict.decide, decide_equivalence, ANSWERS, at the rule's default band factor and margin,
the configs' own): the forecast split is the share of pairs of independent runs whose answers differ,
the chance to decide the share of runs that answer (not "open"). Over the claims tested outside the
calibration's known answers, as bench/quickrun.py counts them: the expected number decided and the
chance that a run decides at least 90 % (the claims taken as independent). With several RESULTS (runs
of the same measurements) a claim's truth is the mean of their intervals' midpoints (log scale), its
spread the median of theirs and its design (runs, pairs, level: a look may have added runs) the
first's. `--rounds N` forecasts the same at N rounds (N + N runs, or N pairs where the claim was
paired) for comparison.

    uv run python bench/fragility.py RESULTS [RESULTS ...] [--rounds 8] [--draws 2000] [--seed 1]

A forecast, not a measurement: the spread is estimated from a run's interval (at 4 + 4 runs a rough
one), and the truth is taken to be where the runs found it. With two RESULTS or
more it prints that check beside the forecast: each claim's share of their pairs that answer it
differently (`bench/verdicts.py`'s over_pairs), and their mean agreement. The forecast takes each claim
at the first run's design and the median spread; the runs do not. A claim left open by the first rounds
in some runs goes to the look, which may decide it, so the claim splits less often than forecast. A claim
whose spread changes from run to run splits more often.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

import numpy as np

from boatload.analysis.intervals import paired_ratio_interval, ratio_interval
from boatload.analysis.verdict import ANSWERS, UNTESTABLE, Rule, decide, decide_equivalence

import verdicts  # bench/ is this script's first sys.path entry
from quickrun import KNOWN  # the known answers: in the agreement, not among the claims a run should decide

RULE = Rule()
GOAL = 0.9  # of the claims tested decided (#38)


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


def answer_shares(entry: dict, design: tuple[str, int, int], shift: float, sd: float, draws: int,
                  rng) -> dict[str, float]:
    """{answer ("open" among them): the share of simulated runs of `design` that give it}."""
    level = entry["level"]
    counts: dict[str, int] = defaultdict(int)
    for _ in range(draws):
        r = _interval(design[0], design[1], design[2], shift, sd, level, rng)
        if r.low is not None:
            counts[answer(entry, r.low, r.high)] += 1
    total = sum(counts.values())
    return {a: c / total for a, c in counts.items()} if total else {}


def split_of(shares: dict[str, float]) -> float:
    """The share of two independent runs whose answers differ."""
    return 1.0 - sum(p * p for p in shares.values()) if shares else 0.0


def decided_of(shares: dict[str, float]) -> float:
    return 1.0 - shares.get("open", 0.0) if shares else 0.0


def claims(results: list[Path]) -> dict[tuple[str, str], list[dict]]:
    """(study, claim) -> its entries with an interval, one a RESULTS directory, in their order."""
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for one in results:
        for key, entry in verdicts.claims(one).items():
            if entry["verdict"] not in UNTESTABLE and entry.get("ours_low") is not None \
                    and entry.get("ours_high") is not None:
                out[key].append(entry)
    return out


def truth_and_spread(entries: list[dict]) -> tuple[float, float]:
    """The mean of the entries' interval midpoints and the median of their spreads (log scale)."""
    shifts, sds = [], []
    for entry in entries:
        lo, hi = math.log(entry["ours_low"]), math.log(entry["ours_high"])
        shifts.append((lo + hi) / 2)
        sds.append((hi - lo) / 2 / unit_half_width(design_of(entry), entry["level"]))
    return statistics.fmean(shifts), statistics.median(sds)


def forecast(results: list[Path], rounds: int | None, draws: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for (study, claim), entries in claims(results).items():
        entry = entries[0]
        design = design_of(entry)
        shift, sd = truth_and_spread(entries)
        shares = answer_shares(entry, design, shift, sd, draws, rng)
        row = {"study": study, "claim": claim, "verdict": entry["verdict"], "design": design, "log_sd": sd,
               "split": split_of(shares), "decided": decided_of(shares), "runs": len(entries)}
        if rounds:
            more = answer_shares(entry, (design[0], rounds, rounds), shift, sd, draws, rng)
            row["split_at"], row["decided_at"] = split_of(more), decided_of(more)
        rows.append(row)
    return rows


def at_least(probabilities: list[float], count: int) -> float:
    """The chance that at least `count` of independent events of these probabilities happen."""
    if count <= 0:
        return 1.0  # exactly: the distribution's whole sum carries rounding
    dist = [1.0]
    for p in probabilities:
        dist = [a * (1.0 - p) + b * p for a, b in zip(dist + [0.0], [0.0] + dist)]
    return sum(dist[max(count, 0):])


def decided_line(rows: list[dict], key: str, where: str) -> str:
    chances = [r[key] for r in rows if r["study"] != KNOWN]
    if not chances:
        return f"decided{where}: no claim tested outside the known answers"
    expected, need = sum(chances), math.ceil(GOAL * len(chances))
    return (f"decided{where}: {expected:.1f} of {len(chances)} claims tested outside the known answers expected "
            f"({expected / len(chances):.1%}); P(at least {need}, {GOAL:.0%}) = {at_least(chances, need):.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="+", help="results directories of runs of the same measurements")
    ap.add_argument("--rounds", type=int, help="also forecast every claim at this many rounds")
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    for one in args.results:
        if not (one / "tables").is_dir():
            ap.error(f"{one}: no tables/ (a results directory of `make reproduce`)")
    if args.draws < 1:
        ap.error(f"--draws: at least 1, not {args.draws}")
    if args.rounds is not None and args.rounds < 2:
        ap.error(f"--rounds: at least 2, not {args.rounds}")
    rows = forecast(args.results, args.rounds, args.draws, args.seed)
    if not rows:
        raise SystemExit(f"{' '.join(map(str, args.results))}: no claim with an interval")
    rows.sort(key=lambda r: -r["split"])
    seen = verdicts.over_pairs([verdicts.claims(one) for one in args.results]) if len(args.results) > 1 else None
    for r in rows:
        at = f"  at {args.rounds} rounds {r['split_at']:5.1%}" if args.rounds else ""
        seen_here = f"  seen {seen['splits'].get((r['study'], r['claim']), 0.0):5.1%}" if seen else ""
        kind, m, n = r["design"]
        print(f"{r['split']:6.1%}{at}{seen_here}  sd {r['log_sd']:.3f}  {kind} {m}+{n}  {r['study']}: {r['claim']} "
              f"[{r['verdict']}]")
    expected = 1.0 - sum(r["split"] for r in rows) / len(rows)
    print(f"forecast: two runs of this design give the same answer to {expected:.1%} of {len(rows)} claims "
          f"with an interval (expected splits {sum(r['split'] for r in rows):.1f})")
    if seen:
        shares = seen["shares"]
        print(f"seen over the {seen['pairs']} pairs of the {seen['runs']} runs: {statistics.fmean(shares):.1%} of the "
              f"claims tested the same answer (pairs {min(shares):.1%}-{max(shares):.1%}; splits "
              f"{sum(seen['splits'].values()):.1f} a pair)")
    if args.rounds:
        expected_at = 1.0 - sum(r["split_at"] for r in rows) / len(rows)
        print(f"forecast at {args.rounds} rounds for every claim: {expected_at:.1%} "
              f"(expected splits {sum(r['split_at'] for r in rows):.1f})")
    print(decided_line(rows, "decided", ""))
    if args.rounds:
        print(decided_line(rows, "decided_at", f" at {args.rounds} rounds"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
