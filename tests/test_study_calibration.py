"""The calibration study: its jobs, its notebook's known answers on tables
whose truth the test sets (a null pair that differs must be marked wrong, a
known effect away from the model's prediction too), and as root a real run of
the known effect on the modelled disk against the same model twice as slow."""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from boatload.analysis.intervals import ratio_interval
from boatload.studies import calibration
from boatload.studies.calibration import STUDY
from conftest import ROOT, ours_left

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import fixturelib  # noqa: E402

IS_ROOT = os.geteuid() == 0
PREDICTED_BASE_US, PREDICTED_CHANGED_US = 7400.0, 14700.0


def config(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())


@pytest.mark.parametrize("name", ["ci.yaml", "config.yaml"])
def test_every_point_once_per_repetition(name):
    cfg = config(name)
    jobs = calibration.jobs(cfg)
    reps = cfg["studies"]["calibration"].get("repetitions", cfg["repetitions"])
    # the null creates in more rounds where the config says so (the quick one: 8)
    creates = max(reps, cfg["studies"]["calibration"].get("create_repetitions") or 0)
    points = {"null-tree-a", "null-tree-b", "null-meta-a", "null-meta-b", "null-stat-a", "null-stat-b", "model-base",
              "model-changed"}
    rounds = {p: creates if p.startswith(("null-tree", "null-meta")) else reps for p in points}
    assert len(jobs) == sum(rounds.values())
    assert {(j["point"], j["rep"]) for j in jobs} == {(p, r) for p in points for r in range(1, rounds[p] + 1)}
    # the two points of a pair run the same workload on the same target
    for a, b in (("null-tree-a", "null-tree-b"), ("null-meta-a", "null-meta-b"), ("null-stat-a", "null-stat-b")):
        ja, jb = (next(j for j in jobs if j["point"] == p and j["rep"] == 1) for p in (a, b))
        assert {k: v for k, v in ja.items() if k != "point"} == {k: v for k, v in jb.items() if k != "point"}


def test_a_target_outside_the_study_is_named():
    cfg = config("ci.yaml")
    cfg["studies"]["calibration"]["model_changed"] = "ext4"
    with pytest.raises(Exception, match="studies.calibration.model_changed"):
        calibration.jobs(cfg)
    cfg = config("ci.yaml")
    cfg["studies"]["calibration"]["targets"].append("tmpfs")
    cfg["studies"]["calibration"]["model_changed"] = "tmpfs"
    with pytest.raises(Exception, match="model_changed: target 'tmpfs' has no model"):
        calibration.jobs(cfg)


def table(tree_b_factor: float, changed_factor: float, reps: int = 5, seed: int = 3,
          drift: float = 0.0) -> pl.DataFrame:
    """Runs of every point: the null tree pair with b at `tree_b_factor` of a,
    the changed model at `changed_factor` of the prediction's IOPS; every rate of
    round r times 1 + drift * (r - 1) / (reps - 1), a host slowing or speeding up."""
    rng = np.random.default_rng(seed)
    rows = []
    truth = {"null-tree-a": 50_000.0, "null-tree-b": 50_000.0 * tree_b_factor, "null-meta-a": 30_000.0,
             "null-meta-b": 30_000.0, "null-stat-a": 0.95, "null-stat-b": 0.95, "model-base": 1e6 / PREDICTED_BASE_US,
             "model-changed": 1e6 / PREDICTED_CHANGED_US * changed_factor}
    for point, rate in truth.items():
        kind = "tree" if "tree" in point else "meta" if "meta" in point else "stat" if "stat" in point else "randio"
        for rep in range(1, reps + 1):
            r = rate * float(rng.lognormal(0.0, 0.02)) * (1.0 + drift * (rep - 1) / (reps - 1))
            rows.append({"host": "fixture-host", "study": "calibration", "target": f"t-{point}", "filesystem": "ext4",
                         "hardware": "hdd-7200*" if point == "model-changed" else
                         "hdd-7200" if kind == "randio" else "this machine",
                         "point": point, "kind": kind, "rep": rep, "ops": 1000, "seconds": 1000 / r, "rate": r,
                         "unit": calibration.KINDS[kind], "lat_mean_us": 1e6 / r if kind == "randio" else None,
                         "predicted_read_us": {"model-base": PREDICTED_BASE_US,
                                               "model-changed": PREDICTED_CHANGED_US}.get(point),
                         "status": "ok", "reason": None, "worker_version": "0", "kernel": "6.1",
                         "started_at": f"2026-11-27T10:00:{rep:02d}+00:00"})
    return pl.DataFrame(rows, schema=STUDY.table_schema)


