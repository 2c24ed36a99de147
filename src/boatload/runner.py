"""Run one measurement job: provision its target, measure, tear down, record provenance.

Every study module supplies `measure(provisioned, job) -> dict`; this module
does what all of them share, so that teardown, the without-root fallback and
the provenance of a raw result are the same for every study.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack

from boatload import system
from boatload.paths import scratch_dir
from boatload.signals import signals_as_exceptions
from boatload.targets import NeedsRoot, Provisioned, TargetSpec, parse_target, provision

Measure = Callable[[Provisioned, dict], dict]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _fallback(spec: TargetSpec, why: NeedsRoot) -> tuple[TargetSpec, str]:
    """Without root, measure a plain directory on the scratch file system, and say so."""
    fs = system.fs_type(scratch_dir())
    reason = f"not root ({why}); measured a plain directory on the scratch file system ({fs}) instead"
    return parse_target(spec.name, {"kind": "dir", "fs": "dir"}), reason


def run_job(study: str, job: dict, measure: Measure, *, fallback_without_root: bool = True) -> dict:
    """The raw result document of one job.

    Without root, a study that can still say something on a plain directory
    (fallback_without_root) runs there and is marked substituted; the others
    are recorded as skipped with the reason, without measuring.
    """
    spec = parse_target(job["target"]["name"], {k: v for k, v in job["target"].items() if k != "name"})
    substituted = None
    started = _now()
    result: dict
    target_provenance: dict | None = None
    with ExitStack() as stack:  # teardown runs on success, error, SIGINT and SIGTERM alike
        stack.enter_context(signals_as_exceptions())
        try:
            provisioned = stack.enter_context(provision(spec, scratch_dir()))
        except NeedsRoot as why:
            if not fallback_without_root:
                provisioned = None
                result = {"status": "skipped", "reason": f"not root: {why}"}
            else:
                spec, substituted = _fallback(spec, why)
                provisioned = stack.enter_context(provision(spec, scratch_dir()))
        if provisioned is not None:
            result = measure(provisioned, job)
            target_provenance = provisioned.provenance
    return {
        "study": study,
        "job": job,
        "target": {**spec.to_dict(), "requested": job["target"], "substituted": substituted},
        "target_provenance": target_provenance,
        "machine": system.machine(),
        "worker": system.worker_info(),
        "started_at": started,
        "finished_at": _now(),
        "result": result,
    }
