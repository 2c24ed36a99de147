"""Calling the measuring worker: one workload, one JSON document back."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from boatload.measure import interference
from boatload.base.paths import worker_binary


class WorkerError(RuntimeError):
    """The worker refused its arguments or produced no result."""


# Timed phases of the worker that lay out what the measurement then uses.
SETUP_PHASES = {("randio", "prepare")}


def run_worker(workload: str, args: list[str], limit=None, setup: bool = False, on_phase=None) -> dict:
    """Run `boatload-worker WORKLOAD ARGS... --out FILE` and return its document.

    `limit` (a boatload.provision.memlimit.Limit) starts the worker inside that memory
    limit. With an active interference monitor, every timed phase of the
    document carries its `interference` record; `setup` says the whole call
    only prepares the measurement (its phases never count as disturbed).
    `on_phase("begin" | "end", phase name)` is called at the edges of every
    timed phase, outside its timed window (interference.worker_sync). A failed system call
    mid-phase (exit 1) still returns the document, whose `status` and
    `error` say what happened; bad arguments (exit 2), a kill or no document
    at all raise WorkerError with the worker's own line.
    """
    start = limit.run if limit is not None else subprocess.run
    monitor = interference.active()
    first = len(monitor.records) if monitor else 0
    with tempfile.TemporaryDirectory(prefix="boatload-worker-") as tmp:
        out = Path(tmp) / "result.json"
        argv = [str(worker_binary()), workload, *args, "--out", str(out)]
        def measured(phase: str) -> bool:
            return not setup and (workload, phase) not in SETUP_PHASES

        with interference.worker_sync(measured, on_phase=on_phase) as sync:
            proc = start(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, **sync)
        if proc.returncode == 2 or not out.exists():
            how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
            raise WorkerError(f"worker {workload} failed ({how}): {(proc.stderr or '').strip()}")
        doc = json.loads(out.read_text())
    if monitor:
        interference.attach(doc, monitor.records[first:])
    return doc


def failure(doc: dict) -> str | None:
    """What went wrong, in one line, from a worker document (None when its status is ok)."""
    if doc["status"] == "ok":
        return None
    error = doc.get("error") or {}
    what = f"worker {doc.get('workload', '')} {doc['status']}".replace("  ", " ")
    if not error:
        return what
    return (f"{what}: {error.get('code')} ({error.get('message')}) "
            f"in phase {error.get('phase')} at {error.get('where')}")


def phase(doc: dict, name: str) -> dict:
    return next(p for p in doc["phases"] if p["name"] == name)
