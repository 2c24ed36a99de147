"""Coverage and width of a claim's interval when its points are measured in
rounds, paired (Wilcoxon signed-rank over the rounds' log ratios) and
unpaired (Mann-Whitney over all runs), without and with a drift across the
run (boatload.analysis.intervals.simulated_round_coverage).

    uv run python bench/paired_coverage.py [--draws 4000] [--rounds 4 6 8 12] [--drift 0 0.2] [--log-sd 0.05 0.1 0.3]

Prints one table row per (spread, drift, rounds): the coverage of each
interval at the level (a paired one needs at least 6 rounds for 95 %) and
its median width, high end over low end.
"""

from __future__ import annotations

import argparse

from boatload.analysis.intervals import simulated_round_coverage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--rounds", type=int, nargs="+", default=[4, 6, 8, 12])
    ap.add_argument("--drift", type=float, nargs="+", default=[0.0, 0.2])
    ap.add_argument("--log-sd", type=float, nargs="+", default=[0.05, 0.1, 0.3])
    ap.add_argument("--level", type=float, default=0.95)
    args = ap.parse_args()
    print(f"level {args.level:g}, {args.draws} draws a row, true ratio 1.7, 20 points a round")
    print("| log sd | drift | rounds | paired coverage | unpaired coverage | paired width | unpaired width |")
    print("|---|---|---|---|---|---|---|")
    fmt = (lambda x, spec: "-" if x is None else format(x, spec))
    for sd in args.log_sd:
        for drift in args.drift:
            for rounds in args.rounds:
                r = simulated_round_coverage(rounds, args.level, drift, args.draws, log_sd=sd)
                print(f"| {sd:g} | {drift * 100:g} % | {rounds} | {fmt(r['paired'], '.3f')} | "
                      f"{fmt(r['unpaired'], '.3f')} | {fmt(r['paired_width'], '.3f')} | "
                      f"{fmt(r['unpaired_width'], '.3f')} |")


if __name__ == "__main__":
    main()
