"""The journal study: its jobs, one real run on a ci-sized xfs target, the tidy table, no root."""

import json
import os
from pathlib import Path

import polars as pl
import pytest
import yaml

from boatload import targets, targetspec
from boatload.studies import journal
from boatload.tidy import schema, tidy
from conftest import ROOT

root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
PHASES = ["sequential_create", "random_open", "random_stat", "random_read", "sequential_delete"]


def config(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


def job_for(cfg, target):
    return next(j for j in journal.jobs(cfg) if j["target"]["name"] == target and j["rep"] == 1)


@pytest.mark.parametrize("name", ["ci.yaml", "config.yaml", "full.yaml"])
def test_jobs_one_per_target_and_repetition(name):
    cfg = config(name)
    study = cfg["studies"]["journal"]
    jobs = journal.jobs(cfg)
    reps = study.get("repetitions", cfg["repetitions"])
    assert len(jobs) == len(study["targets"]) * reps
    keys = {(j["target"]["name"], j["point"], j["rep"]) for j in jobs}
    assert len(keys) == len(jobs)
    for j in jobs:
        # the target spec is passed through untouched (write_cache, log: provision's business)
        assert {k: v for k, v in j["target"].items() if k != "name"} == cfg["targets"][j["target"]["name"]]
        own = {**study, **study.get("per_target", {}).get(j["target"]["name"], {})}  # a target's own settings
        assert j["files"] == own["files"] and j["point"] == "meta"
    labels = {(journal.log_placement(j["target"]), journal.flushes(j["target"])) for j in jobs}
    assert labels == {("internal", "honoured"), ("internal", "dropped"), ("external", "honoured")}


def test_worker_arguments_are_the_originals_five_steps(tmp_path):
    job = job_for(config("ci.yaml"), "xfs-log-internal")
    args = journal.worker_args(tmp_path, job)
    assert args[args.index("--phases") + 1] == "create:seq,open:rand,stat:rand,read:rand,delete:seq"
    assert args[args.index("--dirs") + 1] == "0"  # one flat directory, as the original
    assert args[args.index("--size") + 1] == "1024"


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
    for r in rows:
        assert r["ops"] == r["files"] == cfg["studies"]["journal"]["files"]
        assert r["ops_per_s"] > 0 and r["seconds"] > 0 and r["p99_us"] >= r["p50_us"] > 0
        assert r["status"] == "ok" and r["log"] == "internal" and r["flushes"] == "honoured"
    assert "sequential_create" in journal.summary(doc)

    table = _tidy([doc], tmp_path)
    assert dict(table.schema) == schema("journal")  # the study's columns and the run's interference columns
    assert table.height == 5 and table["phase"].to_list() == PHASES
    assert pl.read_parquet(tmp_path / "journal.parquet").equals(table)


@root
def test_external_log_and_dropped_flushes_are_labelled(study_scratch):
    cfg = config("ci.yaml")
    if "log" not in targetspec.FIELDS:
        pytest.skip("boatload.targets does not take `log`/`write_cache` yet")
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
