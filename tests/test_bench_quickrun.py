"""bench/quickrun.py on a clone made here: the per-study table of the raw
results (runs, seconds a run, timed share, redone) and the claims decided."""

from __future__ import annotations

import json
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import quickrun  # noqa: E402


def raw(clone, study, target, point, rep, start, end, timed, redone=(), disturbance=None):
    """A raw result as boatload.measure.runner writes it: the interference record's phases (one measured,
    one not), the attempts measured again and the disturbance kept."""
    path = clone / "data" / "runs" / "vm" / study / target / point / f"rep{rep}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    phases = [{"phase": "create", "seconds": timed, "measured": True},
              {"phase": "fill", "seconds": 0.5, "measured": False}]
    path.write_text(json.dumps({"started_at": start, "finished_at": end, "result": {"files": 10},
                                "interference": {"phases": phases, "redone": list(redone),
                                                 "disturbance": disturbance}}))


def summary(clone, study, verdicts):
    tables = clone / "results" / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    (tables / f"{study}-summary.json").write_text(json.dumps({"verdicts": verdicts}))


def test_the_table_and_the_counts_of_a_clone(tmp_path, capsys):
    clone = tmp_path / "clone"
    raw(clone, "forest", "ext4", "python", 1, "2026-11-27T10:00:00Z", "2026-11-27T10:00:04Z", 2.0)
    raw(clone, "forest", "ext4", "python", 2, "2026-11-27T10:00:05Z", "2026-11-27T10:00:07Z", 1.0, ["disturbed"])
    raw(clone, "journal", "xfs", "meta", 1, "2026-11-27T10:00:08Z", "2026-11-27T10:00:18Z", 5.0,
        disturbance="constant")
    # an archived run (a raw result moved aside) is not among the runs
    archived = clone / "data" / "runs" / "vm" / "archive" / "forest" / "ext4" / "python"
    archived.mkdir(parents=True)
    (archived / "rep1.json").write_text(json.dumps({"started_at": "2026-11-27T09:00:00Z",
                                                    "finished_at": "2026-11-27T09:59:00Z"}))
    summary(clone, "forest", [{"verdict": "reproduced", "ours_low": 1.0, "ours_high": 1.2},
                              {"verdict": "inconclusive", "ours_low": 0.9, "ours_high": 1.8},
                              {"verdict": "not exercised"}])
    summary(clone, "journal", [{"verdict": "contradicted", "ours_low": 0.5, "ours_high": 0.8}])
    # the points' spread: the median of the tidy table's cv (an empty cv is a point without one)
    (clone / "results" / "tables" / "forest.csv").write_text("target,cv\next4,0.02\nxfs,0.10\nbtrfs,0.04\ntmpfs,\n")
    summary(clone, "calibration", [{"verdict": "equivalent", "answer": "right"},
                                   {"verdict": "inconclusive", "answer": "right"}])
    runs = quickrun.runs_table(clone)
    forest = runs["studies"]["forest"]
    assert (forest["runs"], forest["wall"], forest["timed"]) == (2, 6.0, 3.0)
    assert (forest["redone"], forest["constant"]) == (1, 0)
    assert runs["studies"]["journal"]["constant"] == 1
    assert runs["span"] == 18.0
    claims = quickrun.verdicts(clone)
    assert (sum(claims["tested"].values()), sum(claims["decided"].values())) == (3, 2)
    assert claims["median_width"] == 1.6  # 1.2, 1.6, 2.0
    assert claims["known"] == {"right": 2}
    assert quickrun.main([str(clone)]) == 0
    out = capsys.readouterr().out
    assert quickrun.median_spread(clone, "forest") == 0.04
    assert quickrun.median_spread(clone, "journal") is None
    assert "forest           2     3.00    50%       6      1    0    4.0%" in out
    assert "journal          1    10.00    50%      10      0    1       -" in out
    assert "decided: 2 of 3 claims tested (67 %); forest 1 of 2, journal 1 of 1" in out


def test_an_open_claim_is_shown_against_the_line_it_straddles(tmp_path, capsys):
    clone = tmp_path / "clone"
    raw(clone, "degradation", "xfs", "stages", 1, "2026-11-27T10:00:00Z", "2026-11-27T10:00:04Z", 2.0)
    # a fall claimed at 0.893: its band's near edge 0.945 (half the effect); ours straddles it and 1,
    # so the edge is the line to clear; a size left open straddles the band's far edge only
    summary(clone, "degradation", [
        {"claim": "reads fall", "verdict": "inconclusive", "ours": 0.985, "ours_low": 0.931, "ours_high": 1.044,
         "band": [0.4467, 0.9452], "runs_per_side": [8, 8], "runs_to_settle": 16, "hardware": "this machine"},
        {"claim": "writes rise", "verdict": "same direction, size open", "ours": 2.1, "ours_low": 1.9,
         "ours_high": 2.4, "band": [1.2, 2.0], "runs_per_side": [4, 4], "runs_to_settle": 12},
        {"claim": "same", "verdict": "inconclusive", "ours": 1.05, "ours_low": 0.95, "ours_high": 1.16,
         "margin": [1 / 1.1, 1.1], "runs_per_side": [6, 6], "runs_to_settle": None},
        {"claim": "decided", "verdict": "not reproduced", "ours": 1.0, "ours_low": 0.95, "ours_high": 1.05,
         "band": [1.2, 2.0], "runs_per_side": [4, 4]}])
    summary(clone, "calibration", [{"claim": "null", "verdict": "inconclusive", "ours": 1.0, "ours_low": 0.8,
                                    "ours_high": 1.2, "margin": [1 / 1.1, 1.1], "answer": "right"}])
    found = {c["claim"]: c for c in quickrun.open_claims(clone)}
    assert set(found) == {"reads fall", "writes rise", "same"}  # not the decided one, not a known answer
    falls = found["reads fall"]
    assert falls["line"] == 0.9452 and falls["runs"] == 8 and falls["runs_to_settle"] == 16
    assert round(falls["distance_pct"], 1) == 4.1 and round(falls["half_width_pct"], 1) == 5.7
    assert found["writes rise"]["line"] == 2.0
    assert found["same"]["line"] == 1.1
    assert quickrun.main([str(clone)]) == 0
    out = capsys.readouterr().out
    assert ("  degradation: reads fall (this machine): 0.985 [0.931, 1.04], 4.1 % from the line 0.945 "
            "(half-width 5.7 %), 8 runs a side, 16 to settle") in out
    assert "  degradation: same: 1.05 [0.95, 1.16], 4.7 % from the line 1.1 (half-width 10.0 %), 6 runs a side, " \
           "- to settle" in out
