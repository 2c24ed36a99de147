"""The job runner without root: a stand-in directory, said so, or a skip with the reason."""

import pytest

from boatload.measure import runner
from boatload.provision import targets
from boatload.studies import forest
from boatload.analysis.tidy import tidy


@pytest.fixture
def not_root(monkeypatch, tmp_path, worker):
    monkeypatch.setattr(targets, "is_root", lambda: False)
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("BOATLOAD_WORKER", str(worker))


def job(method="worker-1t"):
    return {
        "study": "forest", "scale": "ci", "point": method, "method": method, "rep": 1,
        "target": {"name": "ext4", "kind": "loop", "fs": "ext4", "size_mb": 64},
        "shape": [2, 50], "time_cap_s": 1, "seed": 1,
    }


def test_without_root_forest_measures_a_plain_directory_and_says_so(not_root, tmp_path):
    doc = forest.run(job())
    assert doc["target"]["kind"] == "dir"
    assert "not root" in doc["target"]["substituted"]
    assert doc["result"]["status"] == "ok" and doc["result"]["files"] == 100
    # The tidy table does not pass the stand-in off as ext4.
    path = tmp_path / "raw.json"
    import json

    path.write_text(json.dumps(doc))
    table = tidy("forest", [path], tmp_path / "forest.parquet")
    assert table["status"].to_list() == ["skipped"]
    assert "not root" in table["reason"][0]


def test_without_root_a_study_that_needs_mounts_is_skipped_with_the_reason(not_root):
    measured = []
    doc = runner.run_job("journal", job(), lambda p, j: measured.append(p), fallback_without_root=False)
    assert measured == []
    assert doc["result"]["status"] == "skipped"
    assert "needs root" in doc["result"]["reason"]
    assert doc["target_provenance"] is None
    assert doc["seconds"] is None  # nothing was provisioned or measured


def test_a_run_records_where_its_wall_time_went(not_root):
    import time

    start = time.monotonic()
    doc = forest.run(job())
    wall = time.monotonic() - start
    steps = doc["seconds"]
    assert set(steps) == {"provision", "measure", "teardown"} and all(s >= 0 for s in steps.values())
    assert sum(steps.values()) <= wall
    timed = sum(p["seconds"] for p in doc["interference"]["phases"])
    assert 0 < timed <= steps["measure"]
