"""boatload.audit's arithmetic, on small made-up results (the audit of a real
run is checked by tests/audit_checks.py from test_paper_layout and test_e2e)."""

from __future__ import annotations

import json
import math

import pytest

from boatload import audit


def test_geomean():
    assert audit.geomean([2.0, 0.5]) == pytest.approx(1.0)
    assert audit.geomean([4.0, 1.0]) == pytest.approx(2.0)
    # the arithmetic mean of a ratio and its inverse is not 1; the geometric mean is
    assert audit.geomean([10.0, 0.1]) == pytest.approx(1.0)
    assert audit.geomean([]) is None and audit.geomean([0.0, -1.0, float("nan")]) is None


def test_crimes_are_heisers_list():
    ids = [i for i, _, _ in audit.CRIMES]
    assert ids == ["A1", "A2", "A3", "B1", "B2", "B3", "B4", "B5", "C1", "C2", "C3", "D1", "D2", "D3", "D4",
                   "E1", "E2", "E3"]
    names = " ".join(n for _, _, n in audit.CRIMES).lower()
    for crime in ("selective data set", "significance", "arithmetic mean", "baseline",
                  "specification of the evaluation platform", "relative numbers only"):
        assert crime in names


def test_audit_of_made_up_results(tmp_path):
    """Two claims (one with an interval over 4 runs, one with too few runs),
    a fio peer table: the audit counts them, measures the interval's coverage
    at 4 runs per side, and takes the geometric mean."""
    tables = tmp_path / "tables"
    tables.mkdir()
    prov = {"host": "h", "cpu_model": "c", "cpus": 2, "memory_bytes": 2**33, "kernel": "6.1", "os": "Debian",
            "python": "3.11", "lock_sha256": "x", "config": "config/ci.yaml", "scale": "ci", "runs": 7,
            "order_seed": 1, "worker": {"version": "0.1"},
            "targets": [{"name": "ext4", "kind": "loop", "fs": "ext4", "size_mb": 64, "backing_fs": "xfs"},
                        {"name": "tmpfs", "kind": "tmpfs", "fs": "tmpfs"}]}
    (tmp_path / "provenance.json").write_text(json.dumps(prov))
    summary = {"stat": "median", "level": 0.95, "n_resamples": 2000, "seed": 0,
               "counts": {"files": 100}, "original": {"files": 250000},
               "verdicts": [{"claim": "a", "verdict": "reproduced", "runs_per_side": [4, 4], "ours_low": 1.2},
                            {"claim": "b", "verdict": "too few runs", "runs_per_side": [1, 1], "ours_low": None}]}
    (tables / "journal-summary.json").write_text(json.dumps(summary))
    (tables / "journal.csv").write_text("target,reps,ops_per_s\next4,3,10.5\n")
    fc = {**summary, "verdicts": [], "setup": {"file_size_mb": 4, "threads": 8},
          "original": {"file_size_mb": 100, "threads": 64, "filesystem": "VxFS", "tool": "vdbench 5.01"}}
    (tables / "filecount-summary.json").write_text(json.dumps(fc))
    (tables / "filecount.csv").write_text("target,reps,iops\next4,3,1000\n")
    (tables / "filecount-peers.csv").write_text("target,worker_over_fio\next4,2.0\next4,0.5\next4,\n")

    doc = audit.build_audit(tmp_path)
    crimes = {c["id"]: c for c in doc["crimes"]}
    (coverage,) = doc["claims"]["coverage"]
    assert {k: v for k, v in doc["claims"].items() if k != "coverage"} == {"total": 2, "by_verdict": {"reproduced": 1, "too few runs": 1}, "with_interval": 1,
                             "runs_per_side_min": 4, "runs_per_side_max": 4}
    # measured, not stated: 4 runs per side cover at 1 - 2/70 = 97.1 %, within the noise of 2,000 draws
    assert coverage["runs_per_side"] == [4, 4] and 0.95 <= coverage["coverage"] <= 0.99
    assert crimes["B4"]["status"] == "partly"
    assert "over 4 runs per side" in crimes["B4"]["how"] and f"{coverage['coverage']:.1%}" in crimes["B4"]["how"]
    assert "1 claims rest on runs too few" in crimes["B4"]["how"]
    assert doc["peers"] == [{"study": "filecount", "peer": "fio", "points": 2, "geomean": pytest.approx(1.0),
                             "min": 0.5, "max": 2.0, "table": "filecount-peers.csv"}]
    assert "1.00 over 2 points for fio" in crimes["B5"]["how"]
    assert crimes["C1"]["status"] == "cannot" and "1 of the 2 targets" in crimes["C1"]["how"]
    scale = {(r["study"], r["quantity"]): r["factor"] for r in doc["threats"]["scale"]}
    assert scale == {("journal", "files"): 2500.0, ("filecount", "file size"): 25.0, ("filecount", "threads"): 8.0}
    assert doc["threats"]["disk"]["backing_fs"] == ["xfs"]
    # each original as its study's record describes it, filled from its summary
    assert doc["originals"]["filecount"] == {"citation": "seed-filecount", "hardware": "VxFS under vdbench 5.01"}
    assert doc["originals"]["journal"] == {"citation": "seed-journal", "hardware": None}  # no file system in its summary

    out = audit.write_audit(tmp_path)
    assert json.loads(out.read_text()) == json.loads(json.dumps(doc))
    assert audit.main(["--results", str(tmp_path)]) == 0
    assert math.isclose(json.loads(out.read_text())["peers"][0]["geomean"], 1.0)
