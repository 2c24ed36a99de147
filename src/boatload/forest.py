"""One run of the billion-file study: a creation method on a freshly made target."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from boatload import creators, system
from boatload.paths import scratch_dir, worker_binary
from boatload.signals import signals_as_exceptions
from boatload.targets import NeedsRoot, Provisioned, TargetSpec, parse_target, provision

METHOD_LABELS = {
    "worker-1t": "native program, 1 thread",
    "worker-2t": "native program, 2 threads",
    "python": "python script",
    "touch-many": "shell: touch 1000 files per call",
    "touch-each": "shell: touch once per file",
    "tar": "shell: untar",
    "unzip": "shell: unzip",
}

WORKER_THREADS = {"worker-1t": 1, "worker-2t": 2}


def _run_worker(method: str, root: Path, shape: list[int], seed: int) -> dict:
    """The worker's own measurement of the create phase."""
    with tempfile.TemporaryDirectory(prefix="boatload-worker-") as tmp:
        out = Path(tmp) / "result.json"
        argv = [
            str(worker_binary()), "tree", "--dir", str(root), "--shape", "x".join(map(str, shape)),
            "--threads", str(WORKER_THREADS[method]), "--seed", str(seed), "--out", str(out),
        ]
        proc = subprocess.run(argv, capture_output=True, text=True)
        if not out.exists():
            raise RuntimeError(f"worker failed (exit {proc.returncode}): {proc.stderr.strip()}")
        doc = json.loads(out.read_text())
    create = next(p for p in doc["phases"] if p["name"] == "create")
    return {
        "seconds": create["seconds"],
        "cpu_user_s": create["cpu_user_s"],
        "cpu_sys_s": create["cpu_sys_s"],
        "capped": False,
        "error": None if doc["status"] == "ok" else (doc.get("error") or {}).get("message", doc["status"]),
        "worker": doc,
    }


def _run_baseline(method: str, root: Path, shape: list[int], time_cap_s: float, cache: Path) -> dict:
    timed = creators.create(method, root, shape, time_cap_s, cache)
    failed = timed.returncode != 0 and not timed.capped
    return {
        "seconds": timed.seconds,
        "cpu_user_s": timed.cpu_user_s,
        "cpu_sys_s": timed.cpu_sys_s,
        "capped": timed.capped,
        "error": f"exit {timed.returncode}: {timed.stderr}" if failed else None,
        "worker": None,
    }


def _fallback(spec: TargetSpec, why: NeedsRoot) -> tuple[TargetSpec, str]:
    """Without root, measure a plain directory on the scratch file system, and say so."""
    fs = system.fs_type(scratch_dir())
    reason = f"not root ({why}); measured a plain directory on the scratch file system ({fs}) instead"
    return parse_target(spec.name, {"kind": "dir", "fs": "dir"}), reason


def measure(provisioned: Provisioned, method: str, shape: list[int], time_cap_s: float, seed: int) -> dict:
    """Create the forest on the target and account for what was made and what it cost."""
    before = provisioned.usage()
    cache = scratch_dir() / "archives"
    # A fresh directory on the target: a new file system's root is not empty (lost+found).
    root = provisioned.path / "forest"
    root.mkdir()
    if method in WORKER_THREADS:
        run = _run_worker(method, root, shape, seed)
    else:
        run = _run_baseline(method, root, shape, time_cap_s, cache)
    files, dirs = creators.count_files(root)
    after = provisioned.usage()
    planned = 1
    for n in shape:
        planned *= n
    complete = files == planned
    rate = files / run["seconds"] if run["seconds"] > 0 and files > 0 else None
    inodes = None
    if after.get("inodes_used") is not None and before.get("inodes_used") is not None:
        inodes = after["inodes_used"] - before["inodes_used"]
    return {
        "status": "error" if run["error"] else "ok",
        "reason": run["error"],
        "files": files,
        "dirs": dirs,
        "files_planned": planned,
        "complete": complete,
        "seconds": run["seconds"],
        "files_per_s": rate,
        # Like the original's slow methods: the rate of the part done stands for the whole.
        "extrapolated": run["capped"],
        "estimated_total_s": planned / rate if rate else None,
        "cpu_user_s": run["cpu_user_s"],
        "cpu_sys_s": run["cpu_sys_s"],
        "space_kb": after["blocks_used_kb"] - before["blocks_used_kb"],
        "inodes_used": inodes,
        "worker_result": run["worker"],
    }


def run(job: dict) -> dict:
    """Provision the job's target, measure, tear down; return the raw result with provenance."""
    spec = parse_target(job["target"]["name"], {k: v for k, v in job["target"].items() if k != "name"})
    substituted = None
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with ExitStack() as stack:  # teardown runs on success, error, SIGINT and SIGTERM alike
        stack.enter_context(signals_as_exceptions())
        try:
            provisioned = stack.enter_context(provision(spec, scratch_dir()))
        except NeedsRoot as why:
            spec, substituted = _fallback(spec, why)
            provisioned = stack.enter_context(provision(spec, scratch_dir()))
        measurement = measure(provisioned, job["method"], job["shape"], job["time_cap_s"], job["seed"])
        target_provenance = provisioned.provenance
    return {
        "study": "forest",
        "job": job,
        "method_label": METHOD_LABELS[job["method"]],
        "target": {**spec.to_dict(), "requested": job["target"], "substituted": substituted},
        "target_provenance": target_provenance,
        "machine": system.machine(),
        "worker": system.worker_info(),
        "started_at": started,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "result": measurement,
    }
