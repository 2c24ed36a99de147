"""The stack's own cost per request, measured on this machine.

The stack (nbdkit, nbdfuse, FUSE, the loop device) costs time the model does
not know about. It is measured on a small calibration device whose model
costs a known 1 ms per read and nothing per write:

Measured once per process by boatload.provision.devmodel.device.stack_cost, and
reused across processes (every run of `make reproduce` is one) from a record
in the scratch directory while it is younger than MAX_AGE_S and was made on
this host, kernel, boot and build of the filter and the worker (`reused`):
a quick run then calibrates once, not once per modelled run.

* stack_us: a 4 KiB write the model serves at once, back to back, the
  fastest of 300 in three batches: the least a request costs here. A model claiming more than 15 % less
  is refused (presets.check).
* overhead_us, overhead_us_per_mib: what a read costs beyond the model's
  1 ms, at 4 KiB and 128 KiB (a request the loop device and FUSE pass on
  whole): the wake-ups and copies around a request that had to wait. The filter takes this off each
  modelled time, so that what a program sees is the model's time.

In a spell of the hypervisor's steal every request costs more, and a cost measured in
one would refuse fast models and take too much off every modelled request for as
long as it is reused: the calibration waits for the steal to pass
(boatload.base.hostcpu), and is measured again if its own window saw more than
MAX_STEAL, at most ATTEMPTS times; the record keeps the steal its window saw.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from boatload.base.hostcpu import MAX_STEAL, STEAL_WAIT_S, StealWindow, wait_steal
from boatload.provision.devmodel import native
from boatload.provision.devmodel.probe import median, timed_requests
from boatload.base.paths import worker_binary
from boatload.base.results import write_atomic
from boatload.base.system import sha256_file

CALIBRATION_MODEL = {
    "kind": "ssd", "read_latency_us": 1000, "read_mbps": 1e9, "write_latency_us": 0, "write_mbps": 1e9, "flush_us": 0,
}
CALIBRATION_MB = 64
#: how long a calibration is reused: a whole quick run (30 minutes) and then some
MAX_AGE_S = 3600.0
RECORD = Path("calibration") / "stack-cost.json"


@dataclass(frozen=True)
class StackCost:
    stack_us: float
    overhead_us: float
    overhead_us_per_mib: float
    # the steal share of the machine's CPU time while it was measured (hostcpu)
    steal_share: float = field(default=0.0, compare=False)
    # when and by which process it was measured, and whether this process reused it (provenance)
    measured_at: float = field(default_factory=time.time, compare=False)
    measured_by_pid: int = field(default_factory=os.getpid, compare=False)
    reused: bool = field(default=False, compare=False)

    def params(self) -> dict:
        """The filter's parameters for this cost."""
        return {k: round(getattr(self, k), 1) for k in ("stack_us", "overhead_us", "overhead_us_per_mib")}

    def origin(self) -> dict:
        """For provenance: when and by whom measured, and whether reused from the scratch record."""
        return {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.measured_at)),
                "measured_by_pid": self.measured_by_pid, "reused": self.reused,
                "steal_share": round(self.steal_share, 4)}


#: calibrations measured, at most, until one whose window saw at most MAX_STEAL
ATTEMPTS = 3


def measure(device: str) -> StackCost:
    """Measure on an attached calibration device (CALIBRATION_MODEL) once the steal is at most
    MAX_STEAL, again if it rose above that while measuring (the last of ATTEMPTS is kept)."""
    for _ in range(ATTEMPTS):
        wait_steal(STEAL_WAIT_S, MAX_STEAL, window_s=0.25)
        window = StealWindow()
        cost = _measured_once(device)
        steal = window.share()
        if steal <= MAX_STEAL:
            break
    return replace(cost, steal_share=steal)


def _measured_once(device: str) -> StackCost:
    timed_requests(device, 20, 4096)  # warm up
    # medians: a busy machine's stray stalls would move a mean
    # the least a request costs: the fastest of 300, since a busy machine only adds
    # (its median rose to 170 us, its 10th percentile to 97 us, on the loaded machine)
    # in three batches apart, so that one busy moment does not raise it (a quick run was refused when it did)
    batches = []
    for _ in range(3):
        batches.append(min(timed_requests(device, 100, 4096, write=True)))
        time.sleep(0.05)
    hot = min(batches)
    small = median(timed_requests(device, 150, 4096)) - CALIBRATION_MODEL["read_latency_us"]
    big = median(timed_requests(device, 60, 128 * 1024, seed=2)) - CALIBRATION_MODEL["read_latency_us"]
    return StackCost(
        stack_us=hot,
        overhead_us=max(0.0, small),
        overhead_us_per_mib=max(0.0, (big - small) * 8),
    )


def stated(cost: StackCost) -> dict:
    """For provenance: the figures and what they are."""
    return {**cost.params(), "measured_by": "boatload.provision.devmodel.calibrate", **cost.origin()}


def _sha256_or_none(path: Path) -> str | None:
    return sha256_file(path) if path.is_file() else None


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def conditions(tools: dict[str, str]) -> dict:
    """What a calibration holds for: host, kernel, boot, the stack's tools and the builds."""
    return {"host": platform.node(), "kernel": platform.release(), "boot_id": _boot_id(), "tools": dict(tools),
            "filter_sha256": _sha256_or_none(native.filter_path()),
            "worker_sha256": _sha256_or_none(worker_binary())}


def _recorded(path: Path, now_conditions: dict, max_age_s: float) -> StackCost | None:
    try:
        doc = json.loads(path.read_text())
        if doc["conditions"] != now_conditions or not 0 <= time.time() - doc["measured_at"] <= max_age_s:
            return None
        return StackCost(doc["stack_us"], doc["overhead_us"], doc["overhead_us_per_mib"],
                         steal_share=doc.get("steal_share", 0.0), measured_at=doc["measured_at"],
                         measured_by_pid=doc["measured_by_pid"], reused=True)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none yet, or unreadable: measure


def reused_or_measured(scratch: Path, tools: dict[str, str], measure_now: Callable[[], StackCost],
                       max_age_s: float = MAX_AGE_S) -> StackCost:
    """The scratch directory's record if it holds for now (`conditions`) and is
    younger than `max_age_s`; else `measure_now()`, recorded for the next process."""
    cost = _recorded(Path(scratch) / RECORD, conditions(tools), max_age_s)
    if cost is None:
        cost = measure_now()
        save(scratch, tools, cost)
    return cost


def save(scratch: Path, tools: dict[str, str], cost: StackCost) -> None:
    """Record `cost` in the scratch directory for the next process."""
    path = Path(scratch) / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps({**asdict(cost), "conditions": conditions(tools)}, indent=1, sort_keys=True) + "\n")
