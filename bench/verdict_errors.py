"""How often each verdict word is wrong, by simulation (boatload.analysis.error_rates):
per run count and word, the worst wrong-decision rate over true ratios placed
on and past the band's edges, at 1 and at the equivalence margin, and the
share of claims decided.

    uv run python bench/verdict_errors.py [--runs 4 8] [--draws 4000] [--log-sd 0.15] [--paired]

--paired: the claims measured in rounds, each round's own factor on both
sides, decided on {round: rate} (the signed-rank interval where the rounds are
enough for the level).
"""

from __future__ import annotations

import argparse

from boatload.analysis import error_rates
from boatload.analysis.verdict import Rule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[4, 8], help="runs per side")
    parser.add_argument("--draws", type=int, default=4000, help="simulated claims per true ratio")
    parser.add_argument("--log-sd", type=float, default=0.15, help="spread of a run's log rate")
    parser.add_argument("--band-factor", type=float, default=2.0)
    parser.add_argument("--margin", type=float, default=1.1)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--paired", action="store_true", help="runs in rounds, paired (see above)")
    args = parser.parse_args()
    rule = Rule(args.band_factor, args.margin, args.level)
    cases = error_rates.sweep(rule, args.runs, draws=args.draws, log_sd=args.log_sd, paired=args.paired)
    print(error_rates.table(cases))
    for runs, share in sorted(error_rates.decided_share(cases).items()):
        print(f"{runs} runs/side: {100 * share:.1f} % of the simulated claims decided")


if __name__ == "__main__":
    main()
