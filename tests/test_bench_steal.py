"""bench/steal.py on a clone made here: each phase's rate against its point's median, banded by
the steal the phase saw, and the runs over each limit."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import steal  # noqa: E402


def raw(clone, point, rep, rate, steal_share=None, steal_s=0.0, seconds=2.0):
    """A raw run with one timed phase: its rate in the result, its steal in the interference record
    (as a share, or, as records made before it was recorded, as seconds only)."""
    path = clone / "data" / "runs" / "vm" / "journal" / "xfs" / point / f"rep{rep}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    phase = {"phase": "sequential_create", "tool": "worker", "measured": True, "seconds": seconds, "cores": 2,
             "cpu_s": {"steal": steal_s}}
    if steal_share is not None:
        phase["steal_share"] = steal_share
    path.write_text(json.dumps({
        "study": "journal", "seconds": {"provision": 1.0, "measure": 3.0, "teardown": 1.0},
        "result": {"phases": [{"phase": "sequential_create", "ops_per_s": rate}]},
        "interference": {"phases": [phase]}}))


def test_a_phase_in_a_spell_strays_and_the_runs_over_a_limit_are_counted(tmp_path):
    for rep, rate in enumerate((1000, 1010, 990, 1005), start=1):
        raw(tmp_path, "meta", rep, rate, steal_share=0.01)
    raw(tmp_path, "meta", 5, 500, steal_share=0.4)
    raw(tmp_path, "meta", 6, 980, steal_s=0.6)  # an old record: 0.6 s over 2 s on 2 cores is 15 %
    devs = steal.deviations(tmp_path)
    assert len(devs) == 6
    by_band = {row["band"]: row for row in steal.band_table(devs)}
    assert by_band[(0.0, 0.02)]["phases"] == 4 and by_band[(0.0, 0.02)]["median"] < 0.02
    assert by_band[(0.1, 0.2)]["phases"] == 1
    assert by_band[(0.2, 1.01)]["median"] == pytest.approx(abs(__import__("math").log(500 / 1000)), rel=0.02)
    assert steal.over_limits(tmp_path) == {0.1: (2, 10.0), 0.2: (1, 5.0), 0.3: (1, 5.0)}
    assert steal.main([str(tmp_path)]) == 0


def test_a_point_of_fewer_than_three_runs_has_no_median_to_stray_from(tmp_path):
    raw(tmp_path, "meta", 1, 1000, steal_share=0.3)
    raw(tmp_path, "meta", 2, 500, steal_share=0.0)
    assert steal.deviations(tmp_path) == []


def test_filecount_iops_are_matched_to_their_tools_phase(tmp_path):
    for rep, (iops, share) in enumerate(((40e3, 0.0), (41e3, 0.01), (39e3, 0.02), (13e3, 0.42)), start=1):
        path = tmp_path / "data" / "runs" / "vm" / "filecount" / "xfs" / "k01-direct" / f"rep{rep}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "study": "filecount", "seconds": {"measure": 1.5},
            "result": {"tools": {"boatload-worker": {"iops": iops}}},
            "interference": {"phases": [
                {"phase": "prepare", "tool": "worker", "measured": False, "seconds": 0.04},
                {"phase": "io", "tool": "worker", "measured": True, "seconds": 1.0, "steal_share": share}]}}))
    devs = sorted(steal.deviations(tmp_path))
    assert [round(s, 2) for s, _ in devs] == [0.0, 0.01, 0.02, 0.42]
    assert devs[-1][1] == pytest.approx(13e3 / 39.5e3)
