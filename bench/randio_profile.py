"""Whose CPU time an I/O costs when the worker and fio run bench/randio.py's job.

    uv run python bench/randio_profile.py [--target tmpfs|ext4] [--direct 0] [--repeats 3]
                                          [--duration 6] [--freq 999]

Not a goal check (bench/randio.py is): a probe for the points where both
tools are bound by the CPU (buffered tmpfs above all), where worker / fio
IOPS is the inverse ratio of their CPU time per I/O. Paired runs of the same
job (randio.Job, fresh files per run, order alternating), each under
`perf record -F FREQ` (cpu-clock samples of all the tool's threads), then
`perf report --sort dso`: CPU microseconds per I/O in the kernel, in the
tool's own code (boatload-worker or fio), in libc, in the vDSO (the clock)
and elsewhere. The samples cover the whole process, start-up and file
opening included; the I/Os are those of the timed phase.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import benchlib as bl
from randio import Job, paired_runs, size

PARTS = ("kernel", "own code", "libc", "vdso", "other")
REPORT_LINE = re.compile(r"^\s*([\d.]+)%\s+(\d+)\s+(\S.*?)\s*$")


def samples_by_part(report: str, own: str) -> dict[str, int]:
    """Samples per part from `perf report --sort dso --show-nr-samples --stdio`
    lines like `  94.93%  56218  [kernel.kallsyms]`; own is the tool's binary name."""
    parts = dict.fromkeys(PARTS, 0)
    for line in report.splitlines():
        m = REPORT_LINE.match(line)
        if not m or line.lstrip().startswith("#"):
            continue
        dso = m.group(3)
        part = ("kernel" if dso.startswith("[kernel") else "own code" if dso == own
                else "libc" if dso.startswith("libc.so") else "vdso" if dso == "[vdso]" else "other")
        parts[part] += int(m.group(2))
    if not any(parts.values()):
        raise bl.RunError(f"perf report: no samples in {report[:300]!r}")
    return parts


def profile(argv: list, data: Path, freq: int, own: str) -> tuple[bl.RunInfo, dict[str, int]]:
    run = bl.run_timed(["perf", "record", "-q", "-F", freq, "-o", data, "--"] + argv)
    rep = subprocess.run(["perf", "report", "-i", data, "--sort", "dso", "--show-nr-samples", "--stdio",
                          "-g", "none"], capture_output=True, text=True)
    if rep.returncode != 0:
        raise bl.RunError(f"perf report exited {rep.returncode}: {rep.stderr.strip()[-300:]}")
    return run, samples_by_part(rep.stdout, own)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=("tmpfs", "ext4"), default="tmpfs")
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--file-size", type=size, default=size("16M"))
    ap.add_argument("--duration", type=float, default=6, help="seconds per run (default 6)")
    ap.add_argument("--direct", type=int, choices=(0, 1), default=0)
    ap.add_argument("--repeats", type=int, default=3, help="pairs of runs (default 3)")
    ap.add_argument("--freq", type=int, default=999, help="perf samples per second per CPU (default 999)")
    bl.add_scratch_arg(ap)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: needs root (it mounts its target)")
    for tool in ("fio", "perf"):
        if not shutil.which(tool):
            sys.exit(f"bench: `{tool}` is not installed")
    job = Job(args.files, args.file_size, args.duration, args.direct)
    rows, ratios, per_op = [], [], {"worker": [], "fio": []}
    with bl.scratch_dir(args.scratch_in) as scratch, tempfile.TemporaryDirectory() as tmp:
        bins = bl.snapshot(["boatload-worker"], scratch)
        worker = bins["boatload-worker"].path
        print("\n".join(bl.host_header(bins)))
        print(f"# {job.files} files x {job.file_size:,} bytes, {job.threads} threads, direct={job.direct}, "
              f"{job.duration:g} s per run, {args.repeats} pairs, perf record -F {args.freq}")
        with bl.mounted(args.target, scratch) as tgt:
            pair = {}
            for r, tool, d in paired_runs(job, worker, tgt.path, args.repeats, sync=args.target != "tmpfs"):
                argv = job.worker_argv(worker, d) if tool == "worker" else job.fio_argv(d)
                run, parts = profile(argv, Path(tmp) / f"{tool}-{r}.data", args.freq,
                                     worker.name if tool == "worker" else "fio")
                reads, writes, secs = job.parse(tool, run.out)
                ops = reads + writes
                us = {k: v / args.freq / ops * 1e6 for k, v in parts.items()}
                pair[tool] = ops / secs
                per_op[tool].append(us)
                rows.append([tool, f"{ops / secs:,.0f}", *(f"{us[k]:.3f}" for k in PARTS),
                             f"{sum(us.values()):.3f}"])
                print(f"  {tool:6s} {ops / secs:9,.0f} IOPS, {sum(us.values()):.3f} us CPU per I/O", flush=True)
                if len(pair) == 2:  # the pair's second run
                    ratios.append(pair.pop("worker") / pair.pop("fio"))
    print(f"\n## randio on {args.target}, direct={job.direct}: CPU microseconds per I/O, by where it ran")
    print(bl.table(["tool", "IOPS", *PARTS, "total"], rows))
    med = {t: {k: statistics.median(u[k] for u in per_op[t]) for k in PARTS} for t in per_op}
    diff = ", ".join(f"{k} {med['fio'][k] - med['worker'][k]:+.3f}" for k in PARTS)
    print(f"\nfio - worker, medians (us per I/O): {diff}")
    print(f"worker / fio IOPS under perf: median {statistics.median(ratios):.3f} ({bl.rng(ratios, '.3f')}); "
          f"fio / worker CPU per I/O: {sum(med['fio'].values()) / sum(med['worker'].values()):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
