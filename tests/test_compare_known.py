"""A known answer for `boatload compare`: two ci-scale sets of real filecount
runs (random 4 KiB O_DIRECT reads, one thread, of one file on ext4), A on
the modelled hdd-7200 and B on the same model with twice its seek times, each
beside a plain loop ext4 target; everything else the same. The runs of A and
B alternate, so a change of the machine's load falls on both.

The model predicts B's rate over A's on the modelled target: a read there
costs the model's mean random-read time over the file's span of the image
(devmodel-calc random-read) plus the stack's own cost the run recorded."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

from boatload.analysis.compare import FASTER, INCONCLUSIVE, SAME, SLOWER, Settings
from boatload.analysis.compare_report import build
from boatload.analysis.compare_sets import open_set
from boatload.studies.config import validate
from boatload.provision.devmodel import native, presets
from boatload.base.results import save_result
from boatload.studies import study
from boatload.analysis.tidy import tidy
from conftest import ROOT, ours_left

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/fuse").exists(), reason="needs root and /dev/fuse")]

REPS = 4  # the fewest runs a side that give a 95 % interval
IMAGE_MB, FILE_MB = 64, 40  # the reads span most of the image, so the seek time weighs
SEEKS = ("seek_track_ms", "seek_avg_ms", "seek_full_ms")
MKFS = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]


def config(model) -> dict:
    c = yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())
    c["repetitions"] = REPS
    c["targets"] = {"ext4": {"kind": "loop", "fs": "ext4", "size_mb": IMAGE_MB, "mkfs_options": MKFS},
                    "ext4-hdd": {"kind": "loop", "fs": "ext4", "size_mb": IMAGE_MB, "mkfs_options": MKFS,
                                 "model": model}}
    c["studies"] = {"filecount": {"targets": ["ext4", "ext4-hdd"], "files": [1], "file_size_mb": FILE_MB,
                                  "threads": 1, "xfer": 4096, "read_pct": 100, "duration_s": 0.5,
                                  "interval_s": 0.1, "modes": ["direct"], "peers": []}}
    return validate(c)


SLOW = {"preset": "hdd-7200", **{k: 2 * presets.presets()["hdd-7200"][k] for k in SEEKS}}


@pytest.fixture(scope="module")
def sets(tmp_path_factory, worker):
    tmp = tmp_path_factory.mktemp("known")
    mp = pytest.MonkeyPatch()
    mp.setenv("BOATLOAD_WORKER", str(worker))
    mp.setenv("BOATLOAD_SCRATCH", str(tmp / "scratch"))
    s = study("filecount")
    docs = {"a": [], "b": []}
    try:
        for ja, jb in zip(s.jobs(config("hdd-7200")), s.jobs(config(copy.deepcopy(SLOW))), strict=True):
            for side, job in (("a", ja), ("b", jb)):
                doc = s.run(job)
                assert doc["result"]["status"] == "ok", doc["result"]["reason"]
                runs = tmp / side
                save_result(doc, runs / "filecount" / job["target"]["name"] / job["point"] / f"rep{job['rep']}.json",
                            runs)
                docs[side].append(doc)
    finally:
        mp.undo()
    assert ours_left(tmp) == []
    for side in docs:
        tidy("filecount", sorted((tmp / side / "filecount").rglob("rep*.json")), tmp / side / "filecount.parquet")
    return tmp / "a", tmp / "b", docs


def predicted_ratio(docs: dict) -> float:
    """B's rate over A's on the modelled target, by the model: 1 / (mean read time), each side."""
    cost = {}
    for side, ds in docs.items():
        d = next(x for x in ds if x["job"]["target"]["name"] == "ext4-hdd")
        model = d["target_provenance"]["model"]
        params = {k: v for k, v in model["parameters"].items()}
        size = d["target_provenance"]["image_size_bytes"]
        cost[side] = (native.expect_random_read_us(params, size, FILE_MB / IMAGE_MB, 4096)
                      + model["stack_cost_us"]["stack_us"])
    return cost["a"] / cost["b"]


def test_twice_the_seek_time_is_slower_by_what_the_model_predicts(sets):
    a, b, docs = sets
    doc = build(open_set(str(a)), open_set(str(b), arg="B"), Settings())
    by_target = {p["target"]: p for p in doc["points"]}
    assert set(by_target) == {"ext4", "ext4-hdd"} and not doc["only_a"] and not doc["only_b"]
    hdd, plain = by_target["ext4-hdd"], by_target["ext4"]
    expected = predicted_ratio(docs)
    assert expected < 0.8  # the model itself says the change matters
    assert hdd["verdict"] == SLOWER, hdd
    assert hdd["low"] <= expected <= hdd["high"], (expected, hdd)
    assert plain["verdict"] in (SAME, INCONCLUSIVE), plain
    # what differs: the three seek times of the modelled target, and nothing of the method
    differs = {(d["section"], d["key"]) for d in doc["provenance"]["differs"]}
    assert {("target ext4-hdd", f"model {k}") for k in SEEKS} <= differs
    assert not any(section == "target ext4" for section, _ in differs)
    assert doc["threats"] == []


def test_a_real_set_compared_with_itself(sets):
    a, _, _ = sets
    doc = build(open_set(str(a)), open_set(str(a), arg="B"), Settings())
    assert len(doc["points"]) == 2
    assert {p["verdict"] for p in doc["points"]} <= {SAME, INCONCLUSIVE}
    assert not any(p["verdict"] in (FASTER, SLOWER) for p in doc["points"])
    assert doc["provenance"]["differs"] == []
