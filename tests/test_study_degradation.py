"""The degradation study: its jobs, the space checks and
(as root, with boatload.provision.memlimit) a real ci-scale run of all three stages."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest
import yaml

from boatload.provision import targets
from boatload.studies.config import ConfigError
from boatload.studies import degradation
from boatload.provision.targets import Provisioned
from boatload.base.targetspec import parse_target
from conftest import ROOT, ours_left

IS_ROOT = os.geteuid() == 0


def config(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())


@pytest.mark.parametrize("name", ["ci.yaml", "config.yaml"])
def test_jobs_one_per_target_and_repetition(name):
    cfg = config(name)
    study = cfg["studies"]["degradation"]
    jobs = degradation.jobs(cfg)
    reps = study.get("repetitions", cfg["repetitions"])
    assert len(jobs) == len(study["targets"]) * reps
    keys = {(j["target"]["name"], j["point"], j["rep"]) for j in jobs}
    assert len(keys) == len(jobs)
    assert {j["point"] for j in jobs} == {"stages"}
    assert len({j["seed"] for j in jobs if j["target"]["name"] == study["targets"][0]}) == reps


def test_a_target_too_small_is_a_config_error_naming_its_size():
    cfg = config("ci.yaml")
    cfg["targets"]["ext4"]["size_mb"] = 100  # the ci file alone is 128 MiB
    with pytest.raises(ConfigError, match=r"targets\.ext4\.size_mb"):
        degradation.jobs(cfg)


@pytest.mark.parametrize("key", ["read_reference", "write_reference"])
def test_a_reference_only_beside_a_loop_target_without_a_model(key):
    cfg = config("config.yaml")
    jobs = degradation.jobs(cfg)
    # the quick config: this machine's disk paired, the modelled disk not
    assert {j["target"]["name"] for j in jobs if j.get(key)} == {"ext4", "xfs"}
    cfg["studies"]["degradation"]["per_target"]["ext4-hdd"][key] = True
    with pytest.raises(ConfigError, match=rf"studies\.degradation\.{key}: .*not ext4-hdd"):
        degradation.jobs(cfg)


def test_the_mounted_file_system_is_checked_too(tmp_path):
    spec = parse_target("ext4", {"kind": "loop", "fs": "ext4", "size_mb": 64})
    job = {"extra_files": 10**10, "file_size_max": 6552, "memory_limit_mb": 64}
    with pytest.raises(ConfigError, match=r"targets\.ext4\.size_mb"):
        degradation._check_space(Provisioned(spec=spec, path=tmp_path), job, 128 << 20, 10)


def test_mean_allocation():
    assert degradation.mean_allocation(0) == 0
    assert degradation.mean_allocation(4096) == pytest.approx(4096 * 4096 / 4097)
    assert 4096 < degradation.mean_allocation(6552) < 8192
    # the closed form against the mean over every size, whole blocks each
    for size_max, block in ((1, 512), (511, 512), (1536, 512), (12345, 4096), (20000, 65536)):
        direct = sum(-(-s // block) * block for s in range(size_max + 1)) / (size_max + 1)
        assert degradation.mean_allocation(size_max, block) == pytest.approx(direct, rel=1e-12), (size_max, block)
    # a terabyte of sizes (a config the preflight plans, then refuses): about half of it, whole blocks
    assert degradation.mean_allocation(1 << 40) == pytest.approx((1 << 39) + 2048, rel=1e-9)


@pytest.fixture
def scratch(tmp_path, worker, monkeypatch):
    monkeypatch.setenv("BOATLOAD_WORKER", str(worker))
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(tmp_path / "scratch"))
    yield tmp_path
    assert ours_left(tmp_path) == []


@pytest.mark.skipif(not IS_ROOT, reason="needs root (loop devices, cgroups)")
def test_ci_run_three_stages_inside_the_memory_limit(scratch):
    cfg = config("ci.yaml")
    study = cfg["studies"]["degradation"]
    (job,) = [j for j in degradation.jobs(cfg) if j["rep"] == 1][:1]
    doc = degradation.run(job)
    r = doc["result"]
    assert r["status"] == "ok", r["reason"]
    n, limit = study["extra_files"], study["memory_limit_mb"]

    # three stages, the small files on disk growing by N each time
    assert [s["extra_files"] for s in r["stages"]] == [0, n, 2 * n]
    assert [s["files_on_disk"] for s in r["stages"]] == [0, n, 2 * n]
    assert r["stages"][2]["usage"]["blocks_used_kb"] > r["stages"][0]["usage"]["blocks_used_kb"]
    # in random folders like the original generator's: flat, 1..16383 files each, sizes 0..6552 in steps of 8
    assert 0 < r["stages"][1]["folders_on_disk"] < r["stages"][2]["folders_on_disk"]
    for s in r["stages"][1:]:
        p = s["fill"]["params"]
        assert (p["layout"], p["max_depth"], p["files_per_dir_max"]) == ("random", 1, 16383)
        assert (p["size_max"], p["size_align"], p["content"]) == (6552, 8, "random")
    assert r["stages"][1]["fill"]["params"]["seed"] != r["stages"][2]["fill"]["params"]["seed"]

    assert r["loop_direct_io"] is True, r["loop_direct_io_note"]
    # the image was written once before stage 0, and that file is gone again
    assert r["precondition"]["status"] == "ok" and r["precondition"]["params"]["direct"] is True
    assert r["precondition"]["phases"][0]["bytes"] > r["file_bytes"]
    assert r["stages"][0]["usage"]["blocks_used_kb"] < (r["file_bytes"] >> 10) // 2

    # the big file is twice the memory limit, written and read whole every run
    assert r["file_bytes"] == r["big_file_bytes"] == 2 * limit << 20
    for s in r["stages"]:
        assert s["write"]["params"]["direct"] is True
        assert s["read"]["params"]["direct"] is False and s["read"]["params"]["block"] == 512
        assert all(p["bytes"] == r["file_bytes"] for p in s["write"]["phases"] + s["read"]["phases"])
    # with read_reference and write_reference (the ci config's) every read and every write went in
    # turns with the reference's file, on a file system of its own, each side timed apart inside the
    # run's time
    assert job["read_reference"] and r["read_reference"] == "read-reference"
    assert job["write_reference"] and r["write_reference"] == "read-reference"
    for s in r["stages"]:
        pair_file = s["read"]["params"]["pair_file"]
        assert s["write"]["params"]["pair_file"] == pair_file
        assert Path(pair_file).parent != Path(s["read"]["params"]["dir"]) and "read-reference" in pair_file
        for p in s["read"]["phases"] + s["write"]["phases"]:
            paired = p["paired"]
            assert paired["pair"] == pair_file
            assert 0 < paired["seconds"] and 0 < paired["pair_seconds"]
            assert paired["seconds"] + paired["pair_seconds"] <= p["seconds"]
    assert "read-reference" not in Path("/proc/mounts").read_text()  # torn down with the run

    # the reads ran inside the cgroup: it filled up to its limit, was held there, and no further
    assert r["memlimit"]["limit_bytes"] == limit << 20 and r["memlimit"]["cgroup"]
    for s in r["stages"]:
        assert 0.9 * (limit << 20) <= s["memory"]["peak_bytes"] <= limit << 20
        assert not s["memory"]["oom_kills"]

    runs = pl.DataFrame(degradation.rows(doc), schema=degradation.STUDY.table_schema, orient="row").sort(list(degradation.STUDY.sort))
    assert runs.height == 3 * 2 * study["runs"]
    assert (runs["mb_per_s"] > 0).all() and (runs["status"] == "ok").all()
    assert set(runs["op"]) == {"write_odirect", "read"}
    assert (runs["file_bytes"] == 2 * limit << 20).all()
    # a run's rate is the big file's own (its bytes over its turns); a read's rate over the reference's
    # is near 1 (the same file system and disk), a write's within a few times (it allocates, the
    # reference's writes overwrite in place)
    assert (runs["mb_per_s"] == runs["bytes"] / 1e6 / runs["seconds"]).all()
    assert runs.filter(pl.col("op") == "read")["vs_reference"].is_between(0.5, 2.0).all()
    assert runs.filter(pl.col("op") == "write_odirect")["vs_reference"].is_between(0.1, 10.0).all()
    assert "MB/s" in degradation.summary(doc)


def test_without_root_skipped_with_the_reason(scratch, monkeypatch):
    monkeypatch.setattr(targets, "is_root", lambda: False)
    (job, *_) = degradation.jobs(config("ci.yaml"))
    doc = degradation.run(job)
    assert doc["result"]["status"] == "skipped"
    assert doc["result"]["reason"].startswith("not root")
    (row,) = degradation.rows(doc)
    assert row["status"] == "skipped" and row["reason"].startswith("not root")
    assert not Path(scratch, "scratch", "mnt").exists() or not any(Path(scratch, "scratch", "mnt").iterdir())
