"""The paired (signed-rank) interval of a claim measured in rounds: its exact
distribution, the pairs it needs, and its coverage by simulation at the
rounds the quick config uses, without and with a 20 % drift across the run,
beside the unpaired interval it replaces from 6 rounds on."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from boatload.analysis.intervals import (
    PairedRatioInterval,
    mann_whitney_rank,
    pairs_for_interval,
    paired_ratio_interval,
    ratio_interval,
    round_ratio_interval,
    signed_rank_rank,
    simulated_round_coverage,
)

DRAWS = 2000
LEVEL = 0.95
# three standard errors of a coverage of 95 % over DRAWS draws
SLACK = 3 * math.sqrt(LEVEL * (1 - LEVEL) / DRAWS)


@pytest.mark.parametrize("n", [3, 6, 8])
def test_signed_rank_coverage_is_the_exact_share_of_sign_patterns(n):
    # every one of the 2^n sign patterns of ranks 1..n equally likely under symmetry
    w = [sum(r for r, s in zip(range(1, n + 1), signs) if s) for signs in itertools.product((0, 1), repeat=n)]
    for level in (0.8, 0.9, 0.95):
        got = signed_rank_rank(n, level)
        if got is None:
            assert 2 * sum(x < 1 for x in w) / 2**n > 1 - level
            continue
        k, coverage = got
        assert coverage == pytest.approx(1 - 2 * sum(x < k for x in w) / 2**n)
        assert coverage >= level - 1e-12
        assert 1 - 2 * sum(x < k + 1 for x in w) / 2**n < level  # the narrowest at the level


def test_pairs_pay_off_only_from_six_at_95_percent():
    assert [signed_rank_rank(n, LEVEL) is None for n in (4, 5, 6)] == [True, True, False]
    assert pairs_for_interval(LEVEL) == 6
    assert signed_rank_rank(6, LEVEL)[1] == pytest.approx(1 - 2 / 2**6)
    assert mann_whitney_rank(4, 4, LEVEL) is not None  # 4 + 4 unpaired runs do reach it


def test_round_interval_pairs_only_rounds_both_sides_have_and_only_when_enough():
    rng = np.random.default_rng(3)
    ours = {r: float(x) for r, x in enumerate(1.7 * rng.lognormal(0, 0.1, 8), start=1)}
    base = {r: float(x) for r, x in enumerate(rng.lognormal(0, 0.1, 6), start=1)}
    r = round_ratio_interval(ours, base, LEVEL)
    assert isinstance(r, PairedRatioInterval) and r.pairs == 6 and r.runs == (6, 6)
    direct = paired_ratio_interval([ours[k] for k in range(1, 7)], [base[k] for k in range(1, 7)], LEVEL)
    assert r == direct
    # five shared rounds: the unpaired interval of every run
    del base[6]
    r = round_ratio_interval(ours, base, LEVEL)
    assert not isinstance(r, PairedRatioInterval) and r.runs == (8, 5)
    assert r == ratio_interval(list(ours.values()), list(base.values()), LEVEL)
    # plain lists: unpaired
    assert not isinstance(round_ratio_interval(list(ours.values()), list(ours.values()), LEVEL), PairedRatioInterval)


def test_paired_interval_removes_a_shared_drift_exactly():
    # the same noise on both sides, a strong trend across rounds: the log ratios are constant
    trend = np.linspace(1.0, 3.0, 8)
    r = paired_ratio_interval(2.0 * trend, trend, LEVEL)
    assert r.ratio == pytest.approx(2.0) and r.low == pytest.approx(2.0) and r.high == pytest.approx(2.0)
    assert ratio_interval(2.0 * trend, trend, LEVEL).high / ratio_interval(2.0 * trend, trend, LEVEL).low > 1.5


@pytest.mark.parametrize("drift", [0.0, 0.2])
@pytest.mark.parametrize("rounds", [6, 8, 12])
def test_paired_interval_holds_its_level_with_and_without_drift(rounds, drift):
    got = simulated_round_coverage(rounds, LEVEL, drift, DRAWS, log_sd=0.1, seed=rounds)
    assert got["paired"] >= LEVEL - SLACK, got
    assert got["unpaired"] >= LEVEL - SLACK, got


def test_drift_widens_the_unpaired_interval_not_the_paired_one():
    calm = simulated_round_coverage(12, LEVEL, 0.0, DRAWS, log_sd=0.05, seed=5)
    drifting = simulated_round_coverage(12, LEVEL, 0.2, DRAWS, log_sd=0.05, seed=5)
    assert drifting["paired_width"] == pytest.approx(calm["paired_width"], rel=0.05)
    assert drifting["unpaired_width"] > 1.03 * calm["unpaired_width"]
    assert drifting["paired_width"] < drifting["unpaired_width"]


def test_four_rounds_give_no_paired_interval_but_the_unpaired_one_holds():
    got = simulated_round_coverage(4, LEVEL, 0.2, DRAWS, log_sd=0.1, seed=4)
    assert got["paired"] is None and got["unpaired"] >= LEVEL - SLACK
