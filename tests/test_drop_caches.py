"""A study's `drop_caches`: as root, the page cache is synced and dropped
right before each measured phase that reads (outside the timed window), and
each phase's cache state says so; the phases that only write are left warm.
Without it the jobs are as they were (no new field), and without root the
preflight refuses it naming the field."""

from __future__ import annotations

import yaml

from boatload.workflow import plan, preflight
from boatload.studies import journal
from conftest import ROOT, ours_left
from targetlib import root


def ci(drop: bool | None) -> dict:
    config = yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())
    entry = {**config["studies"]["journal"], "targets": ["ext4-journal-internal"]}
    if drop is not None:
        entry["drop_caches"] = drop
    config["studies"] = {"journal": entry}
    return config


def test_the_setting_adds_a_field_only_when_on():
    assert all("drop_caches" not in j for j in journal.jobs(ci(None)))
    assert all("drop_caches" not in j for j in journal.jobs(ci(False)))
    assert all(j["drop_caches"] is True for j in journal.jobs(ci(True)))


def test_without_root_the_preflight_refuses_it(tmp_path):
    config = ci(True)
    report = preflight.check(config, plan.runs(config), tmp_path / "scratch", tmp_path, euid=1000)
    assert report.problems == []  # journal is skipped without root: nothing of it is measured
    config["studies"] = {"forest": {**yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())["studies"]["forest"],
                                    "drop_caches": True}}
    report = preflight.check(config, plan.runs(config), tmp_path / "scratch", tmp_path, euid=1000)
    assert report.problems == ["studies.forest.drop_caches: needs root (writing /proc/sys/vm/drop_caches); "
                               "set it to false or run as root"]


@root
def test_caches_are_dropped_before_the_reading_phases(tmp_path, worker, monkeypatch):
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("BOATLOAD_WORKER", str(worker))
    job = {**journal.jobs(ci(True))[0], "interference": {"redo": 0}}
    doc = journal.run(job)
    assert doc["result"]["status"] == "ok", doc["result"].get("reason")
    # every measured phase, the stat's passes and (the ci config's stat_reference) its reference's each one
    records = [r for r in doc["interference"]["phases"] if r["measured"]]
    reading = {r["phase"] for r in records if r["phase"].endswith(("open", "stat", "read"))}
    assert reading == {"open", "stat", "read"}, records
    for r in records:
        dropped, state = r["phase"] in reading, r["cache"]
        assert state["caches_dropped"] is dropped, (r["phase"], state)
        assert state["state"] == ("cold" if dropped or state["file_system"] == "fresh" else "warm")
    # dropped means read from the device: stat reads inode tables, read the files' blocks, from the
    # target's loop device (an undropped run reads 0 MB there: all of it is still in the page cache);
    # a reference pass goes over a tmpfs and reads nothing there, so each phase's most
    read_mb = {}
    for r in records:
        read_mb[r["phase"]] = max(read_mb.get(r["phase"], 0.0), r["disk"]["target_read_mb"])
    assert all(read_mb[p] > 0 for p in reading if p.endswith(("stat", "read"))), read_mb
    assert sum(r["phase"] == "stat" for r in records) == 2 * job["stat_passes"] and job["stat_reference"]
    assert ours_left(tmp_path / "scratch") == []
