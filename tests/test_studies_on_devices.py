"""The forest and journal studies at ci scale on `kind: device` targets: loop
devices attached to sparse images in the test's own directory stand in for a
user's disks, the journal's with its log on a second device (`log.device`,
the original's SSD log). Tidy rows ok, the provenance carries the device's
sysfs facts, and nothing is left mounted or attached but what the test
attached itself (which it detaches)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from boatload.publish.provenance import gather
from boatload.studies import forest, journal
from boatload.analysis.tidy import tidy
from conftest import ROOT
from devicelib import identity, loop_devices, signatures
from targetlib import root

pytestmark = root


def ci_config() -> dict:
    return yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())


def run_all(module, cfg, tmp_path, study: str):
    docs, raw = [], []
    for i, job in enumerate(module.jobs(cfg)):
        job["interference"] = {"redo": 0}  # a shared machine: one attempt each keeps CI short
        doc = module.run(job)
        assert doc["result"]["status"] == "ok", doc["result"].get("reason")
        path = tmp_path / f"{study}-{i}.json"
        path.write_text(json.dumps(doc))
        docs.append(doc)
        raw.append(path)
    return docs, raw, tidy(study, raw, tmp_path / f"{study}.parquet")


def test_forest_at_ci_scale_on_a_device(study_scratch, tmp_path):
    cfg = ci_config()
    with loop_devices(tmp_path, 256) as (disk,):
        cfg["targets"] = {"mydisk": {"kind": "device", "fs": "ext4", "device": disk,
                                     "mkfs_options": ["-E", "lazy_itable_init=0,lazy_journal_init=0"]}}
        cfg["studies"] = {"forest": {**cfg["studies"]["forest"], "targets": ["mydisk"],
                                     "methods": ["worker-1t", "python"], "scale_files": [1000]}}
        docs, raw, table = run_all(forest, cfg, tmp_path, "forest")
        assert len(docs) == 3 and set(table["status"].to_list()) == {"ok"}
        assert set(table["target"].to_list()) == {"mydisk"} and set(table["filesystem"].to_list()) == {"ext4"}
        facts = docs[0]["target_provenance"]["device"]
        assert facts["identity"] == identity(disk) and facts["size_bytes"] == 256 << 20
        sys_queue = Path(f"/sys/block/{Path(disk).name}/queue")
        assert facts["logical_block_size"] == int((sys_queue / "logical_block_size").read_text())
        assert facts["scheduler"] is not None or "[" not in (sys_queue / "scheduler").read_text()
        assert docs[0]["target_provenance"]["mount_source"] == disk
        # the interference record counts the I/O on the user's device as the target's
        created = docs[0]["interference"]["phases"][0]["disk"]
        assert created["target_device"] == Path(disk).name
        prov = gather(raw, "config/ci.yaml", "ci")
        (t,) = prov["targets"]
        assert t["kind"] == "device" and t["hardware"]["identity"] == identity(disk)
        assert t["on"].startswith(f"device loop device on {tmp_path / 'disk0.img'}, 256 MiB, ")
        assert signatures(disk) == ""  # every run left it blank


def test_journal_at_ci_scale_with_the_log_on_a_second_device(study_scratch, tmp_path):
    cfg = ci_config()
    with loop_devices(tmp_path, 320, 64) as (data, log):
        cfg["targets"] = {"raid-with-ssd-log": {"kind": "device", "fs": "xfs", "device": data, "log": {"device": log}}}
        cfg["studies"] = {"journal": {**cfg["studies"]["journal"], "targets": ["raid-with-ssd-log"]}}
        docs, raw, table = run_all(journal, cfg, tmp_path, "journal")
        # five phases a run, a run per create the ci config asks for (the original's and the durable ones)
        creates = {journal.durability(j) for j in journal.jobs(cfg)}
        assert len(docs) == len(creates) and table.height == 5 * len(docs)
        assert set(table["status"].to_list()) == {"ok"} and set(table["durability"]) == creates
        assert set(table["log"].to_list()) == {"external"}
        tp = docs[0]["target_provenance"]
        assert tp["log_device"] == log and f"logdev={log}" in tp["mount_options"]
        assert tp["device"]["identity"] == identity(data) and tp["log_device_facts"]["identity"] == identity(log)
        assert docs[0]["result"].get("log_placement", "external") == "external"
        assert signatures(data) == "" and signatures(log) == ""
