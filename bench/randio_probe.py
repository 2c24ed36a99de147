"""Where the time goes when the worker and fio run bench/randio.py's job on loop ext4.

    uv run python bench/randio_probe.py [--direct 1] [--repeats 4] [--duration 8]
                                        [--pin CPUS] [--perf]

Not a goal check (bench/randio.py is): a probe for the one point where the
worker is slower than fio, O_DIRECT on a loop-mounted ext4. Paired runs of
the same job (randio.Job, fresh files per run, order alternating), and per
run what the machine did meanwhile:

- CPU shares of the whole machine from /proc/stat: user, sys, idle, iowait
  (idle while a task waits for I/O), softirq;
- the loop device's own counters (/sys/block/loopN/stat): requests, and the
  mean time a request spends in the device (its io_ticks / requests: queued
  in the loop worker, served from the image file, completed);
- with --perf, `perf stat -a` counts per op: system calls, context
  switches, wake-ups, softirqs and inter-processor interrupts (IPIs);
- with --pin CPUS both tools run under `taskset -c CPUS`;
- with --dir DIR the runs go to DIR, on whatever file system and device it
  is (its block device's counters), instead of a fresh loop-mounted ext4.

A closed loop of 64 threads: IOPS = 64 / (time in the device + time outside
it), so the device time column shows where a slower tool loses.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import benchlib as bl
from randio import Job, paired_runs, size

PERF_EVENTS = {
    "raw_syscalls:sys_enter": "syscalls",
    "context-switches": "ctx-sw",
    "sched:sched_wakeup": "wakeups",
    "irq:softirq_entry": "softirqs",
    "ipi:ipi_send_cpu": "IPIs",
}
CPU_FIELDS = ("user", "nice", "sys", "idle", "iowait", "irq", "softirq")


def cpu_ticks() -> list[int]:
    return [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:8]]


def block_device(path: Path) -> str:
    """The block device (sysfs name, a partition's own) under path's file system."""
    st = os.stat(path)
    node = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not (node / "stat").exists():
        sys.exit(f"bench: --dir: {path} is not on a block device (no {node}/stat)")
    return node.resolve().name


def device_stat(dev: str) -> list[int]:
    return [int(x) for x in Path(f"/sys/class/block/{dev}/stat").read_text().split()]


def perf_counts(path: Path) -> dict[str, int]:
    counts = {}
    for line in path.read_text().splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[2] in PERF_EVENTS and parts[0].isdigit():
            counts[PERF_EVENTS[parts[2]]] = int(parts[0])
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--file-size", type=size, default=size("16M"))
    ap.add_argument("--duration", type=float, default=8, help="seconds per run (default 8)")
    ap.add_argument("--direct", type=int, choices=(0, 1), default=1)
    ap.add_argument("--repeats", type=int, default=4, help="pairs of runs (default 4)")
    ap.add_argument("--pin", metavar="CPUS", help="run both tools under `taskset -c CPUS`")
    ap.add_argument("--perf", action="store_true", help="count system-wide events with `perf stat -a`")
    ap.add_argument("--dir", type=Path, help="an existing directory to run in (default: a fresh loop ext4)")
    bl.add_scratch_arg(ap)
    args = ap.parse_args()
    if os.geteuid() != 0 and not args.dir:
        sys.exit("bench: needs root (it mounts a loop-mounted ext4); or pass --dir")
    if args.dir and not args.dir.is_dir():
        sys.exit(f"bench: --dir: {args.dir} is not a directory")
    for tool in ["fio"] + (["taskset"] if args.pin else []) + (["perf"] if args.perf else []):
        if not shutil.which(tool):
            sys.exit(f"bench: `{tool}` is not installed")
    job = Job(args.files, args.file_size, args.duration, args.direct)
    prefix = (["taskset", "-c", args.pin] if args.pin else [])
    rows, ratios, iops = [], [], {"worker": [], "fio": []}
    with bl.scratch_dir(args.scratch_in) as scratch, tempfile.TemporaryDirectory() as tmp:
        bins = bl.snapshot(["boatload-worker"], scratch)
        print("\n".join(bl.host_header(bins)))
        print(f"# {job.files} files x {job.file_size:,} bytes, {job.threads} threads, direct={job.direct}, "
              f"{job.duration:g} s per run, {args.repeats} pairs, pinned to {args.pin or 'nothing'}")
        with (contextlib.nullcontext(None) if args.dir else bl.mounted("ext4", scratch)) as tgt:
            root = args.dir if args.dir else tgt.path
            dev = block_device(root) if args.dir else Path(tgt.provenance["loop_device"]).name
            print(f"# in {root}, device {dev}")
            pair = {}
            for r, tool, d in paired_runs(job, bins["boatload-worker"].path, root, args.repeats, sync=True):
                os.sync()
                argv = prefix + (job.worker_argv(bins["boatload-worker"].path, d) if tool == "worker"
                                 else job.fio_argv(d))
                counts_file = Path(tmp) / f"{tool}-{r}.csv"
                if args.perf:
                    argv = ["perf", "stat", "-a", "-x,", "-o", counts_file,
                            "-e", ",".join(PERF_EVENTS)] + argv
                c0, d0 = cpu_ticks(), device_stat(dev)
                run = bl.run_timed(argv)
                c1, d1 = cpu_ticks(), device_stat(dev)
                reads, writes, secs = job.parse(tool, run.out)
                ops = reads + writes
                pair[tool] = ops / secs
                iops[tool].append(ops / secs)
                dc = [b - a for a, b in zip(c0, c1)]
                share = dict(zip(CPU_FIELDS, (x / sum(dc) for x in dc)))
                dd = [b - a for a, b in zip(d0, d1)]
                requests = dd[0] + dd[4]  # reads and writes completed
                in_device_us = (dd[3] + dd[7]) * 1000 / max(requests, 1)  # read + write ticks (ms)
                per_op = perf_counts(counts_file) if args.perf else {}
                rows.append([tool, f"{ops / secs:,.0f}", f"{requests:,}",
                             *(f"{share[k]:.2f}" for k in ("user", "sys", "idle", "iowait", "softirq")),
                             f"{in_device_us:.0f}",
                             *(f"{per_op[k] / requests:.3f}" if k in per_op else "-"
                               for k in PERF_EVENTS.values())])
                print(f"  {tool:6s} {ops / secs:9,.0f} IOPS, {in_device_us:.0f} us in the device", flush=True)
                if len(pair) == 2:  # the pair's second run
                    ratios.append(pair.pop("worker") / pair.pop("fio"))
    print(f"\n## randio in {'--dir' if args.dir else 'loop ext4'}, direct={job.direct}: per run (shares of both CPUs; counts per device request)")
    print(bl.table(["tool", "IOPS", "requests", "user", "sys", "idle", "iowait", "softirq", "us in device",
                    *PERF_EVENTS.values()], rows))
    slower = sum(x < 1 for x in ratios)
    print(f"\nworker / fio: median {statistics.median(ratios):.3f} ({bl.rng(ratios, '.3f')}); "
          f"worker slower in {slower} of {len(ratios)} pairs; median IOPS worker "
          f"{statistics.median(iops['worker']):,.0f}, fio {statistics.median(iops['fio']):,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
