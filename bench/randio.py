"""Random I/O: boatload-worker `randio` against fio running the same job, same targets.

    uv run python bench/randio.py [--files 64] [--file-size 16M] [--duration 10] [--direct 0,1]
                                  [--repeats 5] [--targets tmpfs,ext4]

The job: N files of S bytes, 64 threads, 8 KiB transfers at uniformly random
xfer-aligned offsets in a uniformly random file, 70 % reads (pread) and 30 %
writes (pwrite), for D seconds, buffered (--direct 0) or O_DIRECT (1).

    worker: boatload-worker randio --dir DIR --files N --file-size S --xfer 8K --read-pct 70
                --duration D --threads 64 [--direct]
            (its "prepare" phase finds the files there; the "io" phase is the one compared)
    fio:    the filecount study's fio twin (boatload.measure.peers.fio.randrw_argv):
            fio --name=filecount --directory=DIR --filename=f000:f001:... --filesize=S
                --ioengine=psync --thread --numjobs=64 --rw=randrw --rwmixread=70 --bs=8192
                --direct=0|1 --time_based --runtime=D*1000ms --file_service_type=random
                --norandommap --randrepeat=0 --randseed=1 --invalidate=0 --fadvise_hint=0
                --allow_file_create=0 --disable_lat=1 --clat_percentiles=1
                --disable_bw_measurement=1 --group_reporting --unified_rw_reporting=both --output-format=json
            (all 64 jobs share the N files, like the worker's threads; psync = one
            pread/pwrite per I/O per thread)
    fio+lat: the same without `--disable_lat=1 --clat_percentiles=1 --disable_bw_measurement=1`: fio's
            default statistics, for information (not in the goal)

Every run, of either tool, gets N fresh files in a fresh directory, laid out
(untimed) by `boatload-worker randio --prepare`: 1 MiB writes of pseudo-random
bytes, fdatasync'ed. That is how the filecount study runs its worker and fio
twins, and it gives both tools the same page-cache state, which matters more
than anything else here: the same job on ext4 ran at 500-560k IOPS (buffered)
on freshly written files and at 710-860k after `drop_caches`
(perf put 37 % of the CPU time in ext4_block_write_begin on the freshly
written files, 5 % on older ones). Hence also fio's `--invalidate=0`: by
default fio drops the files' cached pages before it starts, the worker does not.

Two more fio options matter. `--filename=f000:f001:...` rather than
`--filename_format=f.$filenum --nrfiles=N`: with the latter fio 3.33 runs only
the first of the 64 jobs, the 63 clones do no I/O at all. `--fadvise_hint=0`:
fio's default advises POSIX_FADV_RANDOM for a random job, turning read-ahead
off, which the worker (like vdbench) does not do; on a cold ext4 cache fio was
10-30 % faster without the hint.

`--disable_lat=1`: the worker times each I/O once (one clock read per I/O,
its latency the time since the previous one) into a histogram; fio by
default keeps two statistics of every I/O, completion latency (with
percentiles) and total latency, which with psync repeat each other. The
compared fio measures what the worker measures, completion latency with
percentiles; fio+lat, fio's default, is the control that shows whether the
second statistic matters (it did not, within the noise: bench/README.md).

Goal: the worker not slower than fio, worker IOPS / fio IOPS >= 1.00 (median
of per-repetition ratios). The issue first asked for "within 10 % and not
slower"; a ratio above 1.10 was settled as meeting "not slower" once perf
showed the difference to be fio's own per-I/O bookkeeping (bench/README.md),
so "within 10 %" is printed for information only, like worker / fio+lat.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import benchlib as bl
from boatload.measure.peers import fio as fio_peer

THREADS, XFER, READ_PCT = 64, 8192, 70
FIO_SEED = 1  # fio's --randseed; the worker runs with its default --seed
TOOLS = ("worker", "fio", "fio+lat")  # fio+lat: fio with its default latency statistics (information)


@dataclass(frozen=True)
class Job:
    """The compared job: N files of S bytes, D seconds, buffered or O_DIRECT;
    the two tools' command lines for it and what they report."""

    files: int
    file_size: int
    duration: float
    direct: int
    threads: int = THREADS

    def names(self) -> list[str]:
        return fio_peer.file_names(self.files)  # the worker's names

    def prepare(self, worker: Path, d: Path) -> None:
        """Lay out fresh files in d (untimed), as the filecount study does."""
        r = bl.run_timed([worker, "randio", "--dir", d, "--files", self.files, "--file-size", self.file_size,
                          "--prepare"])
        if json.loads(r.out).get("status") != "ok":
            raise bl.RunError(f"randio --prepare: {r.out[:200]}")

    def worker_argv(self, worker: Path, d: Path) -> list:
        return ([worker, "randio", "--dir", d, "--files", self.files, "--file-size", self.file_size,
                 "--xfer", XFER, "--read-pct", READ_PCT, "--duration", f"{self.duration:g}",
                 "--threads", self.threads] + (["--direct"] if self.direct else []))

    def fio_argv(self, d: Path, default_latency: bool = False) -> list:
        """The filecount study's fio twin (boatload.measure.peers.fio), measuring each
        I/O once as the worker does; with `default_latency` also fio's second
        latency statistic (its default)."""
        return fio_peer.randrw_argv(d, self.files, self.file_size, threads=self.threads, xfer=XFER,
                                    read_pct=READ_PCT, duration_s=self.duration, direct=bool(self.direct),
                                    seed=FIO_SEED, default_latency=default_latency)

    def parse(self, tool: str, out: str) -> tuple[int, int, float]:
        """(reads, writes, seconds of the I/O by the tool's own clock) from its output."""
        if tool == "worker":
            doc = json.loads(out)
            if doc.get("status") != "ok":
                raise bl.RunError(f"worker randio: status {doc.get('status')}: {doc.get('error')}")
            io = [p for p in doc["phases"] if p["name"] == "io"][-1]
            return io["reads"]["ops"], io["writes"]["ops"], io["seconds"]
        try:
            doc = fio_peer.json_doc(out)
            numjobs = doc["jobs"][0]["job options"].get("numjobs", str(self.threads))
            if numjobs != str(self.threads):
                raise bl.RunError(f"fio: ran {numjobs} jobs, expected {self.threads}")
            totals = fio_peer.parse_randrw(doc)
        except fio_peer.FioError as e:
            raise bl.RunError(f"fio: {e}") from None
        return totals["reads"], totals["writes"], totals["seconds"]