def run(tmp_path: Path, frame: pl.DataFrame) -> dict:
    def make(out, variant):
        return fixturelib.write(out, "calibration", frame, {"host": "fixture-host"})
    out = fixturelib.run_notebook("calibration", make, tmp_path, ROOT)
    return json.loads((out["results"] / "tables" / "calibration-summary.json").read_text())


def by_id(summary: dict) -> dict:
    return {v["claim_id"]: v for v in summary["verdicts"]}


def test_known_answers_come_out_right_on_runs_that_hold_them(tmp_path):
    s = run(tmp_path, table(tree_b_factor=1.0, changed_factor=1.0))
    v = by_id(s)
    assert s["predicted_ratio"] == pytest.approx(PREDICTED_BASE_US / PREDICTED_CHANGED_US)
    assert v["model-slower"]["verdict"] == "reproduced" and v["model-slower"]["predicted_inside"] is True
    assert v["tree-same"]["verdict"] == "equivalent" and v["tree-3x"]["verdict"] == "not reproduced"
    assert v["stat-same"]["verdict"] == "equivalent" and v["stat-3x"]["verdict"] == "not reproduced"
    assert s["answers"] == {"right": 7, "wrong": 0, "open": 0}
    assert (tmp_path / "results" / "figures" / "calibration-ratios.svg").stat().st_size > 0


def test_a_null_pair_is_paired_by_round_so_a_drift_across_the_rounds_leaves_it_equivalent(tmp_path):
    # 8 rounds and the host 40 % faster by the last: each round's two runs see the same host
    frame = table(tree_b_factor=1.0, changed_factor=1.0, reps=8, drift=0.4)
    s = run(tmp_path, frame)
    v = by_id(s)
    for claim_id, (a, b) in {"tree-same": ("null-tree-a", "null-tree-b"), "meta-same": ("null-meta-a", "null-meta-b"),
                             "stat-same": ("null-stat-a", "null-stat-b")}.items():
        assert v[claim_id]["pairs"] == 8 and v[claim_id]["verdict"] == "equivalent", v[claim_id]
        # the same runs as two independent samples: the drift is in the interval
        rates = [frame.filter(pl.col("point") == p)["rate"].to_list() for p in (a, b)]
        unpaired = ratio_interval(*rates, level=v[claim_id]["level"])
        assert unpaired.high / unpaired.low > 1.2 > v[claim_id]["ours_high"] / v[claim_id]["ours_low"]
    assert s["answers"] == {"right": 7, "wrong": 0, "open": 0}


def test_a_pair_that_differs_and_a_model_off_its_prediction_are_wrong_answers(tmp_path):
    # b 30 % slower than a: "no difference" is decided not equivalent, a wrong answer for a null pair;
    # the changed model 30 % faster than predicted: reproduced (inside the band) but the prediction lies outside
    s = run(tmp_path, table(tree_b_factor=0.7, changed_factor=1.3))
    v = by_id(s)
    assert v["tree-same"]["verdict"] == "not equivalent" and v["tree-same"]["answer"] == "wrong"
    assert v["model-slower"]["predicted_inside"] is False and v["model-slower"]["answer"] == "wrong"
    assert s["answers"]["wrong"] >= 2


