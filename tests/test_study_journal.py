"""The journal study: its jobs, one real run on a ci-sized xfs target, the tidy table, no root."""

import copy
import json
import os
import statistics
from pathlib import Path

import polars as pl
import pytest
import yaml

from boatload.provision import targets
from boatload.base import targetspec
from boatload.studies import journal
from boatload.analysis.tidy import schema, tidy
from conftest import ROOT

root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
PHASES = ["sequential_create", "random_open", "random_stat", "random_read", "sequential_delete"]


def config(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


def job_for(cfg, target, point="meta"):
    return next(j for j in journal.jobs(cfg) if j["target"]["name"] == target and j["rep"] == 1 and j["point"] == point)


@pytest.mark.parametrize("name", ["ci.yaml", "config.yaml", "full.yaml"])
def test_jobs_one_per_target_and_repetition(name):
    cfg = config(name)
    study = cfg["studies"]["journal"]
    jobs = journal.jobs(cfg)
    reps = study.get("repetitions", cfg["repetitions"])
    settings = journal.settings(cfg, journal.STUDY)
    assert len(jobs) == sum(len(journal.for_target(settings, t)["durability"]) for t in study["targets"]) * reps
    keys = {(j["target"]["name"], j["point"], j["rep"]) for j in jobs}
    assert len(keys) == len(jobs)
    points = {"none": "meta", "syncfs": "meta-syncfs", "fsync": "meta-fsync"}
    for j in jobs:
        # the target spec is passed through untouched (write_cache, log: provision's business)
        assert {k: v for k, v in j["target"].items() if k != "name"} == cfg["targets"][j["target"]["name"]]
        own = journal.for_target(settings, j["target"]["name"])  # a target's own settings
        durability = journal.durability(j)
        assert j["point"] == points[durability] and durability in own["durability"]
        # the original's create keeps the job it had before durability was a setting
        assert ("durability" in j) == (durability != "none")
        assert j["files"] == (own.get(f"{durability}_files") or own["files"])
    labels = {(journal.log_placement(j["target"]), journal.flushes(j["target"])) for j in jobs}
    assert labels == {("internal", "honoured"), ("internal", "dropped"), ("external", "honoured")}


def test_worker_arguments_are_the_originals_five_steps(tmp_path):
    job = job_for(config("ci.yaml"), "xfs-log-internal")
    args = journal.worker_args(tmp_path, job)
    # the random stat as config/ci.yaml's two passes over the same files
    assert args[args.index("--phases") + 1] == "create:seq,open:rand,stat:rand,stat:rand,read:rand,delete:seq"
    assert args[args.index("--dirs") + 1] == "0"  # one flat directory, as the original
    assert args[args.index("--size") + 1] == "1024"
    assert "--sync" not in args and "--fsync" not in args
    cfg = config("ci.yaml")
    assert journal.worker_args(tmp_path, job_for(cfg, "xfs-log-internal", "meta-syncfs"))[-2:] == ["--sync", "end"]
    assert journal.worker_args(tmp_path, job_for(cfg, "xfs-log-internal", "meta-fsync"))[-2:] == ["--fsync", "file"]


def test_the_stat_reference_splits_the_calls_and_only_the_original_create_has_it(tmp_path):
    cfg = config("ci.yaml")
    job = job_for(cfg, "xfs-log-internal")
    # a stat pass of its own goes on with the files the create made, in the order its seed gives
    args = journal.worker_args(tmp_path, job, "stat:rand", 7)
    assert args[args.index("--phases") + 1] == "stat:rand" and args[args.index("--seed") + 1] == "7"
    assert "--allow-existing" in args
    create = journal.worker_args(tmp_path, job_for(cfg, "xfs-log-internal", "meta-syncfs"), "create:seq,open:rand")
    assert create[-2:] == ["--sync", "end"] and "--allow-existing" not in create
    jobs = journal.jobs(cfg)
    # the stat's claims are the original create's: its runs carry the reference, the durable ones not
    assert {j["point"] for j in jobs if j.get("stat_reference")} == {"meta"}
    assert all(j.get("stat_reference") for j in jobs if j["point"] == "meta")
    cfg["studies"]["journal"]["stat_reference"] = False
    assert not any(j.get("stat_reference") for j in journal.jobs(cfg))


def test_a_durability_the_study_does_not_know_is_refused():
    from boatload.studies.config import validate
    from boatload.base.errors import ConfigError
    cfg = config("ci.yaml")
    cfg["studies"]["journal"]["durability"] = ["none", "fdatasync"]
    with pytest.raises(ConfigError, match="journal.durability"):
        validate(cfg)


def test_passes_merge_into_one_phase_with_their_counts_added_up():
    def phase(label, ops, seconds, p50, p99, writes):
        return {"phase": label, "name": label, "order": "random", "ops": ops, "seconds": seconds,
                "ops_per_s": ops / seconds, "p50_us": p50, "p99_us": p99, "cpu_user_s": 0.1, "cpu_sys_s": 0.2,
                "model": {"writes": writes, "flushes": 1, "modelled_ms": 0.5, "reads": 2, "read_kib": 4.0 * writes,
                          "mean_read_kib": 2.0 * writes},
                "log_model": None, "loop": None, "log_loop": None}
    merged = journal.merged_passes([
        phase("random_open", 10, 1.0, 1.0, 2.0, 0),
        phase("random_stat", 10, 1.0, 1.0, 3.0, 1), phase("random_stat", 10, 4.0, 2.0, 9.0, 2),
        phase("random_stat", 10, 1.0, 5.0, 4.0, 3),
        phase("random_read", 10, 2.0, 1.0, 2.0, 0),
    ])
    assert [m["phase"] for m in merged] == ["random_open", "random_stat", "random_read"]
    assert [m["passes"] for m in merged] == [1, 3, 1]
    stat = merged[1]
    # the fastest pass's rate (10 in 1 s); the rate over all passes (30 in 6 s) beside it, not the
    # mean of their rates (6.5/s)
    assert stat["ops"] == 30 and stat["seconds"] == 6.0 and stat["ops_per_s"] == 10.0
    assert stat["ops_per_s_all_passes"] == 5.0
    assert stat["p50_us"] == 2.0 and stat["p99_us"] == 9.0
    assert stat["cpu_user_s"] == pytest.approx(0.3) and stat["cpu_sys_s"] == pytest.approx(0.6)
    # counts added up; the mean read worked out again from the sums (24 KiB over 6 reads), not added up
    assert stat["model"] == {"writes": 6, "flushes": 3, "modelled_ms": 1.5, "reads": 6, "read_kib": 24.0,
                             "mean_read_kib": 4.0} and stat["log_model"] is None
    assert merged[0] == {**phase("random_open", 10, 1.0, 1.0, 2.0, 0), "passes": 1, "ops_per_s_all_passes": 10.0}


def _tidy(docs, tmp_path):
    raw = []
    for i, doc in enumerate(docs):
        path = tmp_path / f"raw{i}.json"
        path.write_text(json.dumps(doc))
        raw.append(path)
    return tidy("journal", raw, tmp_path / "journal.parquet")


@root
def test_a_ci_job_on_xfs_measures_the_five_phases(study_scratch, tmp_path):
    cfg = config("ci.yaml")
    job = job_for(cfg, "xfs-log-internal")
    doc = journal.run(job)
    assert doc["result"]["status"] == "ok", doc["result"]["reason"]
    assert doc["result"]["worker_result"]["workload"] == "meta"
    assert doc["target_provenance"]["kernel_fs"] == "xfs"
    rows = journal.rows(doc)
    assert [r["phase"] for r in rows] == PHASES
    passes = cfg["studies"]["journal"]["stat_passes"]
    assert passes > 1
    for r in rows:
        # the stat's passes are one phase: every pass's operations and seconds in it
        assert r["passes"] == (passes if r["phase"] == "random_stat" else 1)
        assert r["ops"] == r["passes"] * r["files"] and r["files"] == cfg["studies"]["journal"]["files"]
        assert r["ops_per_s_all_passes"] == pytest.approx(r["ops"] / r["seconds"])
        assert r["ops_per_s"] > 0 and r["seconds"] > 0 and r["p99_us"] >= r["p50_us"] > 0
        assert r["status"] == "ok" and r["log"] == "internal" and r["flushes"] == "honoured"
    assert "sequential_create" in journal.summary(doc)
    stat = [ph for ph in doc["result"]["worker_result"]["phases"] if ph["name"] == "stat"]
    stat_row = rows[PHASES.index("random_stat")]
    assert len(stat) == passes and stat_row["seconds"] == pytest.approx(sum(ph["seconds"] for ph in stat))
    # the stat's rate is its fastest pass's; every other phase is one pass
    assert stat_row["ops_per_s"] == pytest.approx(max(ph["ops_per_s"] for ph in stat))
    assert stat_row["ops_per_s"] >= stat_row["ops_per_s_all_passes"]
    assert all(r["ops_per_s"] == r["ops_per_s_all_passes"] for r in rows if r["phase"] != "random_stat")
    # with stat_reference (the ci config's), each lone target pass is followed by one paired file by file
    # with as many cached files on a tmpfs of the run's own, watched by the monitor as a measured phase
    ref = doc["result"]["stat_reference"]
    assert job["stat_reference"] and ref["where"] == "tmpfs" and ref["files"] == job["files"]
    assert len(ref["passes"]) == passes and all(p["seconds"] > 0 and p["pair_seconds"] > 0 for p in ref["passes"])
    watched = [ph["phase"] for ph in doc["interference"]["phases"] if ph["measured"]]
    assert watched == ["create", "open", *["stat"] * (2 * passes), "read", "delete"]
    # the run's number: the target's rate over the reference's, median of the paired passes
    ratios = [p["pair_seconds"] / p["seconds"] for p in ref["passes"]]
    assert stat_row["stat_vs_reference"] == pytest.approx(statistics.median(ratios))
    assert all(r["stat_vs_reference"] is None for r in rows if r["phase"] != "random_stat")
    # a stat of a cached file costs XFS about what it costs a tmpfs
    assert 0.2 < stat_row["stat_vs_reference"] < 5
    assert "stat-reference" not in Path("/proc/mounts").read_text()  # its tmpfs torn down with the run
    # a run kept from before the passes merged this way is tabled from the worker's record as the
    # new ones are, not from the merged phases it stored
    old = copy.deepcopy(doc)
    for ph in old["result"]["phases"]:
        ph["ops_per_s"] = 1.0
    assert journal.rows(old) == rows

    table = _tidy([doc], tmp_path)
    assert dict(table.schema) == schema("journal")  # the study's columns and the run's interference columns
    assert table.height == 5 and table["phase"].to_list() == PHASES
    assert pl.read_parquet(tmp_path / "journal.parquet").equals(table)


@root
def test_external_log_and_dropped_flushes_are_labelled(study_scratch):
    cfg = config("ci.yaml")
    if "log" not in targetspec.FIELDS:
        pytest.skip("boatload.provision.targets does not take `log`/`write_cache` yet")
    for name, log, flushes in (("ext4-journal-external", "external", "honoured"),
                               ("xfs-log-internal-noflush", "internal", "dropped")):
        doc = journal.run(job_for(cfg, name))
        assert doc["result"]["status"] == "ok", doc["result"]["reason"]
        rows = journal.rows(doc)
        assert {(r["log"], r["flushes"], r["status"]) for r in rows} == {(log, flushes, "ok")}
        assert all(r["ops_per_s"] > 0 for r in rows)


@root
def test_a_modelled_run_records_what_reached_the_model(study_scratch):
    """The model's counts over the run, in its provenance: with the write
    cache off no flush reaches the array; with a log on the SSD the log's
    flushes and the time the model charged for them are there to explain a
    ratio."""
    cfg = config("ci.yaml")
    docs = {name: journal.run(job_for(cfg, name))
            for name in ("xfs-raid-log-internal", "xfs-raid-log-internal-noflush", "xfs-raid-log-ssd")}
    for doc in docs.values():
        assert doc["result"]["status"] == "ok", doc["result"]["reason"]
    model = docs["xfs-raid-log-internal-noflush"]["target_provenance"]["model"]
    noflush, attached = model["counts"], model["counts_at_attach"]
    # after the attach (whose close of the FUSE file nbdfuse made a flush): none, mkfs and the run included
    assert noflush["flushes"] == attached["flushes"] and noflush["fua_writes"] == 0
    assert noflush["writes"] > attached["writes"]
    ssd = docs["xfs-raid-log-ssd"]["target_provenance"]
    # XFS's log writes are flushes or FUA writes (a cache flush first, the
    # record written through), on the log device
    assert ssd["log_model"]["counts"]["flushes"] + ssd["log_model"]["counts"]["fua_writes"] > 0
    assert ssd["log_model"]["counts"]["modelled_us"] > 0 and ssd["model"]["counts"]["writes"] > 0
    _check_phase_counts(docs)


def _check_phase_counts(docs):
    """Each phase's model counts (read live at its edges): within the run's,
    none from the write-through array, none on a device that is not modelled."""
    for name, doc in docs.items():
        phases, prov = doc["result"]["phases"], doc["target_provenance"]
        assert [p["phase"] for p in phases] == PHASES
        for dev in ("model", "log_model"):
            if prov.get(dev) is None:
                assert all(p[dev] is None for p in phases), (name, dev)
                continue
            run = {k: prov[dev]["counts"][k] - prov[dev]["counts_at_attach"][k] for k in ("flushes", "flush_us")}
            assert all(p[dev]["flushes"] >= 0 and p[dev]["modelled_ms"] >= p[dev]["flush_ms"] >= 0 for p in phases)
            assert sum(p[dev]["flushes"] for p in phases) <= run["flushes"], (name, dev)
            assert sum(p[dev]["flush_ms"] for p in phases) <= run["flush_us"] / 1000 + 0.01, (name, dev)
        rows = journal.rows(doc)
        assert [r["model_flushes"] for r in rows] == [p["model"]["flushes"] for p in phases]
    noflush = docs["xfs-raid-log-internal-noflush"]["result"]["phases"]
    assert all(p["model"]["flushes"] == 0 and p["model"]["flush_ms"] == 0 for p in noflush)
    # the counts are current, not the stats file's as of the last flush (which a
    # write-through array never sends): the create reads what mkfs left
    assert noflush[0]["model"]["reads"] + noflush[0]["model"]["writes"] > 0 and noflush[0]["model"]["modelled_ms"] > 0
    # 1,000 creates on today's XFS: no flush reaches the array with barriers,
    # nor a write the SSD log, during the phase (the log stays in memory until
    # a later log force; measured: 0 of 0 at 1,000 and at 20,000 files)
    for name, dev in (("xfs-raid-log-internal", "model"), ("xfs-raid-log-ssd", "log_model")):
        create = docs[name]["result"]["phases"][0][dev]
        assert create["flushes"] == 0 and create["fua_writes"] == 0, (name, create)
    assert docs["xfs-raid-log-ssd"]["result"]["phases"][0]["log_model"]["writes"] == 0


@root
def test_durable_creates_reach_the_external_log_in_the_timed_phase(study_scratch):
    """On this machine's loop devices (block-layer counts read at the phase's
    edges): a create ended by a syncfs sends the external log writes and a
    flush before its clock stops (XFS writes its log with a cache flush
    first); an fsync per file forces the log once per file, so the log
    receives at least one flush per file; a device reporting a write-through
    cache receives no flush in any phase, whatever syncs. The original's
    create is not asserted on: another process's sync(2) may write it back
    during the phase (alone on the machine we measured 0 writes and 0
    flushes on the log at 1,000 files)."""
    cfg = config("ci.yaml")
    files = journal.settings(cfg, journal.STUDY)
    docs = {(name, point): journal.run(job_for(cfg, name, point))
            for name, point in (("xfs-log-external", "meta"), ("xfs-log-external", "meta-syncfs"),
                                ("xfs-log-external", "meta-fsync"), ("xfs-log-internal-noflush", "meta-fsync"))}
    for doc in docs.values():
        assert doc["result"]["status"] == "ok", doc["result"]["reason"]
    create = {k: doc["result"]["phases"][0] for k, doc in docs.items()}
    plain = create[("xfs-log-external", "meta")]
    assert plain["log_loop"] is not None and plain["loop"] is not None  # counted, whatever they are
    synced = create[("xfs-log-external", "meta-syncfs")]
    assert synced["log_loop"]["writes"] > 0 and synced["log_loop"]["flushes"] > 0, synced["log_loop"]
    fsynced = create[("xfs-log-external", "meta-fsync")]
    assert fsynced["ops"] == files["fsync_files"]
    assert fsynced["log_loop"]["flushes"] >= files["fsync_files"], fsynced["log_loop"]
    assert fsynced["loop"]["writes"] >= files["fsync_files"]  # each file's data, on the data device
    through = docs[("xfs-log-internal-noflush", "meta-fsync")]["result"]["phases"]
    assert through[0]["loop"]["writes"] >= files["fsync_files"]
    assert all(p["loop"]["flushes"] == 0 for p in through) and all(p["log_loop"] is None for p in through)
    rows = journal.rows(docs[("xfs-log-external", "meta-fsync")])
    assert {r["durability"] for r in rows} == {"fsync"}
    assert rows[0]["log_loop_flushes"] == fsynced["log_loop"]["flushes"]


def test_without_root_the_job_is_skipped_with_the_reason(study_scratch, monkeypatch, tmp_path):
    monkeypatch.setattr(targets, "is_root", lambda: False)
    doc = journal.run(job_for(config("ci.yaml"), "xfs-log-internal"))
    assert doc["result"]["status"] == "skipped"
    assert "not root" in doc["result"]["reason"] and "needs root" in doc["result"]["reason"]
    assert doc["target_provenance"] is None
    assert not Path(study_scratch, "images").exists() or not any(Path(study_scratch, "images").iterdir())
    table = _tidy([doc], tmp_path)
    assert dict(table.schema) == schema("journal")  # the study's columns and the run's interference columns
    assert table["status"].to_list() == ["skipped"] * 5
    assert table["ops_per_s"].null_count() == 5
    assert all("not root" in r for r in table["reason"])
