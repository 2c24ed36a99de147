"""What a tmpfs test's phases sent a modelled disk: the per-phase counts
(boatload.provision.devmodel.phasecounts) summed over a test's phases and kept
in the tidy table's model_* columns, on a real run on the modelled disk. (What
the notebook and the paper say of them: tests/test_notebook_tmpfs.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from boatload.provision.devmodel import phasecounts
from boatload.provision.devmodel.phasecounts import delta
from boatload.studies import tmpfs as tmpfs_study

REPO = Path(__file__).resolve().parents[1]


def live(reads, seq, read_bytes, read_us, writes=0, flushes=0) -> dict:
    return {"reads": reads, "writes": writes, "flushes": flushes, "fua_writes": 0, "cache_read_hits": 0,
            "extents_written": 0, "modelled_us": read_us, "flush_us": 0.0, "size": 1 << 30,
            "read_bytes": read_bytes, "write_bytes": 4096 * writes, "seq_reads": seq, "read_us": read_us}


def block(reads, sectors, busy_ms, queue_ms) -> dict:
    return {"reads": reads, "writes": 0, "flushes": 0, "read_sectors": sectors, "busy_ms": busy_ms,
            "queue_ms": queue_ms}


def test_a_phase_delta_has_the_models_requests_and_the_loop_devices_queue():
    m = delta(live(10, 2, 10 * 4096, 1000.0), live(30, 7, 10 * 4096 + 20 * 65536, 21000.0, writes=3))
    assert (m["reads"], m["seq_reads"], m["writes"], m["read_ms"]) == (20, 5, 3, 20.0)
    assert (m["read_kib"], m["mean_read_kib"]) == (20 * 64, 64.0)
    lp = delta(block(10, 80, 100, 100), block(30, 80 + 20 * 128, 300, 700))
    assert lp == {"reads": 20, "writes": 0, "flushes": 0, "read_sectors": 20 * 128, "busy_ms": 200, "queue_ms": 600,
                  "read_kib": 1280.0, "mean_read_kib": 64.0, "queue_depth": 3.0}
    assert delta(block(0, 0, 5, 5), block(0, 0, 5, 5))["queue_depth"] is None  # idle: no depth to speak of
    assert delta({}, lp) is None  # the stack was gone at the phase's start


def test_a_tests_requests_sum_its_phases():
    """bonnie's read is the worker's stat and read phases: their counts add,
    the queue depth weighted by each phase's busy time."""
    stat = {"model_counts": {"model": {"reads": 4, "seq_reads": 0, "read_kib": 16.0, "read_ms": 40.0, "writes": 1},
                             "loop": {"reads": 4, "read_kib": 16.0, "busy_ms": 100, "queue_ms": 100}}}
    read = {"model_counts": {"model": {"reads": 16, "seq_reads": 4, "read_kib": 1024.0, "read_ms": 200.0, "writes": 2},
                             "loop": {"reads": 16, "read_kib": 1024.0, "busy_ms": 300, "queue_ms": 900}}}
    r = phasecounts.requests([stat, read])
    assert r == {"model_reads": 20, "model_seq_reads": 4, "model_read_kib": 1040.0, "model_read_ms": 240.0,
                 "model_writes": 3, "loop_reads": 20, "loop_read_kib": 1040.0, "loop_queue_depth": 2.5}
    # this machine's disk: the loop device's counts only
    plain = [{"model_counts": {"loop": p["model_counts"]["loop"]}} for p in (stat, read)]
    assert phasecounts.requests(plain) == {"loop_reads": 20, "loop_read_kib": 1040.0, "loop_queue_depth": 2.5}
    assert phasecounts.requests([stat, {"model_counts": None}]) is None  # a phase without counts
    assert set(phasecounts.REQUESTS) == set(r) and set(phasecounts.REQUESTS) <= set(tmpfs_study.COLUMNS)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/fuse"), reason="needs root and /dev/fuse")
def test_a_run_on_the_modelled_disk_keeps_what_each_phase_sent_it(study_scratch):
    """The quick config's ext3-hdd beyond its limit, with files of up to 1 MB
    (a fifth as many): every worker phase has the model's and the loop
    device's counts, and the read tests' rows say what reached the disk."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["studies"]["tmpfs"]["size_max"] = 1_000_000
    job = next(j for j in tmpfs_study.jobs(cfg) if j["target"]["name"] == "ext3-hdd" and j["working_set"] > 1)
    doc = tmpfs_study.run(job)
    r = doc["result"]
    assert r["status"] == "ok", r["reason"]
    phases = r["tools"]["worker"]["worker_result"]["phases"]
    assert phases and all(ph["model_counts"]["model"] and ph["model_counts"]["loop"] for ph in phases)
    rows = {row["test"]: row for row in tmpfs_study.rows(doc)}
    for test in ("sequential_read", "random_read"):
        row = rows[test]
        assert row["model_reads"] >= row["loop_reads"] > 0, row  # each loop request reached the model
        assert 0 <= row["model_seq_reads"] < row["model_reads"], row
        assert row["model_read_kib"] >= 4 * row["model_reads"] and row["loop_queue_depth"] >= 1, row
        # the model's reads took time within the test's (a few may have been queued before it began)
        assert 0 < row["model_read_ms"] / 1000 <= row["seconds"] * 1.05, row
    assert rows["sequential_create"]["model_writes"] > 0
