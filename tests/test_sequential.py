"""The settle design's alpha spending: each look's level, and the rate of false
claims it keeps over all looks under the null, by simulation with lognormal runs."""

import math

import numpy as np
import pytest

from boatload.analysis.intervals import paired_ratio_interval, ratio_interval
from boatload.analysis.sequential import Design, obrien_fleming_spent
from boatload.analysis.verdict import EQUIVALENT, Rule, no_difference

SEQUENCES = 2000


def test_spending_is_alpha_at_the_end_and_rises_from_almost_nothing():
    assert obrien_fleming_spent(1.0, 0.05) == pytest.approx(0.05, abs=1e-12)
    # the textbook values of the O'Brien-Fleming-type function at t = 1/4 and 1/2
    assert obrien_fleming_spent(0.25, 0.05) == pytest.approx(8.9e-5, rel=0.02)
    assert obrien_fleming_spent(0.5, 0.05) == pytest.approx(0.00557, rel=0.01)
    design = Design.planned(0.05, first_runs=4, max_runs=16, looks=4)
    assert design.schedule == (4, 8, 12, 16)
    spent = design.spent()
    assert sum(spent) == pytest.approx(0.05, abs=1e-12)
    assert all(b > a > 0 for a, b in zip(spent, spent[1:]))  # the first look's share counts, and is the least
    assert design.levels()[0] > 0.9999 and design.levels()[-1] < 0.975


def test_a_design_that_cannot_hold_its_looks_is_refused():
    with pytest.raises(ValueError, match="settle.max_runs"):
        Design.planned(0.05, first_runs=4, max_runs=5, looks=4)
    with pytest.raises(ValueError, match="settle.looks"):
        Design.planned(0.05, first_runs=4, max_runs=16, looks=1)


def _false_claims(design_levels, schedule, rng, true_ratio=1.0, sd=0.5, judge=None) -> float:
    """The share of SEQUENCES sequences of lognormal runs (equal sides) in which
    some look makes the false claim `judge` names, stopping at the first."""
    hits = 0
    for _ in range(SEQUENCES):
        a = true_ratio * rng.lognormal(0.0, sd, schedule[-1])
        b = rng.lognormal(0.0, sd, schedule[-1])
        for n, level in zip(schedule, design_levels):
            if judge(a[:n], b[:n], level):
                hits += 1
                break
    return hits / SEQUENCES


def _excludes_one(a, b, level) -> bool:
    r = ratio_interval(a, b, level)
    return r.low is not None and (r.low > 1.0 or r.high < 1.0)


def _equivalent(a, b, level) -> bool:
    return no_difference("c", None, a, b, Rule(equivalence_margin=1.1, level=level))["verdict"] == EQUIVALENT


def _limit(alpha: float) -> float:
    # alpha plus 2.5 binomial standard errors of SEQUENCES draws
    return alpha + 2.5 * math.sqrt(alpha * (1 - alpha) / SEQUENCES)


# the quick config's default design (4 to 8 repetitions in 3 looks), and longer ones
@pytest.mark.parametrize("first, last, looks", [(4, 8, 3), (4, 16, 4), (3, 12, 4)])
def test_no_effect_is_claimed_more_often_than_alpha_over_all_looks(first, last, looks):
    design = Design.planned(0.05, first, last, looks=looks)
    rate = _false_claims(design.levels(), design.schedule, np.random.default_rng(first), judge=_excludes_one)
    assert rate <= _limit(0.05), (design.text(), rate)
    # the same looks each at 95 %: the inflation the spending prevents
    naive = _false_claims([0.95] * looks, design.schedule, np.random.default_rng(first), judge=_excludes_one)
    assert naive > _limit(0.05), naive


def test_equivalence_is_not_claimed_more_often_than_alpha_at_the_margin():
    design = Design.planned(0.05, 4, 16, looks=4)
    rate = _false_claims(design.levels(), design.schedule, np.random.default_rng(7), true_ratio=1.1, sd=0.05,
                         judge=_equivalent)
    assert rate <= _limit(0.05), rate


def test_a_first_look_that_spent_its_intervals_tail_leaves_the_rest_to_the_later_looks():
    # the workflow's analysis of 4 + 4 runs: its 95 % interval is the whole range, a tail share of 2/70
    design = Design.planned(0.05, 4, 8, 2, first_alpha=2 / 70)
    assert design.spent()[0] == pytest.approx(2 / 70) and sum(design.spent()) == pytest.approx(0.05)
    assert design.levels() == pytest.approx([1 - 2 / 70, 1 - (0.05 - 2 / 70)])
    three = Design.planned(0.05, 4, 12, 3, first_alpha=2 / 70)
    assert sum(three.spent()) == pytest.approx(0.05) and all(a > 0 for a in three.spent())
    with pytest.raises(ValueError, match="first look's alpha"):
        Design(0.05, (4, 8), 0.05)


def _paired_excludes_one(a, b, level) -> bool:
    r = paired_ratio_interval(a, b, level)
    return r.low is not None and (r.low > 1.0 or r.high < 1.0)


def test_a_paired_first_look_and_the_look_its_tail_leaves_claim_no_effect_more_often_than_alpha():
    # the degradation study's design: six paired rounds analysed at 95 % (the signed-rank interval's
    # tail 1/32), then a look at 8 pairs at what is left; the runs of a round share a drift
    design = Design.planned(0.05, 6, 8, 2, first_alpha=1 / 32)
    rng = np.random.default_rng(11)
    hits = naive = 0
    for _ in range(SEQUENCES):
        drift = np.linspace(0.0, 0.2, 8)
        a, b = np.exp(drift + rng.normal(0, 0.1, 8)), np.exp(drift + rng.normal(0, 0.1, 8))
        hits += any(_paired_excludes_one(a[:n], b[:n], lvl) for n, lvl in zip(design.schedule, design.levels()))
        naive += any(_paired_excludes_one(a[:n], b[:n], 0.95) for n in design.schedule)
    assert design.levels()[-1] == pytest.approx(1 - (0.05 - 1 / 32))
    assert hits / SEQUENCES <= _limit(0.05), hits / SEQUENCES
    # both looks at 95 %: more false claims than at the first alone
    assert naive > hits, (naive, hits)
