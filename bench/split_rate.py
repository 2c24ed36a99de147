"""How often two runs of one commit split a claim near a line of the rule, by the runs a side.

A claim's answer flips where the low end of its interval crosses a line (1, or the band's near edge).
Two quick runs split a claim whose true ratio lies near such a line about as often as a coin; how near
is "near" is the interval's reach, which the runs a side set. This simulates it: each side's log rates
normal with `sigma` a run, the true log ratio uniform within `reach` of the line, two independent runs
of the design, and the exact unpaired interval of the shift the verdicts use at 95 % (Hodges-Lehmann
with Mann-Whitney bounds: the k-th smallest of the n x n differences, boatload.analysis.intervals'
mann_whitney_rank).

    python bench/split_rate.py [--sigma 0.10] [--reach 0.6] [--sequences 20000] [--seed 1]
"""

from __future__ import annotations

import argparse

import numpy as np

from boatload.analysis.intervals import mann_whitney_rank

RUNS = (4, 5, 6, 8)


def lower_rank(n: int, level: float = 0.95) -> tuple[int, float]:
    """(k, coverage): the verdicts' interval [d(k), d(n*n + 1 - k)] of n + n runs at `level`."""
    got = mann_whitney_rank(n, n, level)
    if got is None:
        raise ValueError(f"{n} + {n} runs allow no interval at {level}")
    return got


def split_rate(n: int, sigma: float, reach: float, sequences: int, rng: np.random.Generator) -> float:
    """The share of claims, placed uniformly within `reach` of a line, that two runs answer differently."""
    k, _ = lower_rank(n)
    dist = rng.uniform(0.0, reach, sequences)

    def above() -> np.ndarray:
        a = rng.normal(dist[:, None], sigma, (sequences, n))
        b = rng.normal(0.0, sigma, (sequences, n))
        d = np.sort((a[:, :, None] - b[:, None, :]).reshape(sequences, -1), axis=1)
        return d[:, k - 1] > 0.0

    return float((above() != above()).mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sigma", type=float, default=0.10, help="spread of a run's log rate (0.10: about 10 %%)")
    ap.add_argument("--reach", type=float, default=0.6, help="claims' true log ratios uniform within this of the line")
    ap.add_argument("--sequences", type=int, default=20000, help="simulated pairs of runs per design")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"sigma {args.sigma:g} a run, true log ratios uniform within {args.reach:g} of a line, "
          f"{args.sequences} pairs of runs each")
    for n in RUNS:
        k, coverage = lower_rank(n)
        rate = split_rate(n, args.sigma, args.reach, args.sequences, rng)
        print(f"{n} + {n} runs: interval d({k})-d({n * n + 1 - k}) of {n * n}, {100 * coverage:.1f} %: "
              f"two runs split {100 * rate:.1f} % of those claims")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
