"""The machine's CPU time by state (/proc/stat's `cpu` line) and the hypervisor's
steal in it: the CPU time the host gave this machine's CPUs to other guests. On
this kind of machine steal comes in spells in which everything runs slower
(bench/README.md "Steal: the hypervisor's spells"), so what is measured
in one is measured again after it, or not until it has passed: a run's timed
phases (boatload.measure.disturbance judges them, boatload.measure.runner
waits) and the stack's calibration (boatload.provision.devmodel.calibrate)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

# Per-process and per-state CPU times come in clock ticks.
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
#: the steal share beyond which a measurement counts as disturbed (the default of `interference.max_steal`)
MAX_STEAL = 0.2
#: the most seconds waited for a spell of steal to pass (the default of `interference.steal_wait_s`)
STEAL_WAIT_S = 30.0

_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
Found = TypeVar("Found")


def cpu_jiffies() -> dict[str, int]:
    """The machine's CPU time by state, in ticks, from the `cpu` line of /proc/stat."""
    with open("/proc/stat") as f:
        line = f.readline().split()
    return dict(zip(_STATES, map(int, line[1:9])))


def steal_share(steal_s: float, seconds: float, cpus: int | None = None) -> float:
    """The share of the machine's CPU time (`cpus`, every CPU by default) the hypervisor gave to
    other guests: /proc/stat's steal seconds over `seconds`."""
    return steal_s / (seconds * (cpus or os.cpu_count() or 1))


class StealWindow:
    """The steal share of the machine's CPU time from its making to each `share()`."""

    def __init__(self) -> None:
        self._t0, self._s0 = time.monotonic(), cpu_jiffies()["steal"]

    def share(self) -> float:
        return _share_since(self._s0, max(time.monotonic() - self._t0, TICK_S))


def _share_since(steal_ticks: int, seconds: float) -> float:
    """The steal share over the `seconds` since /proc/stat's steal stood at `steal_ticks`."""
    return steal_share((cpu_jiffies()["steal"] - steal_ticks) * TICK_S, seconds)


def sampled_until(sample: Callable[[], Found], calm: Callable[[Found], bool],
                  limit_s: float) -> tuple[Found, float, bool]:
    """`sample()` again and again until `calm` of what it found, or `limit_s` has passed:
    (the last sample, the seconds waited, whether it was calm)."""
    started = time.monotonic()
    while True:
        found = sample()
        waited = time.monotonic() - started
        if calm(found) or waited >= limit_s:
            return found, waited, calm(found)


def _steal_over(seconds: float) -> float:
    start = cpu_jiffies()["steal"]
    time.sleep(seconds)
    return _share_since(start, seconds)


def wait_steal(limit_s: float, max_steal: float, window_s: float = 1.0) -> dict:
    """Sample in windows of `window_s` until the steal share is at most `max_steal`, or
    `limit_s` has passed; what it found."""
    share, waited, calm = sampled_until(lambda: _steal_over(window_s), lambda f: f <= max_steal, limit_s)
    return {"for": "steal", "waited_s": round(waited, 2), "calm": calm, "steal_share": round(share, 4)}
