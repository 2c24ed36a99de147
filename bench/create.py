"""Empty-file create: boatload-worker `tree` against its peers, on the same targets.

    uv run python bench/create.py [--files 100000] [--repeats 5] [--targets tmpfs,ext4]

Goals (from the project issue):
  1. worker --threads 2 >= 1.3 x the best peer (Python os.open loop, touch via
     xargs -n 1000, tar x, fio filecreate, bonnie++ -n sequential create);
  2. worker --threads 1 >= 0.95 x native/build/bare-create (the bare
     mkdirat + openat/close loop, i.e. the system-call limit).

The worker makes empty files with one mknodat(S_IFREG) each (its default,
--create-call auto); the row worker-1t-open runs it with --create-call open,
the same two calls as bare-create, so worker-1t-open / bare-create is the
worker's own overhead (timing, histogram, counters), printed for information.

Every method makes the same tree, D leaf directories d000.. of F empty files
(F = --per-dir, 1000; D = files / F) in a fresh empty directory of the target,
except bonnie++, which needs more files to time its phases (see --bonnie-k)
and is compared per file. Methods alternate within each repetition; ratios are
taken per repetition (worker run and peer run next to each other in time) and
their median is the figure that is checked against the goal.

Which clock: a tool that times its own work (worker, bare-create, the Python
loop, fio, bonnie++) is compared on that "inner" time against the worker's own
phase time; touch and tar cannot, so they are compared fork-to-exit ("wall")
against the worker's fork-to-exit time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tarfile
from collections import Counter
from pathlib import Path

import benchlib as bl
from boatload.measure.peers import bonnie as bonnie_peer

PYTHON_LOOP = r'''
import os, sys, time
root, nd, nf, dw, fw = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
t0 = time.perf_counter()
o, c = os.open, os.close
flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
dflags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
names = [f"f{i:0{fw}d}" for i in range(nf)]
rfd = o(root, dflags)
for d in range(nd):
    dn = f"d{d:0{dw}d}"
    os.mkdir(dn, 0o755, dir_fd=rfd)
    dfd = o(dn, dflags, dir_fd=rfd)
    for n in names:
        c(o(n, flags, 0o644, dir_fd=dfd))
    c(dfd)
print(time.perf_counter() - t0)
'''

# method -> the clock it is compared on (see the module docstring)
CLOCK = {
    "worker-2t": "inner",
    "worker-1t": "inner",
    "worker-1t-open": "inner",
    "bare-create": "inner",
    "python": "inner",
    "touch": "wall",
    "tar": "wall",
    "fio": "inner",
    "bonnie": "inner",
    # extras (information, not in the goal)
    "fio-x2": "inner",
    "fio-rr": "inner",
    "tar-plain": "wall",
}
GOAL_PEERS = ["python", "touch", "tar", "fio", "bonnie"]
EXTRAS = ["fio-x2", "fio-rr", "tar-plain"]
DESCRIBE = {
    "worker-2t": "boatload-worker tree --shape DxF --threads 2 (mknodat per file: --create-call auto)",
    "worker-1t": "boatload-worker tree --shape DxF --threads 1 (mknodat per file)",
    "worker-1t-open": "boatload-worker tree --shape DxF --threads 1 --create-call open (openat+close, as bare-create)",
    "bare-create": "native/build/bare-create DIR D F",
    "python": "python3 -S loop: os.mkdir + os.open(name, O_CREAT|O_EXCL|O_WRONLY, dir_fd=leaf) + os.close",
    "touch": "sh -c 'xargs mkdir < dirs && xargs -n F touch < names' (one touch per leaf dir)",
    "tar": "tar -xf tree.tar --no-same-owner --no-same-permissions -m (archive built beforehand)",
    "fio": "fio filecreate, one job per leaf dir (nrfiles=F, openfiles=1, file_service_type=sequential), jobs stonewalled",
    "bonnie": "bonnie++ -d DIR -s 0 -n K:0:0:K -u root -q, column 26 (seq_create)",
    "fio-x2": "as fio, but two jobs (leaf dirs) at a time",
    "fio-rr": "as fio, with fio's default file_service_type=roundrobin",
    "tar-plain": "tar -xf tree.tar (as root: restores owner, mode and mtime)",
}


def width(n: int, least: int) -> int:
    return max(least, len(str(n - 1)))


class Create:
    def __init__(self, args, scratch: Path, bins: dict):
        self.D, self.F = args.files // args.per_dir, args.per_dir
        self.N = self.D * self.F
        self.dw, self.fw = width(self.D, 3), width(self.F, 6)
        self.dirs = [f"d{i:0{self.dw}d}" for i in range(self.D)]
        self.names = [f"f{i:0{self.fw}d}" for i in range(self.F)]
        self.bonnie_k = args.bonnie_k
        self.scratch, self.bins = scratch, bins
        self._prepare()

    # helper files, built once, outside any timing, on the scratch file system
    def _prepare(self):
        s = self.scratch
        (s / "create_loop.py").write_text(PYTHON_LOOP)
        (s / "dirs.txt").write_text("".join(f"{d}\n" for d in self.dirs))
        (s / "names.txt").write_text("".join(f"{d}/{n}\n" for d in self.dirs for n in self.names))
        with tarfile.open(s / "tree.tar", "w", format=tarfile.GNU_FORMAT) as tar:
            for d in self.dirs:
                ti = tarfile.TarInfo(d)
                ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
                tar.addfile(ti)
                for n in self.names:
                    ti = tarfile.TarInfo(f"{d}/{n}")
                    ti.mode, ti.mtime = 0o644, 0
                    tar.addfile(ti)
        for variant, per_group, seq in (("fio", 1, True), ("fio-x2", 2, True), ("fio-rr", 1, False)):
            lines = ["[global]", "ioengine=filecreate", "fallocate=none", "filesize=4k", f"nrfiles={self.F}",
                     "openfiles=1", "thread"] + (["file_service_type=sequential"] if seq else [])
            for i, d in enumerate(self.dirs):
                lines += [f"[{d}]", f"directory={d}"] + (["stonewall"] if i % per_group == 0 else [])
            (s / f"{variant}.fio").write_text("\n".join(lines) + "\n")

    def expect(self, method: str) -> tuple[int, int]:
        return (0, 0) if method == "bonnie" else (self.N, self.D)

    def run(self, method: str, d: Path) -> bl.Sample:
        s, b = self.scratch, self.bins
        if method.startswith("worker"):
            threads = 2 if method == "worker-2t" else 1
            call = "open" if method.endswith("-open") else "auto"
            run = bl.run_timed([b["boatload-worker"].path, "tree", "--dir", d, "--shape",
                                f"{self.D}x{self.F}", "--threads", threads, "--create-call", call])
            doc = json.loads(run.out)
            ph = doc["phases"][0]
            used = doc["params"].get("create_call")
            if doc["status"] != "ok" or ph["name"] != "create" or ph["ops"] != self.N or \
                    used != ("open" if call == "open" else "mknod"):
                raise bl.RunError(f"worker: status {doc['status']}, phase {ph['name']}, ops {ph['ops']}, "
                                  f"create_call {used}")
            return bl.Sample.of(run, self.N, ph["seconds"], extra={"worker": doc["worker"]})
        if method == "bare-create":
            run = bl.run_timed([b["bare-create"].path, d, self.D, self.F])
            m = re.search(r"\(([0-9.]+) s\)", run.out)
            return bl.Sample.of(run, self.N, float(m.group(1)))
        if method == "python":
            run = bl.run_timed([sys.executable, "-S", s / "create_loop.py", d, self.D, self.F, self.dw, self.fw])
            return bl.Sample.of(run, self.N, float(run.out.strip()))
        if method == "touch":
            run = bl.run_timed(["sh", "-c", f"xargs mkdir -- < {s}/dirs.txt && xargs -n {self.F} touch -- < {s}/names.txt"],
                               cwd=d)
            return bl.Sample.of(run, self.N)
        if method in ("tar", "tar-plain"):
            fast = ["--no-same-owner", "--no-same-permissions", "-m"] if method == "tar" else []
            run = bl.run_timed(["tar", "-xf", s / "tree.tar", *fast], cwd=d)
            return bl.Sample.of(run, self.N)
        if method.startswith("fio"):
            return self._fio(method, d)
        if method == "bonnie":
            return self._bonnie(d)
        raise ValueError(method)

    def _fio(self, variant: str, d: Path) -> bl.Sample:
        for name in self.dirs:  # fio does not make directories; made outside its timing
            os.mkdir(d / name)
        run = bl.run_timed(["fio", self.scratch / f"{variant}.fio", "--output-format=json"], cwd=d)
        jobs = bl.json_doc(run.out)["jobs"]
        groups: dict[int, int] = {}
        for job in jobs:
            rd = job["read"]  # filecreate times each open() as a read (its default rw=read)
            if job.get("error") or rd["total_ios"] != self.F:
                raise bl.RunError(f"fio job {job['jobname']}: error {job.get('error')}, {rd['total_ios']} files")
            groups[job["groupid"]] = max(groups.get(job["groupid"], 0), rd["runtime"])
        # fio reports each job's runtime in whole ms, rounded up: the true time
        # of a group is in (R-1, R] ms; take the midpoint, keep the bounds.
        total_ms = sum(groups.values())
        mid_s = (total_ms - 0.5 * len(groups)) / 1000
        bounds = (self.N / (total_ms / 1000), self.N / ((total_ms - len(groups)) / 1000))
        # fio's CPU covers its start-up and the waits between job groups too: not shown
        return bl.Sample(self.N, run.wall, mid_s, others=run.others,
                         extra={"fio_groups": len(groups), "fio_runtime_ms": total_ms, "fio_rate_bounds": bounds})

    def _bonnie(self, d: Path) -> bl.Sample:
        k = self.bonnie_k
        run = bl.run_timed(bonnie_peer.argv(d, k, 0, k))  # bonnie++ -s 0 -n K:0:0:K -u root -q -d DIR
        f = bl.bonnie_rates(run.out, k, k)
        rate = f["seq_create"]
        note = "" if rate is not None else "(+++++: seq create under 0.5 s, raise --bonnie-k)"
        # its wall and CPU time cover all six phases: not comparable
        return bl.Sample(k * 1024, None, rate=rate, note=note, others=run.others, extra={"bonnie": f})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000, help="files per run (default 100000)")
    ap.add_argument("--per-dir", type=int, default=1000, help="files per leaf directory (default 1000)")
    ap.add_argument("--repeats", type=int, default=5, help="repetitions, >= 5 for the goals (default 5)")
    ap.add_argument("--targets", default="tmpfs,ext4", help="comma-separated: tmpfs, ext4 (default both)")
    ap.add_argument("--bonnie-k", type=int, default=None,
                    help="bonnie++ -n K:0:0:K, i.e. K*1024 files in K dirs (default: max(300, files/1024); "
                         "bonnie++ prints +++++ for phases under 0.5 s)")
    ap.add_argument("--peers", default=",".join(GOAL_PEERS), help=f"goal peers to run (default {','.join(GOAL_PEERS)})")
    ap.add_argument("--extra", default="", help=f"extra rows, not in the goal: {','.join(EXTRAS)}")
    bl.add_run_args(ap)
    args = ap.parse_args()
    if args.files % args.per_dir or args.files < args.per_dir:
        ap.error("--files must be a multiple of --per-dir")
    if args.bonnie_k is None:
        args.bonnie_k = max(300, round(args.files / 1024))
    peers = [p for p in args.peers.split(",") if p]
    extras = [e for e in args.extra.split(",") if e]
    for p in peers + extras:
        if p not in CLOCK or p.startswith("worker") or p == "bare-create":
            ap.error(f"unknown peer {p!r}")
    methods = ["worker-2t", "worker-1t", "worker-1t-open", "bare-create"] + peers + extras
    if os.geteuid() != 0:
        sys.exit("bench: needs root (it mounts a tmpfs and a loop-mounted ext4)")
    if args.repeats < 5:
        print(f"# note: --repeats {args.repeats} < 5: the goals want the median of at least 5")

    all_samples = {}
    verdicts = []
    with bl.scratch_dir(args.scratch_in) as scratch:
        bins = bl.snapshot(["boatload-worker", "bare-create"], scratch)
        print("\n".join(bl.host_header(bins)))
        c = Create(args, scratch, bins)
        print(f"# tree: {c.D} dirs x {c.F} files = {c.N:,} empty files per run; bonnie++: "
              f"{args.bonnie_k} dirs x 1024 = {args.bonnie_k * 1024:,} files; {args.repeats} repetitions, "
              "order shuffled each repetition, fresh directory per run")
        for m in methods:
            print(f"#   {m:<12} [{CLOCK[m]}] {DESCRIBE[m]}")
        for tname in args.targets.split(","):
            inodes = max(1 << 20, 3 * max(c.N, args.bonnie_k * 1024))
            with bl.mounted(tname, scratch, inodes) as t:
                before = bl.load()

                def run_one(m, r):
                    with bl.fresh_dir(t.path, m, sync=(tname != "tmpfs")) as d:
                        s = c.run(m, d)
                        got = bl.count_tree(d)
                        if got != c.expect(m):
                            raise bl.RunError(f"{m}: left {got[0]} files, {got[1]} dirs; expected {c.expect(m)}")
                        return s

                res = bl.alternate(methods, args.repeats, run_one, args.quiet_wait, max_others=args.max_others, tries=args.tries)
                after = bl.load()
            all_samples[tname] = res
            verdicts += report(tname, res, methods, peers, args, c)
            print(bl.busy_note(before, after))
            print(f"# {bl.busy_runs(res, args.max_others)}")

    print("\n## goals")
    print(bl.table(["target", "goal", "median", "range", "needs", "verdict"], verdicts, right={2, 3, 4}))
    bl.dump_samples(args.json, all_samples)
    return 0


def report(tname, res, methods, peers, args, c) -> list[list]:
    w2 = res["worker-2t"]
    rows = []
    for m in methods:
        clock = CLOCK[m]
        rates = [s.rate_of(clock) if s else None for s in res[m]]
        ratios = bl.paired_ratios(w2, res[m], clock, clock) if m != "worker-2t" else []
        files = c.N if m != "bonnie" else args.bonnie_k * 1024
        cpu = bl.med([s.cpu_s / s.ops * 1e6 for s in res[m] if s and s.cpu_s is not None])
        others = bl.med([s.others for s in res[m] if s and s.others is not None])
        rows.append([m, f"{files:,}", clock, bl.fmt_rate(bl.med(rates)), bl.rng(rates, ",.0f"), bl.spread(rates),
                     f"{bl.med(ratios):.2f}" if ratios else "-", bl.rng(ratios, ".2f") if ratios else "-",
                     f"{cpu:.2f}" if cpu is not None else "-", f"{others * 100:.0f}%" if others is not None else "-"])
    print(f"\n## create on {tname}: files/s, median of {args.repeats} (range, ± half-range/median)")
    print(bl.table(["method", "files", "clock", "files/s", "range", "spread", "worker-2t/x", "ratio range",
                    "cpu us/file", "others"], rows, right={1, 3, 4, 5, 6, 7, 8, 9}))
    print("# worker-2t/x: median of the per-repetition ratios, on x's clock; cpu us/file: user+sys CPU of the "
          "process tree per file (wall-clock methods include their start-up); others: median share of the "
          f"{bl.NCPU} CPUs used by other user processes during the runs")
    fio = [s for s in res.get("fio", []) if s]
    if fio:
        lo = bl.med([s.extra["fio_rate_bounds"][0] for s in fio])
        hi = bl.med([s.extra["fio_rate_bounds"][1] for s in fio])
        print(f"# fio reports each job's runtime in whole ms (rounded up): its rate uses runtime - 0.5 ms per job; "
              f"the bounds are {lo:,.0f}..{hi:,.0f} files/s (median). fio's clock is kind to fio: it stat()s every "
              "file name before the job starts (untimed; leaves negative dentries, so the timed open() skips the "
              "directory search), and its timed 1000-file jobs are ~0.3 s apart, when journal work runs untimed")
    if any(s and s.rate is None for s in res.get("bonnie", [])):
        print("# bonnie++ printed +++++ for its sequential create in some runs (under 0.5 s): those runs are left out")

    # goal 1: per repetition, the worker against the best peer on that peer's clock
    best, who = [], Counter()
    for r in range(args.repeats):
        per = {}
        for p in peers:
            x = bl.paired_ratios([w2[r]], [res[p][r]], CLOCK[p], CLOCK[p])
            if x:
                per[p] = x[0]
        if per:
            p = min(per, key=per.get)
            best.append(per[p])
            who[p] += 1
    g1 = bl.med(best)
    lead = ", ".join(f"{p} {n}x" for p, n in who.most_common())
    print(f"goal 1  worker-2t / best peer = {g1:.2f} (range {bl.rng(best, '.2f')}; best peer per repetition: {lead}); "
          f"needs >= 1.30: {bl.verdict(g1, 1.30)}" if g1 else "goal 1  no data")
    # goal 2: one thread against the bare loop, both on their own clocks
    r1 = bl.paired_ratios(res["worker-1t"], res["bare-create"], "inner", "inner")
    g2 = bl.med(r1)
    f2 = f"{g2:.3f}" if g2 is not None else "-"
    print(f"goal 2  worker-1t / bare-create = {f2} (range {bl.rng(r1, '.3f')}); needs >= 0.95: {bl.verdict(g2, 0.95)}")
    ov = bl.paired_ratios(res["worker-1t-open"], res["bare-create"], "inner", "inner")
    if ov:
        print(f"info    worker-1t-open / bare-create = {bl.med(ov):.3f} (range {bl.rng(ov, '.3f')}): the worker's "
              "overhead on the same openat+close calls")
    sc = bl.paired_ratios(w2, res["worker-1t"], "inner", "inner")
    if sc:
        print(f"info    worker-2t / worker-1t = {bl.med(sc):.2f} (range {bl.rng(sc, '.2f')})")
    return [
        [tname, f"create: worker-2t / best peer ({who.most_common(1)[0][0] if who else '-'})",
         f"{g1:.2f}" if g1 else "-", bl.rng(best, ".2f"), ">= 1.30", bl.verdict(g1, 1.30)],
        [tname, "create: worker-1t / bare-create", f2, bl.rng(r1, ".3f"), ">= 0.95", bl.verdict(g2, 0.95)],
    ]


if __name__ == "__main__":
    sys.exit(main())
