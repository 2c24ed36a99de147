"""Run one measurement job: provision its target, measure, tear down, record provenance.

Every study module supplies `measure(provisioned, job) -> dict`; this module
does what all of them share, so that teardown, the without-root fallback,
the interference record and the provenance of a raw result are the same for
every study.

An attempt measures on a freshly provisioned target with an interference
monitor active (boatload.interference). If another process disturbed a
timed phase, the attempt is kept on record and the job is measured again on
a fresh target, up to `interference.redo` times (the job's `interference`
settings, from the config's `interference:`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from boatload import interference, system
from boatload.paths import scratch_dir
from boatload.signals import signals_as_exceptions
from boatload.targets import Provisioned, provision
from boatload.targets.modelled import DeviceDied
from boatload.targetspec import NeedsRoot, TargetSpec, parse_target

Measure = Callable[[Provisioned, dict], dict]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _fallback(spec: TargetSpec, why: NeedsRoot) -> tuple[TargetSpec, str]:
    """Without root, measure a plain directory on the scratch file system, and say so."""
    fs = system.fs_type(scratch_dir())
    reason = f"not root ({why}); measured a plain directory on the scratch file system ({fs}) instead"
    return parse_target(spec.name, {"kind": "dir", "fs": "dir"}), reason


def settings(job: dict) -> dict:
    return {**interference.DEFAULTS, **(job.get("interference") or {})}


def _monitor(provisioned: Provisioned, opts: dict, job: dict) -> interference.Monitor:
    # the block device under the target: our loop device, or the user's device
    device = provisioned.provenance.get("loop_device") or (provisioned.provenance.get("device") or {}).get("name")
    return interference.Monitor(
        target_device=Path(device).name if device else None,
        host_device=interference.host_disk(scratch_dir()),
        max_other_cpu=opts["max_other_cpu"],
        sample_s=opts["run_queue_sample_s"],
        drop_caches=bool(job.get("drop_caches")),
    )


def _attempt(spec: TargetSpec, job: dict, measure: Measure, fallback_without_root: bool, opts: dict) -> dict:
    """One provision-measure-teardown; the result, the target as measured and the phase records."""
    substituted, records, target_provenance = None, [], None
    try:
        return _provision_and_measure(spec, job, measure, fallback_without_root, opts)
    except DeviceDied as died:  # a modelled device's nbdkit died under the run: a failed run, in one line
        return {"spec": spec, "substituted": substituted, "records": records, "target_provenance": target_provenance,
                "result": {"status": "error", "reason": str(died)}}


def _provision_and_measure(spec: TargetSpec, job: dict, measure: Measure, fallback_without_root: bool,
                           opts: dict) -> dict:
    substituted, records, target_provenance = None, [], None
    with ExitStack() as stack:  # teardown runs on success, error, SIGINT and SIGTERM alike
        stack.enter_context(signals_as_exceptions())
        try:
            provisioned = stack.enter_context(provision(spec, scratch_dir()))
        except NeedsRoot as why:
            if not fallback_without_root:
                return {"spec": spec, "substituted": None, "records": [], "target_provenance": None,
                        "result": {"status": "skipped", "reason": f"not root: {why}"}}
            spec, substituted = _fallback(spec, why)
            provisioned = stack.enter_context(provision(spec, scratch_dir()))
        monitor = _monitor(provisioned, opts, job)
        with interference.monitoring(monitor):
            result = measure(provisioned, job)
        records = monitor.records
        target_provenance = provisioned.provenance
    return {"spec": spec, "substituted": substituted, "records": records,
            "target_provenance": target_provenance, "result": result}


def _disturbance(records: list[dict]) -> str | None:
    worst = max((r for r in records if r["disturbed"]), key=lambda r: r["competing_cores"] or 0, default=None)
    if worst is None:
        return None
    competing = [t for t in worst["top_others"] if t["kind"] != "kernel_threads"]
    who = ", ".join(f"{t['comm']} {t['cpu_s']:.2f} s" + (f" (+{t['children_s']:.2f} s its exited children)"
                                                          if t["children_s"] else "") for t in competing)
    return (f"{worst['tool']} phase {worst['phase']}: other processes used "
            f"{100 * worst['competing_cores']:.1f} % of one core (limit {100 * worst['max_other_cpu']:g} %; "
            f"{who or 'processes that exited before the phase ended'})")


def run_job(study: str, job: dict, measure: Measure, *, fallback_without_root: bool = True) -> dict:
    """The raw result document of one job.

    Without root, a study that can still say something on a plain directory
    (fallback_without_root) runs there and is marked substituted; the others
    are recorded as skipped with the reason, without measuring.
    """
    spec = parse_target(job["target"]["name"], {k: v for k, v in job["target"].items() if k != "name"})
    opts = settings(job)
    started = _now()
    redone = []
    for n in range(1, opts["redo"] + 2):
        attempt = _attempt(spec, job, measure, fallback_without_root, opts)
        why = _disturbance(attempt["records"])
        if why is None or n > opts["redo"]:
            break
        redone.append({"attempt": n, "why": why, "result": attempt["result"], "interference": attempt["records"]})
        print(f"boatload: {study} {job['target']['name']} {job.get('point')} rep{job.get('rep')}: disturbed, "
              f"{why}; measuring again on a fresh target ({n + 1} of {opts['redo'] + 1})", file=sys.stderr)
    spec = attempt["spec"]
    return {
        "study": study,
        "job": job,
        "target": {**spec.to_dict(), "requested": job["target"], "substituted": attempt["substituted"]},
        "target_provenance": attempt["target_provenance"],
        "machine": system.machine(),
        "worker": system.worker_info(),
        "started_at": started,
        "finished_at": _now(),
        "result": attempt["result"],
        "interference": {
            "settings": opts,
            "orchestrator_pid": interference.orchestrator_root(),
            "phases": attempt["records"],
            "disturbed": why is not None,
            "why": why,
            "redone": redone,
        },
    }
