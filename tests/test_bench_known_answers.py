"""bench/known_answers.py on clones made here: the known answers' tally against the rate their
level allows (exact binomial tails and bounds against their closed forms), and the null pairs'
rounds read from raw results, paired by round, with a run-to-run shift found only where one is."""

from __future__ import annotations

import json
import math
import random
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import known_answers  # noqa: E402

TARGET = "xfs-log-external"


def entry(claim, answer, level=0.95, truth="1", num="null-meta-a", den="null-meta-b"):
    return {"claim": claim, "answer": answer, "level": level, "truth": truth, "target": TARGET,
            "numerator": num, "denominator": den, "verdict": "equivalent"}


def clone_with(tmp_path, name, entries, rates=None):
    """A clone's results/tables/calibration-summary.json and raw runs: rates {point: {round: rate}}."""
    clone = tmp_path / name
    (clone / "results" / "tables").mkdir(parents=True)
    (clone / "results" / "tables" / "calibration-summary.json").write_text(json.dumps({"verdicts": entries}))
    for point, by_round in (rates or {}).items():
        where = clone / "data" / "runs" / "host" / "calibration" / TARGET / point
        where.mkdir(parents=True)
        for rnd, rate in by_round.items():
            result = {"status": "ok", "rate": rate} if rate else {"status": "error", "rate": None}
            (where / f"rep{rnd}.json").write_text(json.dumps({"result": result}))
    return clone


def test_the_binomial_tail_and_bound_are_the_closed_forms():
    assert known_answers.binomial_tail(1, 20, 0.05) == pytest.approx(1 - 0.95 ** 20)
    assert known_answers.binomial_tail(0, 7, 0.3) == pytest.approx(1.0)
    # none wrong of n: the bound solves (1 - p)^n = 0.05
    for n in (7, 49):
        assert known_answers.upper_bound(0, n) == pytest.approx(1 - 0.05 ** (1 / n), abs=1e-9)
    # one wrong of 7: P(X <= 1) at the bound is 0.05
    bound = known_answers.upper_bound(1, 7)
    assert 1 - known_answers.binomial_tail(2, 7, bound) == pytest.approx(0.05, abs=1e-9)


def test_the_tally_counts_each_claims_answers_over_the_clones(tmp_path):
    clones = [clone_with(tmp_path, f"q{i}", [entry("null", answer), entry("same", "right", level=0.9)])
              for i, answer in enumerate(["right", "wrong", "open", "right"])]
    rows = {r["claim"]: r for r in known_answers.tally(clones)}
    assert (rows["null"]["right"], rows["null"]["open"], rows["null"]["wrong"], rows["null"]["runs"]) == (2, 1, 1, 4)
    assert rows["null"]["allowed"] == pytest.approx(0.05) and rows["same"]["allowed"] == pytest.approx(0.1)
    assert rows["null"]["tail"] == pytest.approx(1 - 0.95 ** 4)
    assert rows["same"]["wrong"] == 0 and rows["same"]["tail"] == 1.0
    text = known_answers.report(clones, permutations=50, seed=1)
    # 1 wrong of 8 answers, at most 4 x 0.05 + 4 x 0.1 expected
    assert "all: 1 wrong of 8 answers; at most 0.6 expected" in text
    # no raw results in these clones: said, not a mean of nothing
    assert "null-meta-a / null-meta-b: 0 rounds in the raw results" in text


def test_a_null_pairs_rounds_are_paired_by_round_and_a_failed_run_drops_its_round(tmp_path):
    rates = {"null-meta-a": {1: 110.0, 2: 90.0, 3: 100.0, 4: None},
             "null-meta-b": {1: 100.0, 2: 100.0, 3: 80.0, 4: 100.0, 5: 100.0}}
    clone = clone_with(tmp_path, "q", [entry("null", "right"), entry("no diff", "right", level=0.9)], rates)
    pairs = known_answers.null_pairs(clone)
    assert list(pairs) == [(TARGET, "null-meta-a", "null-meta-b")]  # the two claims of one pair: once
    assert pairs[(TARGET, "null-meta-a", "null-meta-b")] == pytest.approx(
        [math.log(1.1), math.log(0.9), math.log(1.25)])


def test_the_known_effect_is_no_null_pair(tmp_path):
    clone = clone_with(tmp_path, "q", [entry("effect", "right", truth="original", num="model-changed",
                                             den="model-base")])
    assert known_answers.null_pairs(clone) == {}


def runs_of_rounds(shifts, rounds=8, sd=0.03, seed=7):
    rng = random.Random(seed)
    return [[shift + rng.gauss(0.0, sd) for _ in range(rounds)] for shift in shifts]


def test_a_shift_between_runs_is_found_and_none_is_found_where_the_runs_share_one():
    shifted = known_answers.between_runs(runs_of_rounds([0.0, 0.06, -0.06, 0.0, 0.06, -0.06, 0.0]), 2000, seed=1)
    assert shifted["p"] < 0.01 and shifted["f"] > 5
    same = known_answers.between_runs(runs_of_rounds([0.0] * 7), 2000, seed=1)
    assert same["p"] > 0.05 and same["f"] < 2.5
    # one run, or runs of a single round: nothing to compare
    assert known_answers.between_runs([[0.0, 1.0]], 10, seed=1) == {"f": None, "p": None}


def test_bad_arguments_are_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit):
        known_answers.main([str(tmp_path)])
    assert "not a clone after a quick run" in capsys.readouterr().err
    clone = clone_with(tmp_path, "q", [entry("null", "right")])
    with pytest.raises(SystemExit):
        known_answers.main([str(clone), "--permutations", "0"])
    assert "--permutations: 0" in capsys.readouterr().err
