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
