"""The stack's own cost per request, measured on this machine.

The stack (nbdkit, nbdfuse, FUSE, the loop device) costs time the model does
not know about. It is measured on a small calibration device whose model
costs a known 1 ms per read and nothing per write:

Measured once per process by boatload.devmodel.device.stack_cost.

* stack_us: a 4 KiB write the model serves at once, back to back, the
  fastest of 300 in three batches: the least a request costs here. A model claiming more than 15 % less
  is refused (presets.check).
* overhead_us, overhead_us_per_mib: what a read costs beyond the model's
  1 ms, at 4 KiB and 128 KiB (a request the loop device and FUSE pass on
  whole): the wake-ups and copies around a request that had to wait. The filter takes this off each
  modelled time, so that what a program sees is the model's time.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass

from boatload.devmodel.probe import median, timed_requests

CALIBRATION_MODEL = {
    "kind": "ssd", "read_latency_us": 1000, "read_mbps": 1e9, "write_latency_us": 0, "write_mbps": 1e9, "flush_us": 0,
}
CALIBRATION_MB = 64


@dataclass(frozen=True)
class StackCost:
    stack_us: float
    overhead_us: float
    overhead_us_per_mib: float

    def params(self) -> dict:
        """The filter's parameters for this cost."""
        return {k: round(v, 1) for k, v in asdict(self).items()}


def measure(device: str) -> StackCost:
    """Measure on an attached calibration device (CALIBRATION_MODEL)."""
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
    return {**cost.params(), "measured_by": "boatload.devmodel.calibrate", "pid": os.getpid()}
