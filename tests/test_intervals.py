"""The ratio interval of boatload.analysis.intervals holds its level at the studies' run
counts; the percentile bootstrap of a median it replaced does not at 3 runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from boatload.analysis.intervals import (
    mann_whitney_rank,
    median_interval,
    ratio_interval,
    runs_for_interval,
    runs_to_settle,
    simulated_coverage,
)
from boatload.base.paths import repo_root
from boatload.analysis.stats import bootstrap_ratio_ci

DRAWS = 2000
LEVEL = 0.95
TRUE_RATIO = 1.7
SIGMA = 0.6  # log-scale spread: a right-skewed sample of rates


def study_run_counts() -> set[tuple[int, int]]:
    """Runs per side of a claim's two samples in every shipped config: each
    study's repetitions (the degradation study's claims rest on each
    repetition's median run, not on the runs within one)."""
    counts = set()
    for name in ("config.yaml", "full.yaml"):
        cfg = yaml.safe_load((repo_root() / "config" / name).read_text())
        for entry in cfg["studies"].values():
            reps = (entry or {}).get("repetitions", cfg["repetitions"])
            counts.add((reps, reps))
    return counts


SIDES = sorted(study_run_counts() | {(3, 3), (3, 5), (4, 4), (5, 5), (4, 7), (6, 6), (8, 8), (10, 10), (12, 12), (15, 15), (5, 15)})


@pytest.mark.parametrize(("m", "n"), SIDES)
def test_interval_covers_the_true_ratio_at_the_studies_run_counts(m, n):
    rank = mann_whitney_rank(m, n, LEVEL)
    got = simulated_coverage(m, n, LEVEL, DRAWS, TRUE_RATIO, SIGMA, seed=1000 * m + n)
    if rank is None:
        # no interval at 95 % exists with these runs: none is shown (too few runs)
        assert got is None
        assert ratio_interval([1.0] * m, [2.0] * n, LEVEL).low is None
        return
    assert got >= 0.93, f"{m} vs {n} runs: {got:.1%} of {DRAWS} intervals hold the true ratio"
    # the exact coverage it states, within the binomial noise of DRAWS draws
    assert abs(got - rank[1]) < 4 * math.sqrt(rank[1] * (1 - rank[1]) / DRAWS)


def test_the_bootstrap_of_a_median_of_three_falls_short():
    """The method the verdicts used before: a percentile bootstrap of the ratio
    of medians of 3 runs each, called 95 %."""
    rng = np.random.default_rng(3)
    hits = 0
    for i in range(DRAWS):
        a = TRUE_RATIO * rng.lognormal(8.0, SIGMA, 3)
        b = rng.lognormal(8.0, SIGMA, 3)
        _, low, high = bootstrap_ratio_ci(a, b, "median", 1000, LEVEL, i)
        hits += low <= TRUE_RATIO <= high
    assert hits / DRAWS < 0.93, f"bootstrap of medians of 3: {hits / DRAWS:.1%}"


def test_three_runs_per_side_allow_90_percent_and_no_more():
    assert mann_whitney_rank(3, 3, 0.95) is None
    assert mann_whitney_rank(3, 3, 0.90) == (1, pytest.approx(0.9))
    assert mann_whitney_rank(3, 4, 0.95) is None  # 1 - 2/35 = 94.3 %
    assert mann_whitney_rank(4, 4, 0.95) == (1, pytest.approx(1 - 2 / 70))
    assert runs_for_interval(0.95) == 4
    # published critical values of U (two-sided 5 %): 2 at 5 vs 5, 64 at 15 vs 15
    assert mann_whitney_rank(5, 5, 0.95)[0] == 3
    assert mann_whitney_rank(15, 15, 0.95)[0] == 65


def test_interval_and_point_follow_the_data():
    a, b = [10.0, 11.0, 12.0, 10.5], [20.0, 21.0, 22.0, 19.0]
    r = ratio_interval(a, b)
    assert r.low < r.ratio < r.high < 1
    assert r.low == pytest.approx(10.0 / 22.0) and r.high == pytest.approx(12.0 / 19.0)
    assert r.runs == (4, 4) and r.coverage == pytest.approx(1 - 2 / 70)
    # the ratio of b over a is the reciprocal
    s = ratio_interval(b, a)
    assert s.ratio == pytest.approx(1 / r.ratio) and s.low == pytest.approx(1 / r.high)
    with pytest.raises(ValueError, match="strictly positive"):
        ratio_interval([1.0, 0.0], b)


def test_runs_to_settle_grows_as_the_effect_shrinks():
    small, large = runs_to_settle(1.02, 0.05, LEVEL), runs_to_settle(1.10, 0.05, LEVEL)
    assert small > large >= runs_for_interval(LEVEL)
    # 2 (1.96 + 0.84)^2 0.05^2 / log(1.02)^2 / (3/pi) = 104.3
    assert small == 105
    assert runs_to_settle(1.0, 0.05, LEVEL) is None
    assert runs_to_settle(1.05, None, LEVEL) is None


@pytest.mark.parametrize(("ratio", "sd"), [(1.1, 0.1), (0.8, 0.3)])
def test_runs_to_settle_give_the_power_they_state(ratio, sd):
    """At the runs per side runs_to_settle names, the interval excludes 1 in
    about 80 % of draws of lognormal runs with that ratio and spread."""
    n = runs_to_settle(ratio, sd, LEVEL)
    rng = np.random.default_rng(11)
    draws = 1000
    settled = 0
    for _ in range(draws):
        r = ratio_interval(ratio * rng.lognormal(0.0, sd, n), rng.lognormal(0.0, sd, n), LEVEL)
        settled += not (r.low <= 1.0 <= r.high)
    assert 0.74 <= settled / draws <= 0.92, f"{n} runs per side: {settled / draws:.1%} settled"


@pytest.mark.parametrize("n", [3, 4, 5, 6, 10, 15, 20])
def test_median_interval_states_the_coverage_it_has(n):
    """A point's band: at 6 runs or more the exact interval of the median holds
    95 %; below, the range of the runs holds the true median only as often as
    it says (75 % at 3 runs), and never claims 95 %."""
    rng = np.random.default_rng(n)
    true_median = math.exp(8.0)  # of lognormal(8, sigma)
    hits, stated = 0, None
    for _ in range(DRAWS):
        _, low, high, stated = median_interval(rng.lognormal(8.0, SIGMA, n), LEVEL)
        hits += low <= true_median <= high
    assert (stated >= LEVEL) == (n >= 6)
    assert abs(hits / DRAWS - stated) < 4 * math.sqrt(stated * (1 - stated) / DRAWS), (n, hits / DRAWS, stated)
