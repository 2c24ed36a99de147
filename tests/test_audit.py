"""boatload.publish.audit's arithmetic, on small made-up results (the audit of a real
run is checked by tests/audit_checks.py from test_paper_layout and test_e2e)."""

from __future__ import annotations

import json
import math

import pytest

from boatload.publish import audit


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
    assert doc["peers"] == [{"study": "filecount", "peer": "fio", "role": "fio in the place of the original's vdbench",
                             "setting": None, "points": 2, "geomean": pytest.approx(1.0), "min": 0.5, "max": 2.0,
                             "table": "filecount-peers.csv"}]
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


def _results(tmp_path, verdicts, not_measured):
    (tmp_path / "tables").mkdir()
    prov = {"host": "h", "runs": 5, "targets": [], "memory_bytes": 2**33}
    (tmp_path / "provenance.json").write_text(json.dumps(prov))
    summary = {"stat": "median", "level": 0.95, "seed": 0, "verdicts": verdicts, "not_measured": not_measured}
    (tmp_path / "tables" / "tmpfs-summary.json").write_text(json.dumps(summary))
    (tmp_path / "tables" / "tmpfs.csv").write_text("target,reps,ops_per_s\ntmpfs,5,10.5\n")
    return {c["id"]: c for c in audit.build_audit(tmp_path)["crimes"]}


def test_counts_name_one_unit_each(tmp_path):
    """A3 counts runs (the records) and, apart, each study's results without a
    rate in that study's own unit: a tmpfs test of one tool is not a run."""
    crimes = _results(tmp_path, [], [{"test": "random_read", "tool": "bonnie++"}, {"test": "random_delete"}])
    a3 = crimes["A3"]["how"]
    assert "5 runs in this results directory" in a3
    assert "2 tools' tests of tmpfs" in a3 and "runs, 2" not in a3
    assert "Every table row states its repetitions (5 each)" in crimes["B4"]["how"]


def test_c2_counts_claims_not_exercised(tmp_path):
    """C2 says how many claims were left without a verdict because their
    mechanism never ran in the timed phase, and is not "avoided" when a claim
    so marked was decided anyway."""
    marked = {"claim": "log on SSD", "verdict": "not exercised", "runs_per_side": [4, 4], "ours_low": 0.9}
    crimes = _results(tmp_path, [marked, {"claim": "b", "verdict": "reproduced"}], [])
    assert crimes["C2"]["status"] == "avoided"
    assert '1 claim whose mechanism the timed phase did not use' in crimes["C2"]["how"]
    assert '"not exercised"' in crimes["C2"]["how"]


def test_c2_is_partly_when_an_unexercised_claim_is_decided(tmp_path):
    decided = {"claim": "log on SSD", "verdict": "reproduced", "exercised": False}
    crimes = _results(tmp_path, [decided], [])
    assert crimes["C2"]["status"] == "partly" and "log on SSD (tmpfs)" in crimes["C2"]["how"]


def test_uncovered_points_and_memory_limits_come_from_the_records(tmp_path):
    """forest's unmapped rows, journal's missing points, degradation's and
    tmpfs's memory limits: each found where its study's record says."""
    crimes_of = _results(tmp_path, [], [])
    assert crimes_of["A2"]["status"] == "avoided"
    tables = tmp_path / "tables"
    summaries = {
        "forest": {"original": {"unmapped": [{"method": "a"}, {"method": "b"}]}},
        "journal": {"original": {"missing": [{"config": "c", "phase": "p"}]}},
        "degradation": {"setup": {"memory_limit_mb": 512}, "original": {"memory": "1 GB"}},
        "tmpfs": {"memory_limit_mb": [256, 1024], "original": {"ram_gb": 4}},
    }
    for study, extra in summaries.items():
        (tables / f"{study}-summary.json").write_text(json.dumps({"stat": "median", "verdicts": [], **extra}))
        (tables / f"{study}.csv").write_text("target,reps\ntmpfs,5\n")
    doc = audit.build_audit(tmp_path)
    crimes = {c["id"]: c for c in doc["crimes"]}
    assert crimes["A2"]["status"] == "stated"
    assert ("1 journal point the original did not finish and 2 published forest rows (the state-file variants) "
            "have no counterpart") in crimes["A2"]["how"]
    assert doc["uncovered"] == [
        {"study": "journal", "kind": "missing_points", "count": 1, "what": "journal point the original did not finish"},
        {"study": "forest", "kind": "unmapped_rows", "count": 2,
         "what": "published forest rows (the state-file variants)"}]
    memory = doc["threats"]["memory"]
    assert memory["limits_mb"] == {"degradation": 512, "tmpfs": 1024}
    assert memory["largest_limit_share"] == pytest.approx(1024 / 8192)
    assert memory["original"] == {"degradation": "1 GB", "tmpfs": "4 GB"}
    assert "a degradation repetition is several dd runs" in crimes["B4"]["how"]
    # each study's own baseline, in the studies' order
    assert ("(the original's own baseline: no extra files, the internal log, the fastest method, ext3); "
            in crimes["D1"]["how"])


def test_a_new_studys_peer_and_memory_limit_reach_the_audit(tmp_path, monkeypatch):
    """A study the audit has never heard of: its record's peer table and memory
    limit are all the audit needs (the whole workflow: tests/test_add_study.py)."""
    from dataclasses import replace

    from boatload.studies.record import PeerTable
    from boatload.studies import registry

    toy = replace(registry()["calibration"], name="toy", baseline="an empty tree",
                  peers=PeerTable("cat", "toy-peers.csv", "worker_over_cat", "cat, the toy's peer",
                                  setting="for cat, a sandbox of its own"),
                  memory_limit=("limit_mb",), original_memory="{original[ram]}", not_measured_unit=("toss", "tosses"))
    monkeypatch.setattr(audit, "registry", lambda: {**registry(), "toy": toy})
    tables = tmp_path / "tables"
    tables.mkdir()
    (tmp_path / "provenance.json").write_text(json.dumps({"host": "h", "runs": 2, "targets": [],
                                                          "memory_bytes": 2**30}))
    (tables / "toy-summary.json").write_text(json.dumps({"stat": "median", "verdicts": [], "limit_mb": 128,
                                                         "original": {"ram": "64 MB"}, "not_measured": [{}]}))
    (tables / "toy.csv").write_text("target,reps\ntmpfs,2\n")
    (tables / "toy-peers.csv").write_text("target,worker_over_cat\ntmpfs,4\ntmpfs,1\n")
    doc = audit.build_audit(tmp_path)
    crimes = {c["id"]: c for c in doc["crimes"]}
    assert [(p["study"], p["peer"], p["points"]) for p in doc["peers"]] == [("toy", "cat", 2)]
    assert doc["peers"][0]["geomean"] == pytest.approx(2.0)
    assert "2.00 over 2 points for cat (toy)" in crimes["B5"]["how"]
    assert "cat, the toy's peer" in crimes["C2"]["how"]
    assert doc["threats"]["memory"]["limits_mb"] == {"toy": 128}
    assert doc["threats"]["memory"]["largest_limit_share"] == pytest.approx(128 / 1024)
    assert doc["threats"]["memory"]["original"] == {"toy": "64 MB"}
    assert "1 toss of toy" in crimes["A3"]["how"]
    assert "(the original's own baseline: an empty tree)" in crimes["D1"]["how"]
    assert "with the same parameters and, for cat, a sandbox of its own;" in crimes["D3"]["how"]
