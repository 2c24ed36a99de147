"""Run one measurement job: provision its target, measure, tear down, record provenance.

Every study module supplies `measure(provisioned, job) -> dict`; this module
does what all of them share, so that teardown, the without-root fallback,
the interference record and the provenance of a raw result are the same for
every study.

The whole job runs shielded where it can (boatload.provision.shield: the highest CPU
weight), after waiting for a quiet machine if `interference.wait_quiet_s`
asks. An attempt measures on a freshly provisioned target with an
interference monitor active (boatload.measure.interference). If a timed phase was
disturbed by a passing load (boatload.measure.disturbance), the attempt is kept on
record and the job is measured again on a fresh target, up to
`interference.redo` times; a constant load is not measured again: the run
is kept, and its record says so (the job's `interference` settings, from
the config's `interference:`). After an attempt the hypervisor's steal
disturbed, the next waits (at most `steal_wait_s`) for the steal to pass.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from boatload.measure import disturbance, interference, machineload, procfs
from boatload.base import hostcpu, system
from boatload.provision.shield import shielded
from boatload.base.paths import scratch_dir
from boatload.base.signals import signals_as_exceptions
from boatload.provision.targets import Provisioned, provision
from boatload.provision.targets.modelled import DeviceDied
from boatload.base.targetspec import NeedsRoot, TargetSpec, parse_target

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


def _monitor(spec: TargetSpec, provisioned: Provisioned, opts: dict, job: dict, baseline) -> interference.Monitor:
    # the block device under the target: our loop device, or the user's device
    device = provisioned.provenance.get("loop_device") or (provisioned.provenance.get("device") or {}).get("name")
    return interference.Monitor(
        target_device=Path(device).name if device else None,
        host_device=procfs.host_disk(scratch_dir()),
        settings=opts,
        disk_bound=spec.kind not in ("tmpfs", "device"),  # a device target is not on the host disk
        baseline=baseline,
        drop_caches=bool(job.get("drop_caches")),
        host_copies=modelled_images(provisioned.provenance),
    )


def modelled_images(provenance: dict) -> tuple[str, ...]:
    """The host's files behind a target's modelled devices (its data device or swap disk, its log)."""
    return tuple(m["image"] for m in (provenance.get("model"), provenance.get("log_model")) if m and m.get("image"))


def _attempt(spec: TargetSpec, job: dict, measure: Measure, fallback_without_root: bool, opts: dict) -> dict:
    """One provision-measure-teardown; the result, the target as measured and the phase records."""
    substituted, records, target_provenance = None, [], None
    try:
        return _provision_and_measure(spec, job, measure, fallback_without_root, opts)
    except DeviceDied as died:  # a modelled device's nbdkit died under the run: a failed run, in one line
        return {"spec": spec, "substituted": substituted, "records": records, "target_provenance": target_provenance,
                "result": {"status": "error", "reason": str(died)}, "seconds": None}


class _Clock:
    """Wall seconds of an attempt's steps (provision, measure, teardown): where a run's
    time goes outside its timed phases (bench/overhead.py reads them)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, step: str) -> None:
        now = time.monotonic()
        self.seconds[step] = round(now - self._last, 3)
        self._last = now


def _provision_and_measure(spec: TargetSpec, job: dict, measure: Measure, fallback_without_root: bool,
                           opts: dict) -> dict:
    substituted, records, target_provenance = None, [], None
    clock = _Clock()
    # teardown runs on success, error, SIGINT and SIGTERM alike (run_job turns TERM and HUP into exceptions)
    with ExitStack() as stack:
        baseline = interference.baseline()
        try:
            provisioned = stack.enter_context(provision(spec, scratch_dir()))
        except NeedsRoot as why:
            if not fallback_without_root:
                return {"spec": spec, "substituted": None, "records": [], "target_provenance": None,
                        "result": {"status": "skipped", "reason": f"not root: {why}"}, "seconds": None}
            spec, substituted = _fallback(spec, why)
            provisioned = stack.enter_context(provision(spec, scratch_dir()))
        clock.lap("provision")
        monitor = _monitor(spec, provisioned, opts, job, baseline)
        with interference.monitoring(monitor):
            result = measure(provisioned, job)
        clock.lap("measure")
        records = monitor.records
        target_provenance = provisioned.provenance
    clock.lap("teardown")
    return {"spec": spec, "substituted": substituted, "records": records,
            "target_provenance": target_provenance, "result": result, "seconds": clock.seconds}


def _disturbance(records: list[dict]) -> tuple[str | None, str | None]:
    """(passing or constant, the reason) of an attempt's worst disturbed phase;
    passing if any phase was disturbed by a passing load (measuring again can help)."""
    disturbed = [r for r in records if r["disturbed"]]
    if not disturbed:
        return None, None
    kind = "passing" if any(r["disturbance"] == "passing" for r in disturbed) else "constant"
    worst = max((r for r in disturbed if r["disturbance"] == kind), key=lambda r: r["run_delay_share"] or 0)
    return kind, disturbance.why(worst)


def run_job(study: str, job: dict, measure: Measure, *, fallback_without_root: bool = True) -> dict:
    """The raw result document of one job.

    Without root, a study that can still say something on a plain directory
    (fallback_without_root) runs there and is marked substituted; the others
    are recorded as skipped with the reason, without measuring.
    """
    spec = parse_target(job["target"]["name"], {k: v for k, v in job["target"].items() if k != "name"})
    opts = settings(job)
    started = _now()
    name = f"{study} {job['target']['name']} {job.get('point')} rep{job.get('rep')}"
    redone, waits = [], []
    # TERM and HUP raise from here on, so that the shield's cgroup, made first, is removed whatever
    # arrives while it is made (under SIG_DFL a TERM held during its creation killed the process after it)
    with signals_as_exceptions(), shielded(scratch_dir(), opts["shield"]) as shield:
        for n in range(1, opts["redo"] + 2):
            if opts["wait_quiet_s"] > 0:
                waits.append(machineload.wait_quiet(opts["wait_quiet_s"], opts["max_other_cpu"]))
            attempt = _attempt(spec, job, measure, fallback_without_root, opts)
            kind, why = _disturbance(attempt["records"])
            if kind != "passing" or n > opts["redo"]:
                break
            redone.append({"attempt": n, "why": why, "result": attempt["result"], "interference": attempt["records"]})
            print(f"boatload: {name}: disturbed, {why}; measuring again on a fresh target "
                  f"({n + 1} of {opts['redo'] + 1})", file=sys.stderr)
            if any("steal" in r["disturbed_by"] for r in attempt["records"] if r["disturbed"]):
                waits.append(hostcpu.wait_steal(opts["steal_wait_s"], opts["max_steal"]))
    if kind == "constant":
        print(f"boatload: {name}: disturbed by a constant load, kept without measuring again: {why}", file=sys.stderr)
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
        # the kept attempt's wall seconds: provisioning, measuring (timed phases and the study's own work
        # between them), teardown; the interference record's phases hold the timed seconds
        "seconds": attempt["seconds"],
        "interference": {
            "settings": opts,
            "orchestrator_pid": procfs.orchestrator_root(),
            "phases": attempt["records"],
            "disturbed": why is not None,
            "disturbance": kind,  # None, "passing" (no redo was left) or "constant" (kept as it was)
            "why": why,
            "redone": redone,
            "shield": shield,
            "quiet_waits": waits,
        },
    }
