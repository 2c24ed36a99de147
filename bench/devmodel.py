"""The device models against their own specification: fio (the peer) on a
modelled device of each preset, beside what the model's parameters give
(devmodel-calc).

    uv run python bench/devmodel.py [--presets hdd-7200,raid-hdd,ssd-2008] [--size-mb 1024]
                                    [--seconds 5] [--blocks 64] [--repeats 3]

Per preset: random 4 KiB O_DIRECT reads over the whole device and over 1 %
of it, sequential reads of the outermost zone (128 KiB requests; 256 KiB,
one full stripe, on raid-hdd), and one fsync after `--blocks` random 4 KiB
writes (its time against the least and the most the model can take for those
blocks). Prints the stack's measured cost first. Needs root and /dev/fuse.
The image is sparse, in a temporary directory.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from boatload.provision.devmodel import device, presets
from boatload.measure import fiocheck


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="hdd-7200,raid-hdd,ssd-2008")
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    size = a.size_mb << 20
    with tempfile.TemporaryDirectory(prefix="boatload-bench-devmodel-") as tmp:
        scratch = Path(tmp) / "scratch"
        cost = device.stack_cost(scratch)
        print(f"stack: {cost.stack_us:.0f} us back to back (stack_us), {cost.overhead_us:.0f} us + "
              f"{cost.overhead_us_per_mib:.0f} us/MiB around a request that waited (taken off the model's times)")
        print(f"{'preset':<10} {'measure':<34} {'n':>6} {'fio mean':>10} {'fio 98%':>10} {'model':>10} {'ratio':>6}")
        for name in a.presets.split(","):
            params = presets.resolve(name, name)
            img = Path(tmp) / f"{name}.img"
            with open(img, "wb") as f:
                f.truncate(size)
            with device.modelled_image(img, a.size_mb, params, scratch=scratch, name=name) as stack:
                for _ in range(a.repeats):
                    for r in (
                        fiocheck.random_read(stack.device, size, params, 1.0, seconds=a.seconds),
                        fiocheck.random_read(stack.device, size, params, 0.01, seconds=a.seconds),
                    ):
                        print(f"{name:<10} {r['what']:<34} {r['n']:>6} {r['mean_us']:>8.0f}us {r['trimmed_us']:>8.0f}us "
                              f"{r['expected_us']:>8.0f}us {r['ratio']:>6.2f} (median request: {r['median_ratio']:.2f})")
                    length = 256 * 1024 if params["kind"] == "raid" else 128 * 1024
                    zone = size // params.get("zones", 16)
                    r = fiocheck.seq_read(stack.device, size, params, length=length, area=zone)
                    print(f"{name:<10} {r['what']:<34} {r['n']:>6} {r['mbps']:>6.1f}MB/s {r['trimmed_mbps']:>6.1f}MB/s "
                          f"{r['expected_mbps']:>6.1f}MB/s {r['ratio']:>6.2f} (median request: {r['median_ratio']:.2f})")
                    r = fiocheck.fsync_writeout(stack.device, size, params, blocks=a.blocks)
                    # the goal: at least the least the model can take; above the most is the stack's own time
                    where = ("below" if r["fsync_us"] < r["least_us"] else
                             "within" if r["fsync_us"] <= r["most_us"] else "above")
                    print(f"{name:<10} {r['what']:<34} {r['n']:>6} {r['fsync_us'] / 1000:>8.1f}ms "
                          f"{'':>10} {r['least_us'] / 1000:>5.1f}-{r['most_us'] / 1000:.1f}ms {where}")
                    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