@pytest.mark.skipif(not IS_ROOT, reason="needs root: modelled disks")
def test_the_known_effect_on_real_modelled_disks(tmp_path, monkeypatch):
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(tmp_path / "scratch"))
    cfg = config("ci.yaml")
    jobs = [j for j in calibration.jobs(cfg) if j["kind"] == "randio"]
    docs = {j["point"]: STUDY.run(j) for j in jobs}
    assert ours_left(tmp_path / "scratch") == []
    for point, doc in docs.items():
        r = doc["result"]
        assert r["status"] == "ok", r["reason"]
        # every read goes to the modelled media: no request is cheaper than the model's own time
        assert r["lat_mean_us"] >= 0.85 * r["predicted_read_us"], (point, r["lat_mean_us"], r["predicted_read_us"])
        assert r["ops"] > 0
    base, changed = docs["model-base"]["result"], docs["model-changed"]["result"]
    # seek and rotation twice as slow: the model's own prediction is near half the IOPS
    predicted = base["predicted_read_us"] / changed["predicted_read_us"]
    assert 0.45 < predicted < 0.55
    assert changed["rate"] < base["rate"]


@pytest.mark.skipif(not IS_ROOT, reason="needs root: loop devices and a tmpfs")
def test_the_stat_pair_measures_each_pass_against_its_reference(tmp_path, monkeypatch):
    """The null pair of the random stat over its reference, run for real: each point's rate is the stat's
    over its reference's in the passes paired file by file (their median), and the reference's tmpfs is
    gone after the run."""
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(tmp_path / "scratch"))
    cfg = config("ci.yaml")
    jobs = [j for j in calibration.jobs(cfg) if j["kind"] == "stat" and j["rep"] == 1]
    assert {j["point"] for j in jobs} == {"null-stat-a", "null-stat-b"}
    for job in jobs:
        doc = STUDY.run(job)
        r = doc["result"]
        assert r["status"] == "ok", r["reason"]
        ref = r["stat_reference"]
        assert len(ref["passes"]) == job["stat_passes"] > 1 and ref["files"] == job["files"]
        ratios = [p["pair_seconds"] / p["seconds"] for p in ref["passes"]]
        assert r["rate"] == pytest.approx(statistics.median(ratios)) == ref["stat_vs_reference"]
        assert r["ops"] == job["files"] * job["stat_passes"]
        # a stat of a cached file costs XFS about what it costs a tmpfs
        assert 0.2 < r["rate"] < 5
        [row] = calibration.rows(doc)
        assert row["unit"] == "x reference" and row["rate"] == r["rate"]
    assert ours_left(tmp_path / "scratch") == []


@pytest.mark.skipif(not IS_ROOT, reason="needs root: loop devices")
def test_the_null_creates_take_their_fastest_pass(tmp_path, monkeypatch):
    """The tree and meta null creates run for real with three passes: each pass creates every file on a
    target emptied before it (the tree's files removed, the meta's deleted by the worker), the run's rate is
    the fastest pass's, its ops every pass's."""
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(tmp_path / "scratch"))
    cfg = config("ci.yaml")
    cfg["studies"]["calibration"]["create_passes"] = 3
    jobs = [j for j in calibration.jobs(cfg) if j["kind"] in ("tree", "meta") and j["rep"] == 1 and
            j["point"].endswith("-a")]
    assert {j["kind"] for j in jobs} == {"tree", "meta"}
    for job in jobs:
        doc = STUDY.run(job)
        r = doc["result"]
        assert r["status"] == "ok", r["reason"]
        files = job["files"] if job["kind"] == "meta" else job["shape"][0] * job["shape"][1]
        assert len(r["create_passes"]) == 3 and r["rate"] == max(r["create_passes"])
        assert r["ops"] == 3 * files and r["seconds"] > 0
        if job["kind"] == "meta":
            creates = [p for p in r["worker_result"]["phases"] if p["name"] == "create"]
            assert [p["ops"] for p in creates] == [files] * 3 and all(p["existing"] == 0 for p in creates)
            assert [p["name"] for p in r["worker_result"]["phases"]].count("delete") == 2
        [row] = calibration.rows(doc)
        assert row["rate"] == r["rate"] and row["ops"] == r["ops"]
    assert ours_left(tmp_path / "scratch") == []
