"""The interference record: real worker phases, a real CPU hog beside them, real redos."""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from boatload import interference
from boatload.tidy import run_columns

# One measurement job in a process of its own (so that a hog started by the
# test is another process, not part of the run): a tmpfs target (a plain
# directory without root), 0.6 s of random I/O by the worker on 2 threads.
JOB_SCRIPT = textwrap.dedent("""
    import json, sys
    from boatload.runner import run_job
    from boatload.worker import run_worker

    def measure(provisioned, job):
        d = provisioned.path / "io"
        d.mkdir()
        doc = run_worker("randio", ["--dir", str(d), "--files", "2", "--file-size", "2M", "--threads", "2",
                                    "--xfer", "4096", "--read-pct", "70", "--duration", "0.6"])
        return {"status": doc["status"], "reason": None, "worker_result": doc}

    job = json.loads(sys.argv[1])
    print(json.dumps(run_job("interference-test", job, measure)))
""")


def job(**interference_settings) -> dict:
    return {"target": {"name": "tmpfs", "kind": "tmpfs", "fs": "tmpfs", "size_mb": 64}, "point": "p", "rep": 1,
            "interference": {"max_other_cpu": 0.05, "redo": 2, **interference_settings}}


def start_job(tmp_path: Path, worker: Path, job: dict) -> subprocess.Popen:
    env = {**os.environ, "BOATLOAD_WORKER": str(worker), "BOATLOAD_SCRATCH": str(tmp_path / "scratch")}
    return subprocess.Popen([sys.executable, "-c", JOB_SCRIPT, json.dumps(job)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def start_hog(tmp_path: Path) -> subprocess.Popen:
    """A busy loop under a name of its own (comm comes from the executable's file name)."""
    hog = tmp_path / "cpuhog"
    if not hog.exists():
        hog.symlink_to("/bin/sh")
    return subprocess.Popen([str(hog), "-c", "while :; do :; done"])


def test_a_hog_beside_the_worker_is_found_and_the_run_redone(tmp_path, worker):
    hog = start_hog(tmp_path)
    try:
        time.sleep(0.2)
        proc = start_job(tmp_path, worker, job())
        said = []
        # The hog stops as soon as the run says it measures again: the redo is quiet.
        for line in proc.stderr:
            said.append(line)
            if "measuring again" in line:
                hog.kill()
        out, _ = proc.communicate(timeout=120)
    finally:
        hog.kill()
        hog.wait()
    assert proc.returncode == 0, "".join(said)
    doc = json.loads(out)
    record = doc["interference"]
    assert len(record["redone"]) == 1, record
    first = record["redone"][0]
    hogged = [p for p in first["interference"] if p["disturbed"]]
    assert [p["phase"] for p in hogged] == ["io"]  # prepare lays files out: never disturbed
    assert hogged[0]["top_others"][0]["comm"] == "cpuhog"
    assert hogged[0]["cpu_s"]["other_processes"] >= 0.3 * hogged[0]["seconds"]
    assert hogged[0]["competing_cores"] > 0.05
    assert "cpuhog" in first["why"] and "cpuhog" in "".join(said)
    # The kept attempt: quiet, on a fresh target, and its phases carry their records.
    assert record["disturbed"] is False
    io = [p for p in record["phases"] if p["phase"] == "io"]
    assert len(io) == 1 and io[0]["competing_cores"] <= 0.05
    assert all(p["comm"] != "cpuhog" for p in io[0]["top_others"])
    worker_io = next(p for p in doc["result"]["worker_result"]["phases"] if p["name"] == "io")
    assert worker_io["interference"] == io[0]
    assert run_columns(doc)["redone"] == 1 and run_columns(doc)["disturbed"] is False


def test_a_hog_that_stays_exhausts_the_redos_and_the_run_says_so(tmp_path, worker):
    hog = start_hog(tmp_path)
    try:
        time.sleep(0.2)
        proc = start_job(tmp_path, worker, job(redo=1))
        out, err = proc.communicate(timeout=120)
    finally:
        hog.kill()
        hog.wait()
    assert proc.returncode == 0, err
    record = json.loads(out)["interference"]
    assert len(record["redone"]) == 1 and record["disturbed"] is True
    assert "cpuhog" in record["why"]
    assert err.count("measuring again") == 1


def test_a_quiet_run_flags_nothing_and_accounts_for_the_machine(tmp_path, worker):
    proc = start_job(tmp_path, worker, job())
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    record = doc["interference"]
    assert record["redone"] == [] and record["disturbed"] is False, record["why"]
    phases = {p["phase"]: p for p in record["phases"]}
    assert set(phases) == {"prepare", "io"}
    io = phases["io"]
    assert io["measured"] and not phases["prepare"]["measured"]
    # the worker's two threads are the measurement: most of the machine's CPU in the phase
    assert io["cpu_s"]["measurement"] >= 0.5 * io["cpu_s"]["machine_busy"] > 0
    assert io["run_queue"]["samples"] >= 2 and io["run_queue"]["mean"] is not None
    if Path("/proc/pressure/cpu").exists():
        assert set(io["pressure"]) == {"cpu", "io", "memory"} and all(0 <= v <= 1.05 for v in io["pressure"].values())
    assert io["seconds"] >= 0.6
    assert phases["prepare"]["cache"]["file_system"] == "fresh" and io["cache"]["state"] == "warm"
    assert set(io["memory_at_start"]) == {"dirty_mb", "writeback_mb"}


def test_the_worker_waits_for_each_snapshot_outside_its_timed_window(tmp_path, worker):
    """The handshake itself: begin and end per phase, and the worker blocked until answered."""
    ours, theirs = socket.socketpair()
    d = tmp_path / "io"
    d.mkdir()
    env = {**os.environ, "BOATLOAD_PHASE_SYNC_FD": str(theirs.fileno())}
    proc = subprocess.Popen([str(worker), "randio", "--dir", str(d), "--files", "1", "--file-size", "1M",
                             "--xfer", "4096", "--read-pct", "50", "--duration", "0.2", "--out", str(tmp_path / "r.json")],
                            env=env, pass_fds=(theirs.fileno(),))
    theirs.close()
    lines, stream = [], ours.makefile("rb")
    held = 0.0
    for raw in stream:
        lines.append(raw.decode().strip())
        if lines[-1] == "begin io":
            time.sleep(0.5)  # the worker must not start its clock before the answer
            held = 0.5
        ours.sendall(b".")
    assert proc.wait(timeout=30) == 0
    assert lines == ["begin prepare", "end prepare", "begin io", "end io"]
    io = next(p for p in json.loads((tmp_path / "r.json").read_text())["phases"] if p["name"] == "io")
    assert held and io["seconds"] < 0.2 + 0.1


def test_a_worker_without_a_monitor_runs_as_before(tmp_path, worker):
    d = tmp_path / "io"
    d.mkdir()
    env = {**os.environ, "BOATLOAD_PHASE_SYNC_FD": "999"}  # not open: the handshake switches itself off
    r = subprocess.run([str(worker), "randio", "--dir", str(d), "--files", "1", "--file-size", "1M", "--xfer", "4096",
                        "--read-pct", "50", "--duration", "0.1"], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "ok"


def test_the_orchestrator_is_the_outermost_snakemake_above_the_run(tmp_path):
    script = tmp_path / "snakemake"
    script.write_text(f"#!{sys.executable}\nimport subprocess, sys\n"
                      "sys.exit(subprocess.run([sys.executable, '-c', 'from boatload.interference import "
                      "orchestrator_root; import os; print(orchestrator_root(), os.getppid())']).returncode)\n")
    script.chmod(0o755)
    out = subprocess.run([str(script)], capture_output=True, text=True, check=True).stdout.split()
    root, parent = map(int, out)
    assert root == parent  # the fake snakemake started the python that asked
    assert interference.orchestrator_root() is None or interference.orchestrator_root() != os.getpid()


@pytest.mark.parametrize("path", ["/dev/shm", "/proc"])
def test_no_host_disk_under_memory_file_systems(path):
    assert interference.host_disk(Path(path)) is None