def paired_runs(job: Job, worker: Path, root: Path, repeats: int, *, sync: bool):
    """(pair, tool, d) for `repeats` pairs of runs, the order alternating
    (worker first in even pairs), each in a fresh directory d under root with
    the job's files laid out; d goes when the caller moves on to the next."""
    for r in range(repeats):
        for tool in (("worker", "fio") if r % 2 == 0 else ("fio", "worker")):
            with bl.fresh_dir(root, tool, sync=sync) as d:
                job.prepare(worker, d)
                yield r, tool, d


def size(text: str) -> int:
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not m:
        raise argparse.ArgumentTypeError(f"expected a size like 16M, got {text!r}")
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=64, help="N files (default 64)")
    ap.add_argument("--file-size", type=size, default=size("16M"), help="S bytes per file (default 16M)")
    ap.add_argument("--duration", type=float, default=10, help="D seconds per run (default 10)")
    ap.add_argument("--direct", default="0,1", help="0 (buffered), 1 (O_DIRECT) or both: 0,1 (default)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--targets", default="tmpfs,ext4")
    bl.add_run_args(ap)
    args = ap.parse_args()
    N, S, D = args.files, args.file_size, args.duration
    directs = [int(x) for x in args.direct.split(",")]

    if os.geteuid() != 0:
        sys.exit("bench: needs root (it mounts a tmpfs and a loop-mounted ext4)")

    methods = [f"{tool}-d{d}" for d in directs for tool in TOOLS]
    all_samples, summary = {}, []
    with bl.scratch_dir(args.scratch_in) as scratch:
        bins = bl.snapshot(["boatload-worker"], scratch)
        print("\n".join(bl.host_header(bins)))
        print(f"# {N} files x {S:,} bytes, {THREADS} threads, {XFER} B transfers, {READ_PCT} % reads, {D:g} s per run; "
              f"{args.repeats} repetitions, alternating; every run on N fresh files laid out by `randio --prepare`")

        def run(m: str, d: Path) -> bl.Sample:
            tool, direct = m.split("-d")
            job = Job(N, S, D, int(direct))
            if tool == "worker":
                r = bl.run_timed(job.worker_argv(bins["boatload-worker"].path, d))
            else:
                r = bl.run_timed(job.fio_argv(d, default_latency=(tool == "fio+lat")))
            reads, writes, inner_s = job.parse("worker" if tool == "worker" else "fio", r.out)
            return bl.Sample.of(r, reads + writes, inner_s, extra={"reads": reads, "writes": writes})

        for tname in args.targets.split(","):
            with bl.mounted(tname, scratch) as tgt:
                before = bl.load()

                def run_one(m, r):
                    with bl.fresh_dir(tgt.path, m, sync=(tname != "tmpfs")) as d:
                        Job(N, S, D, 0).prepare(bins["boatload-worker"].path, d)
                        return run(m, d)

                res = bl.alternate(methods, args.repeats, run_one, args.quiet_wait, max_others=args.max_others, tries=args.tries,
                                   show=lambda s: f"{s.rate_of('inner'):,.0f} IOPS, reads {s.extra['reads'] / s.ops:.1%}")
                after = bl.load()
            all_samples[tname] = res
            summary += report(tname, res, directs, args)
            print(bl.busy_note(before, after))
            print(f"# {bl.busy_runs(res, args.max_others)}")

    print("\n## randio goal: worker / fio IOPS, needs ratio >= 1.00 (not slower; within 10 % for information)")
    print(bl.table(["target", "direct", "median", "range", "within 10%", "not slower", "verdict"], summary,
                   right={2, 3}))
    bl.dump_samples(args.json, all_samples)
    return 0


