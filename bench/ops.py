"""create, stat and delete: boatload-worker against every peer, at 1 and 2
threads, on tmpfs, ext4, xfs and btrfs.

    uv run python bench/ops.py [--files 100000] [--per-dir 1000] [--repeats 5]
        [--targets tmpfs,ext4,xfs,btrfs] [--threads 1,2] [--ops create,stat,delete]

Every method works on the same tree: D directories d000.. of F empty files
f000000.. (F = --per-dir, D = files / F), in a fresh directory of the target.
A stat or delete run gets a tree made just before it, untimed, by the worker
(`tree --threads 2`), then a sync. At T threads each peer runs as T streams
started together, each on its own half of the directories (two processes, or
fio jobs two at a time); bonnie++ has one stream and is compared at 1 thread.

| op | worker | peers |
|---|---|---|
| create | tree --shape DxF --threads T | Python os.open loop, touch (xargs -n F), tar -x, fio filecreate, bonnie++ -n |
| stat | meta --allow-existing --phases stat:seq | Python os.stat loop, find -size, fio filestat, bonnie++ -n |
| delete | meta --allow-existing --phases delete:seq | Python os.unlink loop, rm -rf, fio filedelete, bonnie++ -n |

Clocks: the worker's phase time against the tools that time their own work
(Python: CLOCK_MONOTONIC around the loop, from the first stream's start to
the last one's end; fio: the job runtimes; bonnie++: its rates), the
worker's fork-to-exit time against the rest (touch, tar, find, rm).
Directories are made (create) and removed (delete) outside the timed loops
of the worker, Python and fio; touch, tar, find and rm are timed whole.

Goal (the project issue): worker / peer >= 1.00 for every op, thread count,
target and peer: the median of the per-repetition ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tarfile
from pathlib import Path

import benchlib as bl
from boatload.measure.peers import bonnie as bonnie_peer

OPS = ("create", "stat", "delete")
# peer -> (ops it does, clock, what it runs)
PEERS = {
    "python": (OPS, "inner", "python3 -S: os.open(O_CREAT|O_EXCL)+close / os.stat / os.unlink per name, dir_fd of the leaf"),
    "touch": (("create",), "wall", "xargs -n F touch -- < names (directories made beforehand)"),
    "tar": (("create",), "wall", "tar -xf tree.tar --no-same-owner --no-same-permissions -m (archive built beforehand)"),
    "find": (("stat",), "wall", "find DIRS -type f -size +0 (a stat per file; nothing matches)"),
    "rm": (("delete",), "wall", "rm -rf -- DIRS"),
    "fio": (OPS, "inner", "fio filecreate / filestat / filedelete, one job per leaf directory (nrfiles=F, "
                          "file_service_type=sequential), T jobs at a time"),
    "bonnie": (OPS, "inner", "bonnie++ -d DIR -s 0 -n K:0:0:K -u root -q: seq_create, seq_stat, seq_del (1 stream)"),
}
BONNIE_COLUMN = {"create": "seq_create", "stat": "seq_stat", "delete": "seq_del"}

PYTHON_LOOP = r'''
import os, sys, time
op, root, nf, fw, dirs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split(",")
names = [f"f{i:0{fw}d}" for i in range(nf)]
dflags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
o, c, st, ul = os.open, os.close, os.stat, os.unlink
rfd = o(root, dflags)
fds = [o(d, dflags, dir_fd=rfd) for d in dirs]
t0 = time.monotonic()
for dfd in fds:
    if op == "create":
        for n in names:
            c(o(n, flags, 0o644, dir_fd=dfd))
    elif op == "stat":
        for n in names:
            st(n, dir_fd=dfd, follow_symlinks=False)
    else:
        for n in names:
            ul(n, dir_fd=dfd)
t1 = time.monotonic()
for dfd in fds:
    c(dfd)
if op == "delete":
    for d in dirs:
        os.rmdir(d, dir_fd=rfd)
sys.stdout.write(f"{t0} {t1}\n")  # one write: two streams share the pipe
'''


def width(n: int, least: int) -> int:
    return max(least, len(str(n - 1)))


def halves(items: list[str], parts: int) -> list[list[str]]:
    """`items` in `parts` contiguous shares, as even as can be."""
    size, extra = divmod(len(items), parts)
    out, i = [], 0
    for p in range(parts):
        n = size + (p < extra)
        out.append(items[i:i + n])
        i += n
    return out


def together(commands: list[list[str]]) -> list[str]:
    """One command line that starts every command at once and waits for all."""
    if len(commands) == 1:
        return commands[0]
    line = " & ".join(shlex.join(c) for c in commands) + " & wait"
    return ["sh", "-c", line]


class Ops:
    def __init__(self, args, scratch: Path, bins: dict):
        self.D, self.F = args.files // args.per_dir, args.per_dir
        self.N = self.D * self.F
        dw, self.fw = width(self.D, 3), width(self.F, 6)
        self.dirs = [f"d{i:0{dw}d}" for i in range(self.D)]
        self.names = [f"f{i:0{self.fw}d}" for i in range(self.F)]
        self.bonnie_k = args.bonnie_k
        self.scratch, self.bins = scratch, bins
        self.threads = args.threads
        self._prepare()

    def _prepare(self):
        """Helper files, once, outside any timing, on the scratch file system."""
        s = self.scratch
        (s / "ops_loop.py").write_text(PYTHON_LOOP)
        for t in self.threads:
            for k, share in enumerate(halves(self.dirs, t)):
                (s / f"names-{t}-{k}.txt").write_text("".join(f"{d}/{n}\n" for d in share for n in self.names))
                with tarfile.open(s / f"tree-{t}-{k}.tar", "w", format=tarfile.GNU_FORMAT) as tar:
                    for d in share:
                        ti = tarfile.TarInfo(d)
                        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
                        tar.addfile(ti)
                        for n in self.names:
                            ti = tarfile.TarInfo(f"{d}/{n}")
                            ti.mode, ti.mtime = 0o644, 0
                            tar.addfile(ti)
            for op, engine in (("create", "filecreate"), ("stat", "filestat"), ("delete", "filedelete")):
                # filestat and filedelete lay their files out first (untimed), at
                # least 1 byte each: fio refuses filesize=0
                lines = ["[global]", f"ioengine={engine}", "fallocate=none", *(["filesize=1", "bs=1"] if op != "create" else ["filesize=4k"]),
                         f"nrfiles={self.F}", "openfiles=1", "thread", "file_service_type=sequential"]
                for i, d in enumerate(self.dirs):
                    lines += [f"[{d}]", f"directory={d}"] + (["stonewall"] if i % t == 0 else [])
                (s / f"{op}-{t}.fio").write_text("\n".join(lines) + "\n")

    def methods(self, ops: list[str], peers: list[str]) -> list[str]:
        out = []
        for op in ops:
            for t in self.threads:
                out.append(f"{op}/{t}t/worker")
                out += [f"{op}/{t}t/{p}" for p in peers if p != "bonnie" and op in PEERS[p][0]]
        if "bonnie" in peers and 1 in self.threads:
            out.append("bonnie")
        return out

    def expect(self, method: str) -> tuple[int, int]:
        if method == "bonnie":
            return (0, 0)
        op, _, tool = method.split("/")
        if op == "delete":
            return (0, self.D) if tool == "fio" else (0, 0)
        return (self.N, self.D)

    def prepare(self, method: str, d: Path, sync: bool) -> None:
        """The untimed part of a run: the tree to stat or delete, or the directories to create in."""
        if method == "bonnie":
            return
        op, _, tool = method.split("/")
        if tool == "fio" or (op == "create" and tool in ("python", "touch")):
            for name in self.dirs:  # fio, the Python loop and touch make no directories
                os.mkdir(d / name)
        elif op != "create":
            bl.run_timed([self.bins["boatload-worker"].path, "tree", "--dir", d, "--shape", f"{self.D}x{self.F}",
                          "--threads", 2])
        if sync:
            os.sync()

    def run(self, method: str, d: Path) -> bl.Sample:
        if method == "bonnie":
            return self._bonnie(d)
        op, t, tool = method.split("/")
        t = int(t[:-1])
        s = self.scratch
        shares = halves(self.dirs, t)
        if tool == "worker":
            return self._worker(op, t, d)
        if tool == "python":
            run = bl.run_timed(together([[sys.executable, "-S", str(s / "ops_loop.py"), op, str(d), str(self.F),
                                          str(self.fw), ",".join(share)] for share in shares]))
            spans = [tuple(map(float, line.split())) for line in run.out.splitlines() if line.strip()]
            if len(spans) != t:
                raise bl.RunError(f"python: {len(spans)} streams reported, expected {t}")
            return bl.Sample.of(run, self.N, max(e for _, e in spans) - min(b for b, _ in spans))
        if tool == "touch":
            run = bl.run_timed(["sh", "-c", " & ".join(f"xargs -n {self.F} touch -- < {shlex.quote(str(s / f'names-{t}-{k}.txt'))}"
                                                       for k in range(t)) + (" & wait" if t > 1 else "")], cwd=d)
            return bl.Sample.of(run, self.N)
        if tool == "tar":
            run = bl.run_timed(together([["tar", "-xf", str(s / f"tree-{t}-{k}.tar"), "--no-same-owner",
                                          "--no-same-permissions", "-m"] for k in range(t)]), cwd=d)
            return bl.Sample.of(run, self.N)
        if tool == "find":
            run = bl.run_timed(together([["find", *share, "-type", "f", "-size", "+0"] for share in shares]), cwd=d)
            if run.out.strip():
                raise bl.RunError(f"find matched files of size > 0: {run.out[:200]}")
            return bl.Sample.of(run, self.N)
        if tool == "rm":
            run = bl.run_timed(together([["rm", "-rf", "--", *share] for share in shares]), cwd=d)
            return bl.Sample.of(run, self.N)
        if tool == "fio":
            return self._fio(op, t, d)
        raise ValueError(method)

    def _worker(self, op: str, t: int, d: Path) -> bl.Sample:
        w = self.bins["boatload-worker"].path
        if op == "create":
            argv = [w, "tree", "--dir", d, "--shape", f"{self.D}x{self.F}", "--threads", t]
        else:
            argv = [w, "meta", "--dir", d, "--files", self.N, "--dirs", self.D, "--threads", t, "--allow-existing",
                    "--phases", f"{op}:seq"]
        run = bl.run_timed(argv)
        doc = json.loads(run.out)
        ph = doc["phases"][0] if doc.get("phases") else {}
        if doc.get("status") != "ok" or ph.get("name") != op or ph.get("ops") != self.N:
            raise bl.RunError(f"worker {op}: status {doc.get('status')}, phase {ph.get('name')}, ops {ph.get('ops')}")
        return bl.Sample.of(run, self.N, ph["seconds"], extra={"worker": doc["worker"],
                                                              "dir_phases": doc.get("dir_phases")})

    def _fio(self, op: str, t: int, d: Path) -> bl.Sample:
        run = bl.run_timed(["fio", self.scratch / f"{op}-{t}.fio", "--output-format=json"], cwd=d)
        groups: dict[int, int] = {}
        for job in bl.json_doc(run.out)["jobs"]:
            rd = job["read"]  # these engines time each call as a read
            if job.get("error") or rd["total_ios"] != self.F:
                raise bl.RunError(f"fio {op} job {job['jobname']}: error {job.get('error')}, {rd['total_ios']} files")
            groups[job["groupid"]] = max(groups.get(job["groupid"], 0), rd["runtime"])
        # runtimes are whole ms, rounded up: take each group's midpoint, R - 0.5 ms
        total_ms = sum(groups.values())
        return bl.Sample(self.N, run.wall, (total_ms - 0.5 * len(groups)) / 1000, others=run.others,
                         extra={"fio_groups": len(groups), "fio_runtime_ms": total_ms})

    def _bonnie(self, d: Path) -> bl.Sample:
        k = self.bonnie_k
        run = bl.run_timed(bonnie_peer.argv(d, k, 0, k))
        rates = bl.bonnie_rates(run.out, k, k)
        return bl.Sample(k * 1024, None, others=run.others, extra={"bonnie": rates})


def rate(method: str, sample: bl.Sample | None, op: str, clock: str) -> float | None:
    if sample is None:
        return None
    if method == "bonnie":
        return sample.extra["bonnie"].get(BONNIE_COLUMN[op])
    return sample.rate_of(clock)


def report(tname: str, res: dict, ops: list[str], threads: list[int], peers: list[str], repeats: int) -> list[list]:
    """Per op and thread count: every method's rate, and worker / peer; the goal rows."""
    goals = []
    for op in ops:
        rows = []
        for t in threads:
            worker = res.get(f"{op}/{t}t/worker", [])
            for p in ["worker"] + peers:
                if p != "worker" and op not in PEERS[p][0]:
                    continue
                if p == "bonnie" and t != 1:
                    continue
                m = "bonnie" if p == "bonnie" else f"{op}/{t}t/{p}"
                clock = "inner" if p == "worker" else PEERS[p][1]
                rates = [rate(m, s, op, clock) for s in res.get(m, [])]
                ratios = []
                if p != "worker":
                    for w, s in zip(worker, res.get(m, [])):
                        a, b = rate("worker", w, op, clock), rate(m, s, op, clock)
                        if a and b:
                            ratios.append(a / b)
                    g = bl.med(ratios)
                    goals.append([tname, op, f"{t}", p, clock, f"{g:.2f}" if g else "-",
                                  bl.rng(ratios, ".2f"), bl.verdict(g, 1.00)])
                rows.append([p, t, clock, bl.fmt_rate(bl.med(rates)), bl.spread(rates),
                             f"{bl.med(ratios):.2f}" if ratios else "-", bl.rng(ratios, ".2f") if ratios else "-"])
        print(f"\n## {op} on {tname}: files/s, median of {repeats}")
        print(bl.table(["method", "threads", "clock", "files/s", "spread", "worker/x", "range"], rows))
    return goals


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000, help="files per run (default 100000)")
    ap.add_argument("--per-dir", type=int, default=1000, help="files per directory (default 1000)")
    ap.add_argument("--repeats", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument("--targets", default=",".join(bl.TARGETS), help=f"comma-separated (default {','.join(bl.TARGETS)})")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--ops", default=",".join(OPS), help=f"comma-separated (default {','.join(OPS)})")
    ap.add_argument("--peers", default=",".join(PEERS), help=f"comma-separated (default {','.join(PEERS)})")
    ap.add_argument("--bonnie-k", type=int, default=1000,
                    help="bonnie++ -n K:0:0:K (K*1024 files, 1024 per directory; default 1000: with fewer its stat "
                         "phase takes under 0.5 s and it prints +++++)")
    bl.add_run_args(ap)
    args = ap.parse_args()
    if args.files % args.per_dir or args.files < args.per_dir:
        ap.error("--files must be a multiple of --per-dir")
    args.threads = sorted({int(t) for t in args.threads.split(",")})
    ops = [o for o in args.ops.split(",") if o]
    peers = [p for p in args.peers.split(",") if p]
    for name, given, known in (("--ops", ops, OPS), ("--peers", peers, PEERS)):
        bad = [x for x in given if x not in known]
        if bad:
            ap.error(f"{name}: unknown {', '.join(bad)} (known: {', '.join(known)})")
    if args.files // args.per_dir < max(args.threads):
        ap.error("--threads: more threads than directories")
    if os.geteuid() != 0:
        sys.exit("bench: needs root (it mounts its targets)")

    all_samples, goals = {}, []
    with bl.scratch_dir(args.scratch_in) as scratch:
        bins = bl.snapshot(["boatload-worker"], scratch)
        print("\n".join(bl.host_header(bins)))
        c = Ops(args, scratch, bins)
        methods = c.methods(ops, peers)
        print(f"# {c.D} dirs x {c.F} files = {c.N:,} empty files per run (bonnie++: {args.bonnie_k} x 1024); "
              f"{args.repeats} repetitions, order shuffled each repetition, fresh directory per run")
        for p in peers:
            print(f"#   {p:<7} [{PEERS[p][1]}] {PEERS[p][2]}")
        for tname in args.targets.split(","):
            inodes = max(1 << 20, 3 * max(c.N, args.bonnie_k * 1024))
            with bl.mounted(tname, scratch, inodes) as tgt:
                before = bl.load()

                def run_one(m, r):
                    with bl.fresh_dir(tgt.path, m.replace("/", "-"), sync=(tname != "tmpfs")) as d:
                        c.prepare(m, d, sync=(tname != "tmpfs"))
                        s = c.run(m, d)
                        got = bl.count_tree(d)
                        if got != c.expect(m):
                            raise bl.RunError(f"{m}: left {got[0]} files, {got[1]} dirs; expected {c.expect(m)}")
                        return s

                res = bl.alternate(methods, args.repeats, run_one, args.quiet_wait, max_others=args.max_others,
                                   tries=args.tries)
                after = bl.load()
            all_samples[tname] = res
            goals += report(tname, res, ops, args.threads, peers, args.repeats)
            print(bl.busy_note(before, after))
            print(f"# {bl.busy_runs(res, args.max_others)}")

    print("\n## goals: worker / peer at the same thread count (median of per-repetition ratios), needs >= 1.00")
    print(bl.table(["target", "op", "threads", "peer", "clock", "worker/peer", "range", "verdict"], goals,
                   right={2, 5, 6}))
    bl.dump_samples(args.json, all_samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
