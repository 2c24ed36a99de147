"""Runs (`boatload run`, as Snakemake starts them) on modelled targets: an I/O
error in the middle of a run, from nbdkit's error filter on demand, fails that
run in one line, tears it down, keeps it under archive/failed, and leaves the
results of the other runs as they were."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, ours_left
from targetlib import SSD_ABOVE_FLOOR

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/fuse").exists(), reason="needs root and /dev/fuse")]


def run(workdir: Path, study: str, job: dict, out: Path, trigger_when: str | None = None) -> subprocess.CompletedProcess:
    """`boatload run`; with trigger_when, touch the modelled stack's fault file as soon
    as a process of that name runs under it."""
    argv = [sys.executable, "-m", "boatload.workflow.cli", "run", study, "--job", json.dumps(job), "--out", str(out),
            "--runs-dir", str(out.parent.parent)]
    proc = subprocess.Popen(argv, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if trigger_when:
        nbd = workdir / "results" / "scratch" / "nbd"
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            running = [p for p in _descendants(proc.pid) if _comm(p) == trigger_when]
            stacks = [d for d in nbd.iterdir() if d.is_dir() and not d.name.startswith("calibration")] if nbd.is_dir() else []
            if running and stacks:
                (stacks[0] / "fault").touch()
                break
            time.sleep(0.01)
    stdout, stderr = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _descendants(pid: int) -> list[str]:
    parent = {}
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
            parent[p] = stat[stat.rindex(")") + 2:].split()[1]
        except OSError:
            continue
    out, todo = [], [str(pid)]
    while todo:
        me = todo.pop()
        kids = [p for p, pp in parent.items() if pp == me]
        out += kids
        todo += kids
    return out


def _comm(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_an_io_error_mid_run_fails_that_run_alone(workdir, tmp_path):
    from boatload.studies import filecount

    config = yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())
    config["targets"] = {
        "plain": {"kind": "loop", "fs": "ext4", "size_mb": 64, "mkfs_options": ["-E", "lazy_itable_init=0,lazy_journal_init=0"]},
        "flaky": {"kind": "loop", "fs": "ext4", "size_mb": 64, "model": SSD_ABOVE_FLOOR,
                  "mkfs_options": ["-E", "lazy_itable_init=0,lazy_journal_init=0"],
                  "faults": {"read_rate": 1.0, "write_rate": 1.0, "trigger": True}},
    }
    config["studies"] = {"filecount": {**config["studies"]["filecount"], "targets": ["plain", "flaky"], "files": [1],
                                       "modes": ["direct"], "peers": [], "duration_s": 3, "threads": 2}}
    jobs = {j["target"]["name"]: {**j, "interference": {"redo": 0}} for j in filecount.jobs(config)}
    runs_dir = workdir / "data" / "runs" / "test"
    good = runs_dir / "filecount" / "plain.json"
    good.parent.mkdir(parents=True, exist_ok=True)
    r = run(workdir, "filecount", jobs["plain"], good)
    assert r.returncode == 0, r.stderr
    before = good.read_bytes()

    bad = runs_dir / "filecount" / "flaky.json"
    r = run(workdir, "filecount", jobs["flaky"], bad, trigger_when="boatload-worker")
    assert r.returncode == 1, (r.stdout, r.stderr)
    said = [line for line in r.stderr.splitlines() if line.startswith("boatload run: filecount")]
    assert len(said) == 1 and "failed: " in said[0] and "kept in " in said[0], r.stderr
    kept = Path(said[0].rsplit("(kept in ", 1)[1].rstrip(")"))
    assert "failed" in kept.parts and json.loads(kept.read_text())["result"]["status"] == "error"
    assert not bad.exists()
    assert good.read_bytes() == before
    assert ours_left(workdir) == []
    nbd = workdir / "results" / "scratch" / "nbd"
    assert not nbd.exists() or os.listdir(nbd) == []
