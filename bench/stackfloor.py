"""The least a request costs through the device model's stack, with its daemons on one CPU and
free (the default), measured alternately in the same run: what pinning nbdkit and nbdfuse changes,
and how much the floor moves from stack to stack either way (bench/README.md "The stack's floor is a wake-up
across CPUs"). Needs root and /dev/fuse; makes its stacks in SCRATCH.

    uv run python bench/stackfloor.py [--stacks 10] [--scratch /tmp/stackfloor] [--shielded]

`--shielded` measures inside the shield every run has (boatload.provision.shield: a cgroup of the
highest CPU weight, the daemons in it too), as a run's own calibration is.

Prints each stack's floor (calibrate.measure's stack_us: the fastest of 300 back-to-back 4 KiB
writes), then per arm the median, the range and the share of stacks above ssd-2008's limit (its
512-byte read, 103.9 us, may be at most 15 % below the floor), and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import statistics
from contextlib import nullcontext
from pathlib import Path

from boatload.provision.devmodel import device, presets, stack
from boatload.provision.shield import shielded

_SSD = presets.resolve("ssd-2008", "m")
#: the slowest floor ssd-2008 is accepted at: its 512-byte read within the 15 % (native/devmodel/params.c)
SSD_LIMIT_US = (_SSD["read_latency_us"] + 512 / _SSD["read_mbps"]) * 1.15


def floors(stacks: int, scratch: Path) -> dict[str, list[float]]:
    """Per arm, each stack's floor; the overheads (calibrate.measure's overhead_us) too, under "... overhead"."""
    out: dict[str, list[float]] = {"one cpu": [], "free": [], "one cpu overhead": [], "free overhead": []}
    for i in range(2 * stacks):
        arm = "one cpu" if i % 2 == 0 else "free"  # alternately, so that drift hits both arms
        stack.PIN_DAEMONS = arm == "one cpu"
        cost = device._measure_now(scratch)
        out[arm].append(cost.stack_us)
        out[f"{arm} overhead"].append(cost.overhead_us)
    stack.PIN_DAEMONS = False  # the default
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stacks", type=int, default=10, help="stacks measured per arm (default 10)")
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/stackfloor"), help="where the stacks live")
    ap.add_argument("--shielded", action="store_true", help="inside the runs' shield (cgroup of the highest CPU weight)")
    a = ap.parse_args()
    a.scratch.mkdir(parents=True, exist_ok=True)
    with shielded(a.scratch) if a.shielded else nullcontext() as how:
        if a.shielded:
            print(f"shield: {how['cpu_weight'] or how['why_not']}")
        got = floors(a.stacks, a.scratch)
    for arm in ("one cpu", "free"):
        us, over = got[arm], got[f"{arm} overhead"]
        above = sum(u > SSD_LIMIT_US for u in us)
        print(f"{arm:8} floors {', '.join(f'{u:.1f}' for u in us)} us")
        print(f"{arm:8} median {statistics.median(us):.1f} us, range {min(us):.1f}-{max(us):.1f} us, "
              f"{above} of {len(us)} above ssd-2008's limit of {SSD_LIMIT_US:.1f} us; overhead median "
              f"{statistics.median(over):.1f} us, range {min(over):.1f}-{max(over):.1f} us")
    print(f"free / one cpu, medians: {statistics.median(got['free']) / statistics.median(got['one cpu']):.2f}")


if __name__ == "__main__":
    main()
