"""boatload.analysis.spread: a point's CV across its runs, and the noisiest points."""

from __future__ import annotations

import math

import polars as pl
import pytest

from boatload.analysis.spread import noisiest, point_spread, with_spread


def test_cv_of_known_samples():
    # mean 10, sample sd sqrt(((-2)^2 + 0 + 2^2) / 2) = 2
    assert point_spread([8.0, 10.0, 12.0]) == pytest.approx(0.2)
    assert point_spread([5, 5, 5, 5]) == 0.0
    # 1 and 3: mean 2, sample sd sqrt(2)
    assert point_spread([1, 3]) == pytest.approx(math.sqrt(2) / 2)


def test_cv_needs_two_finite_rates_and_a_mean():
    assert point_spread([]) is None
    assert point_spread(None) is None
    assert point_spread([7.0]) is None
    assert point_spread([7.0, None, float("nan")]) is None
    assert point_spread([-1.0, 1.0]) is None
    assert point_spread([4.0, None, 6.0]) == pytest.approx(math.sqrt(2) / 5)


def test_with_spread_adds_the_column_per_row():
    frame = pl.DataFrame({"target": ["a", "b", "c"], "rates": [[8.0, 10.0, 12.0], [3.0], [1.0, 3.0]]})
    out = with_spread(frame)
    assert out["cv"].to_list()[0] == pytest.approx(0.2)
    assert out["cv"].to_list()[1] is None
    assert out["cv"].to_list()[2] == pytest.approx(math.sqrt(2) / 2)
    assert out.columns == ["target", "rates", "cv"]
    empty = with_spread(frame.clear())
    assert empty.height == 0 and empty.schema["cv"] == pl.Float64


def test_noisiest_ranks_points_by_cv_and_counts_their_redone_runs():
    runs = pl.DataFrame({
        "target": ["x"] * 3 + ["y"] * 3 + ["z"],
        "op": ["w"] * 7,
        "rate": [10.0, 10.0, 10.0, 5.0, 10.0, 15.0, 3.0],
        "redone": [0, 0, 0, 1, 0, 2, 0],
        "disturbed": [False, False, False, True, False, False, None],
    })
    top = noisiest(runs, ["target", "op"], "rate", top=2)
    assert [e["target"] for e in top] == ["y", "x"]  # z has one run: no spread
    assert top[0] == {"target": "y", "point": "w", "cv": pytest.approx(0.5), "runs": 3, "redone": 2,
                      "still_disturbed": 1}
    assert top[1]["cv"] == 0.0 and top[1]["redone"] == 0
    assert noisiest(runs.clear(), ["target", "op"], "rate") == []


def test_noisiest_says_unknown_for_runs_without_an_interference_record():
    runs = pl.DataFrame({"target": ["x", "x"], "op": ["w", "w"], "rate": [1.0, 2.0],
                         "redone": [None, None], "disturbed": [None, None]},
                        schema={"target": pl.String, "op": pl.String, "rate": pl.Float64,
                                "redone": pl.Int64, "disturbed": pl.Boolean})
    (only,) = noisiest(runs, ["target", "op"], "rate")
    assert only["redone"] is None and only["still_disturbed"] is None and only["runs"] == 2
    (bare,) = noisiest(runs.drop("redone", "disturbed"), ["target", "op"], "rate")
    assert bare["redone"] is None and bare["cv"] == pytest.approx(math.sqrt(0.5) / 1.5)
