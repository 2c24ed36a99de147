"""boatload.measure.worker.run_worker: the worker's document comes back through a folder of the scratch's
own, gone after the call, and swept by `boatload cleanup` when the calling process was killed first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from boatload.measure.worker import run_worker
from boatload.provision.cleanup import cleanup
from conftest import ROOT


def worker_dirs(scratch):
    return sorted((scratch / "dirs").glob("worker-*")) if (scratch / "dirs").exists() else []


def test_the_document_comes_back_and_its_folder_is_gone(worker, tmp_path, monkeypatch):
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(tmp_path / "scratch"))
    (tmp_path / "data").mkdir()
    doc = run_worker("seqio", ["--dir", str(tmp_path / "data"), "--file", "f", "--mode", "write", "--size", "1M",
                               "--block", "64K"])
    assert doc["status"] == "ok" and doc["phases"][0]["bytes"] == 1 << 20
    assert worker_dirs(tmp_path / "scratch") == []


def test_a_killed_caller_leaves_its_folder_to_cleanup(worker, shm_dir, tmp_path):
    """SIGKILL to the process inside run_worker (and to its worker): the folder, named with the dead pid,
    stays in the scratch's dirs/ until `boatload cleanup` removes it."""
    scratch = tmp_path / "scratch"
    code = ("import sys; from boatload.measure.worker import run_worker; "
            "run_worker('seqio', ['--dir', sys.argv[1], '--file', 'f', '--mode', 'write', '--size', '1M', "
            "'--block', '4K', '--runs', '10000'])")
    proc = subprocess.Popen([sys.executable, "-c", code, str(shm_dir)], start_new_session=True, cwd=ROOT,
                            env={**os.environ, "BOATLOAD_SCRATCH": str(scratch)})
    try:
        deadline = time.monotonic() + 30
        while not worker_dirs(scratch):
            assert proc.poll() is None and time.monotonic() < deadline, "run_worker made no folder"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    [left] = worker_dirs(scratch)
    assert left.name.startswith(f"worker-{proc.pid}-")
    actions = cleanup(scratch)
    assert f"removed directory {left}" in actions
    assert worker_dirs(scratch) == []