def report(tname, res, directs, args) -> list[list]:
    rows, summary = [], []
    for d in directs:
        w = res[f"worker-d{d}"]
        worker_vs = {tool: bl.paired_ratios(w, res[f"{tool}-d{d}"], "inner", "inner") for tool in TOOLS[1:]}
        ratios = worker_vs["fio"]
        for tool in TOOLS:
            ss = res[f"{tool}-d{d}"]
            iops = [s.rate_of("inner") if s else None for s in ss]
            share = bl.med([s.extra["reads"] / s.ops for s in ss if s])
            cpu = bl.med([s.cpu_s / s.ops * 1e6 for s in ss if s and s.cpu_s is not None])
            vs = worker_vs.get(tool)
            rows.append([f"{tool}-d{d}", bl.fmt_rate(bl.med(iops)), bl.rng(iops, ",.0f"), bl.spread(iops),
                         f"{share:.1%}" if share is not None else "-", f"{cpu:.2f}" if cpu is not None else "-",
                         f"{bl.med(vs):.3f} ({bl.rng(vs, '.3f')})" if vs else ""])
        g = bl.med(ratios)
        within = bl.verdict(g, 0.90, 1.10)
        slower = bl.verdict(g, 1.00)
        summary.append([tname, str(d), f"{g:.3f}" if g else "-", bl.rng(ratios, ".3f"), within, slower, slower])
    print(f"\n## randio on {tname}: IOPS (reads + writes), median of {args.repeats}")
    print(bl.table(["method", "IOPS", "range", "spread", "reads", "cpu us/op", "worker / this"], rows))
    print("# IOPS = ops / the tool's own time of the I/O phase (worker: its io phase; fio: the group's runtime); "
          "cpu us/op: user+sys CPU of the whole process per op (fio: with its start-up and file opening)")
    return summary


if __name__ == "__main__":
    sys.exit(main())
