"""Which of fio's own per-I/O costs separate it from the worker in the filecount job.

    uv run python bench/fio_options.py [--target tmpfs|ext4] [--files 10] [--direct 0]
                                       [--repeats 4] [--duration 3]

Not a goal check: a probe for the points where both tools are bound by the
CPU. The filecount study's job (64 threads, 8 KiB, 70 % reads, k files of 32
MiB, as `boatload.measure.peers.fio.randrw_argv` gives it) is run by the worker and by
fio with some of the options the study's fio twin uses taken out again, each
on fresh files laid out by `randio --prepare` in a fresh directory, the
order reversed every repetition. Prints per variant the median IOPS,
worker / variant, and user and system CPU microseconds per I/O (getrusage of
the child: the whole process).

Variants: `fio` (the study's twin), `-align` (without `--iomem_align=4096
--scramble_buffers=0`), `-align-bw` (also without `--disable_bw_measurement=1`).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys

import benchlib as bl

from boatload.measure.peers import fio

FIO_SIZE = 32 << 20
# what each variant takes out of the study's fio command line
VARIANTS = {
    "fio": set(),
    "fio-align": {"--iomem_align=4096", "--scramble_buffers=0"},
    "fio-align-bw": {"--iomem_align=4096", "--scramble_buffers=0", "--disable_bw_measurement=1"},
}


def run_one(tool: str, d, args, worker) -> tuple[float, float, float]:
    """(IOPS, user us per I/O, system us per I/O) of one run in the prepared directory d."""
    if tool == "worker":
        argv = [str(worker), "randio", "--dir", str(d), "--files", str(args.files), "--file-size", str(FIO_SIZE),
                "--threads", "64", "--seed", "1", "--xfer", "8192", "--read-pct", "70",
                "--duration", f"{args.duration:g}"] + (["--direct"] if args.direct else [])
    else:
        full = fio.randrw_argv(d, args.files, FIO_SIZE, threads=64, xfer=8192, read_pct=70, duration_s=args.duration,
                               direct=bool(args.direct), seed=1)
        argv = [a for a in full if a not in VARIANTS[tool]]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(argv, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise bl.RunError(f"{tool} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    if tool == "worker":
        io = next(p for p in json.loads(proc.stdout)["phases"] if p["name"] == "io")
        ops, iops = io["ops"], io["ops_per_s"]
    else:
        parsed = fio.parse_randrw(fio.json_doc(proc.stdout))
        ops, iops = parsed["ops"], parsed["iops"]
    return iops, (after.ru_utime - before.ru_utime) / ops * 1e6, (after.ru_stime - before.ru_stime) / ops * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="tmpfs", choices=["tmpfs", "ext4"])
    ap.add_argument("--files", type=int, default=10, help="k files of 32 MiB (default 10)")
    ap.add_argument("--direct", type=int, default=0, choices=[0, 1])
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per run (default 3)")
    bl.add_scratch_arg(ap)
    args = ap.parse_args(argv)
    tools = ["worker", *VARIANTS]
    results: dict[str, list] = {t: [] for t in tools}
    with bl.scratch_dir(args.scratch_in) as scratch:
        worker = bl.snapshot(["boatload-worker"], scratch)["boatload-worker"].path
        with bl.mounted(args.target, scratch) as target:
            for rep in range(args.repeats):
                for tool in tools if rep % 2 == 0 else tools[::-1]:
                    with bl.fresh_dir(target.path, tool, sync=True) as d:
                        prep = subprocess.run([str(worker), "randio", "--dir", str(d), "--files", str(args.files),
                                               "--file-size", str(FIO_SIZE), "--threads", "64", "--seed", "1",
                                               "--prepare"], capture_output=True, text=True)
                        if prep.returncode != 0:
                            raise bl.RunError(f"randio --prepare: {prep.stderr.strip()[-300:]}")
                        results[tool].append(run_one(tool, d, args, worker))
                        print(f"  rep {rep + 1}/{args.repeats} {tool:13} {results[tool][-1][0]:>10,.0f} IOPS", flush=True)
    w = statistics.median(r[0] for r in results["worker"])
    rows = [[tool, bl.fmt_rate(statistics.median(r[0] for r in rs)), f"{w / statistics.median(r[0] for r in rs):.3f}",
             f"{statistics.median(r[1] for r in rs):.2f}", f"{statistics.median(r[2] for r in rs):.2f}"]
            for tool, rs in results.items()]
    print(f"\n## {args.target}, {'O_DIRECT' if args.direct else 'buffered'}, {args.files} files, 64 threads, "
          f"median of {args.repeats}")
    print(bl.table(["tool", "IOPS", "worker / this", "user us/I/O", "sys us/I/O"], rows, right={1, 2, 3, 4}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
