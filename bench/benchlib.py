"""Shared pieces of the benchmarks in bench/: targets, fresh run directories,
timed peer processes, repeated alternating runs, statistics, tables, verdicts.

These are benchmarks, not tests: every script measures the worker and its
peers in the same invocation, on the same mounted target, alternating them
run by run, and prints rates, ratios and a PASS/FAIL line per goal.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from boatload.measure.peers import bonnie as bonnie_peer
from boatload.measure.peers import fio as fio_peer
from boatload.provision.targets import provision
from boatload.base.targetspec import parse_target

ROOT = Path(__file__).resolve().parents[1]
NATIVE_BUILD = ROOT / "native" / "build"


# --------------------------------------------------------------------------
# binaries


@dataclass
class Binary:
    name: str
    source: Path  # where it was built
    path: Path  # the snapshot we run
    sha256: str


def snapshot(names: list[str], into: Path) -> dict[str, Binary]:
    """Copy native/build/<name> into `into` and run the copies.

    Other people rebuild native/ while a benchmark runs; a snapshot keeps one
    binary for the whole invocation, and its sha256 says which one it was."""
    out = {}
    for name in names:
        src = NATIVE_BUILD / name
        if not os.access(src, os.X_OK):
            sys.exit(
                f"bench: {src} is missing; build it first: make -C native && make -C native bench "
                "(or make -C bench build)"
            )
        dst = into / name
        shutil.copy2(src, dst)
        digest = hashlib.sha256(dst.read_bytes()).hexdigest()
        out[name] = Binary(name, src, dst, digest)
    return out


# --------------------------------------------------------------------------
# targets and run directories

# tmpfs: 4 GiB limit (memory is only used as files are made), or
# `size_mb`. ext4, xfs, btrfs: a sparse image (8 GiB, or `size_mb`) in the
# scratch directory (see SCRATCH_IN), loop-mounted. ext4's inode tables and
# journal are written by mkfs (lazy_*_init=0), so no ext4lazyinit thread
# writes in the background while we measure; xfs and btrfs allocate inodes
# as files are made.
TARGETS = ("tmpfs", "ext4", "xfs", "btrfs")


def target_spec(name: str, inodes: int = 1 << 20, size_mb: int | None = None):
    if name == "tmpfs":
        # tmpfs's default inode limit is half the RAM's pages (3 million here)
        return parse_target("tmpfs", {"kind": "tmpfs", "size_mb": size_mb or 4096,
                                      "mount_options": [f"nr_inodes={max(inodes, 1 << 20)}"]})
    mkfs = {
        "ext4": ["-N", str(inodes), "-E", "lazy_itable_init=0,lazy_journal_init=0"],
        "xfs": [],
        "btrfs": [],
    }
    if name not in mkfs:
        sys.exit(f"bench: --targets: unknown target {name!r} (expected one of {', '.join(TARGETS)})")
    return parse_target(name, {"kind": "loop", "fs": name, "size_mb": size_mb or 8192, "mkfs_options": mkfs[name]})


# Where the scratch directory goes by default: a tmpfs, so that the ext4
# target's loop image lives in RAM. On the host disk, every journal commit in
# the image (a FLUSH to the loop device) becomes an fsync of the whole image
# file there: the loop worker then waits, blocked for 0.1-0.4 s per 7 s of
# randio, while the host writes back hundreds of MB under write-back
# throttling, and the comparison measures the host disk more than the tools
# (README.md, "randio on loop ext4").
SCRATCH_IN = Path("/dev/shm")


@contextlib.contextmanager
def scratch_dir(base: Path | None = None):
    """A private scratch directory (under base) for images, mount points and helper files.

    Everything mounted under it is torn down by boatload.provision.targets.provision;
    if a run is killed, `uv run boatload cleanup --scratch DIR` undoes it."""
    if base is not None and not base.is_dir():
        sys.exit(f"bench: --scratch-in: {base} is not a directory")
    scratch = Path(tempfile.mkdtemp(prefix="boatload-bench-", dir=base))
    print(f"# scratch {scratch} (if killed: uv run boatload cleanup --scratch {scratch})", flush=True)
    try:
        yield scratch
    finally:
        mounted = any(str(scratch) in line for line in Path("/proc/self/mountinfo").read_text().splitlines())
        if mounted:
            print(f"bench: something is still mounted under {scratch}; run: uv run boatload cleanup --scratch {scratch}",
                  file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def mounted(name: str, scratch: Path, inodes: int = 1 << 20, size_mb: int | None = None):
    spec = target_spec(name, inodes, size_mb)
    with provision(spec, scratch) as t:
        prov = t.provenance
        desc = f"{name}: {prov.get('kernel_fs')} at {t.path} ({','.join(prov.get('mount_options', []))})"
        if prov.get("loop_device"):
            desc += f", {prov['loop_device']} backed by a sparse {spec.size_mb} MiB image in {scratch}"
        print(f"# target {desc}", flush=True)
        yield t


_seq = 0


@contextlib.contextmanager
def fresh_dir(target_root: Path, label: str, sync: bool):
    """A new empty directory for one run; removed afterwards (outside any timing).

    With sync=True everything is synced after the removal (sync(2), not
    only the target: a loop image's own write-back goes through the host's
    page cache) so that the write-back of this run and of its deletion does
    not land in the next one. Caches are not dropped."""
    global _seq
    _seq += 1
    d = target_root / f"run{_seq:04d}-{label}"
    d.mkdir()
    try:
        yield d
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(d)], check=True)
        if sync:
            os.sync()


def count_tree(root: Path) -> tuple[int, int]:
    """(regular files, directories) below root."""
    files = dirs = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    dirs += 1
                    stack.append(e.path)
                else:
                    files += 1
    return files, dirs


# --------------------------------------------------------------------------
# running and timing one peer


class RunError(Exception):
    pass


CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


def cpu_times() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat.

    busy = user + nice + system + steal; interrupt time is left out (much of
    it serves our own I/O)."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = f
    busy = user + nice + system + steal
    return busy / CLK_TCK, (busy + idle + iowait + irq + softirq) / CLK_TCK


def kthreads_cpu() -> float:
    """CPU seconds used so far by kernel threads (journal, loop-device and
    write-back workers do work for our runs too, so they are not "others")."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            st = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        if pid == "2" or f[1] == "2":  # kthreadd and its children
            total += int(f[11]) + int(f[12])
    return total / CLK_TCK


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wait_quiet(max_wait: float, idle_needed: float = 0.85, window: float = 0.5) -> float:
    """Wait until the machine was at least `idle_needed` idle over `window`
    seconds (other people share it), at most `max_wait` seconds. Returns the
    busy share of the last window."""
    deadline = time.monotonic() + max_wait
    while True:
        b0, t0 = cpu_times()
        time.sleep(window)
        b1, t1 = cpu_times()
        busy = (b1 - b0) / max(t1 - t0, 1e-9)
        if busy <= 1 - idle_needed or time.monotonic() >= deadline:
            return busy


@dataclass
class RunInfo:
    wall: float  # seconds, fork to exit
    out: str
    err: str
    cpu_s: float  # user + system CPU of the child and its children
    others: float  # share of all CPUs used meanwhile by other user processes (0..1; not kernel threads)


def run_timed(argv: list, *, cwd: Path | None = None, stdin_path: Path | None = None,
              timeout: float = 3600) -> RunInfo:
    """Run argv to completion and time it from the outside.

    Raises RunError on a non-zero exit."""
    argv = [str(a) for a in argv]
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        c0, k0, (b0, _) = children_cpu(), kthreads_cpu(), cpu_times()
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = p.communicate(timeout=timeout)
        except BaseException:
            p.kill()
            p.wait()
            raise
        wall = time.monotonic() - t0
        c1, k1, (b1, _) = children_cpu(), kthreads_cpu(), cpu_times()
    finally:
        if stdin_path:
            stdin.close()
    out_s, err_s = out.decode(errors="replace"), err.decode(errors="replace")
    if p.returncode != 0:
        raise RunError(f"`{' '.join(argv)}` exited {p.returncode}: {err_s.strip()[-500:] or out_s.strip()[-500:]}")
    cpu = c1 - c0
    others = max(0.0, (b1 - b0) - cpu - (k1 - k0)) / (wall * NCPU)
    return RunInfo(wall, out_s, err_s, cpu, min(others, 1.0))


def json_doc(text: str) -> dict:
    """The JSON document in fio's stdout (it may print lines before it)."""
    try:
        return fio_peer.json_doc(text)
    except fio_peer.FioError as e:
        raise RunError(str(e)) from None


@dataclass
class Sample:
    """One run of one method: the work done and how long it took.

    `inner_s` is the tool's own timing of the work (None if it has none);
    `wall_s` is fork-to-exit as seen from here. `rate` overrides files/inner_s
    when the tool reports a rate itself (bonnie++)."""

    ops: int
    wall_s: float | None
    inner_s: float | None = None
    rate: float | None = None
    note: str = ""
    cpu_s: float | None = None  # CPU of the process tree (None if it did more than the timed work)
    others: float | None = None  # share of the machine other processes used during the run
    extra: dict = field(default_factory=dict)

    @classmethod
    def of(cls, run: RunInfo, ops: int, inner_s: float | None = None, **kw) -> "Sample":
        return cls(ops, run.wall, inner_s, cpu_s=run.cpu_s, others=run.others, **kw)

    def rate_of(self, clock: str) -> float | None:
        if clock == "inner":
            if self.rate is not None:
                return self.rate
            return self.ops / self.inner_s if self.inner_s else None
        return self.ops / self.wall_s if self.wall_s else None


# --------------------------------------------------------------------------
# bonnie++

def bonnie_rates(out: str, k: int, dirs: int) -> dict[str, float | None]:
    """The six file tests of bonnie++ -n K:...:DIRS from its CSV (read by
    boatload.measure.peers.bonnie, as the tmpfs study reads it): {csv name (seq_create,
    seq_stat, seq_del, ran_create, ran_stat, ran_del): files/s}, None where it
    printed +++++ (a test under 0.5 s). A line for other K or DIRS is a RunError."""
    try:
        line = bonnie_peer.parse_csv(out)[-1]
    except bonnie_peer.BonnieError as e:
        raise RunError(str(e)) from None
    if (line["num_files_k"], line["num_dirs"]) != (k, dirs):
        raise RunError(f"bonnie++ CSV for {line['num_files_k']}x1024 files in {line['num_dirs']} dirs, "
                       f"expected {k}x1024 in {dirs}")
    return {t["csv_name"]: t["ops_per_s"] for t in line["tests"]}


# --------------------------------------------------------------------------
# repetitions


def alternate(methods: list[str], repeats: int, run_one, quiet_wait: float = 0, show=None,
              max_others: float | None = 0.25, tries: int = 3) -> dict[str, list]:
    """Run every method once per repetition, in a new shuffled order each
    time (seeded by the repetition, so reruns use the same orders), so that
    drift, position and what ran just before spread over all methods. (A
    rotation, ABC BCA CAB, moves positions but keeps every method behind the
    same predecessor: with a buffered ext4 run before every worker O_DIRECT
    run, the worker met the previous run's write-back each time.) Before
    each run, wait up to `quiet_wait` s for an idle machine.
    A run during which other processes used more than `max_others` of the
    machine is run again (up to `tries` runs in all; the decision looks only
    at the others' CPU use, never at the result); the last one is kept.
    Returns {method: [Sample or None per repetition]}."""
    results: dict[str, list] = {m: [] for m in methods}
    for r in range(repeats):
        order = list(methods)
        random.Random(r).shuffle(order)
        for m in order:
            for attempt in range(1, tries + 1):
                if quiet_wait:
                    wait_quiet(quiet_wait)
                try:
                    s = run_one(m, r)
                except RunError as e:
                    print(f"  rep {r + 1}/{repeats} {m:<12} ERROR {e}", flush=True)
                    s = None
                busy = s is not None and s.others is not None and max_others is not None and s.others > max_others
                if s is not None:
                    s.extra["attempt"] = attempt
                    if show:
                        shown = show(s)
                    else:
                        rates = [s.rate_of("inner"), s.rate_of("wall")]
                        shown = " ".join(f"{c}={x:,.0f}/s" for c, x in zip(("inner", "wall"), rates) if x)
                    others = f"others {s.others * 100:.0f}%" if s.others is not None else ""
                    again = " -> busy, run again" if busy and attempt < tries else (" (busy, kept)" if busy else "")
                    print(f"  rep {r + 1}/{repeats} {m:<12} {shown} {others}{again} {s.note}".rstrip(), flush=True)
                if not busy:
                    break
            results[m].append(s)
    return results


def busy_runs(res: dict[str, list], max_others: float | None) -> str:
    """How many runs were repeated because the machine was busy, and how many stayed busy."""
    ss = [s for xs in res.values() for s in xs if s is not None]
    again = sum(s.extra.get("attempt", 1) - 1 for s in ss)
    kept = sum(1 for s in ss if max_others is not None and s.others is not None and s.others > max_others)
    return f"{again} run(s) repeated because other processes used > {max_others:.0%} of the CPUs; {kept} kept busy"


def med(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs: list[float]) -> str:
    """min..max and the half-range relative to the median."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    m = statistics.median(xs)
    half = (max(xs) - min(xs)) / 2 / m * 100 if m else 0
    return f"±{half:.0f}%"


def rng(xs: list[float], fmt: str) -> str:
    xs = [x for x in xs if x is not None]
    return f"{format(min(xs), fmt)}..{format(max(xs), fmt)}" if xs else "-"


def paired_ratios(a: list, b: list, clock_a: str, clock_b: str) -> list[float]:
    """Per-repetition rate ratios a/b (runs of the same repetition sit next
    to each other in time, so slow phases of the machine cancel)."""
    out = []
    for x, y in zip(a, b):
        if x is None or y is None:
            continue
        ra, rb = x.rate_of(clock_a), y.rate_of(clock_b)
        if ra and rb:
            out.append(ra / rb)
    return out


def verdict(value: float | None, lo: float | None = None, hi: float | None = None) -> str:
    if value is None:
        return "NO DATA"
    ok = (lo is None or value >= lo) and (hi is None or value <= hi)
    return "PASS" if ok else "FAIL"


# --------------------------------------------------------------------------
# output


def table(headers: list[str], rows: list[list], right: set[int] | None = None) -> str:
    right = right if right is not None else set(range(1, len(headers)))
    cells = [headers] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def fmt_rate(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def host_header(binaries: dict[str, Binary]) -> list[str]:
    lines = [
        f"# {datetime.datetime.now().astimezone().isoformat(timespec='seconds')} on {platform.node()}, "
        f"Linux {platform.release()}, {os.cpu_count()} CPUs, load average {load()}",
        f"# command: {' '.join([Path(sys.argv[0]).as_posix()] + sys.argv[1:])}",
    ]
    for b in binaries.values():
        lines.append(f"# {b.name}: {b.source} sha256 {b.sha256[:16]}")
    return lines


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def busy_note(before: str, after: str) -> str:
    return (f"# load average before {before}, after {after} (2 shared cores: other users' jobs add noise; "
            "medians of alternating runs and per-repetition ratios damp it, the spread shows it)")


# --------------------------------------------------------------------------
# what every script takes and writes


def add_run_args(ap) -> None:
    """The options of every script about noise and the sample dump."""
    ap.add_argument("--quiet-wait", type=float, default=5,
                    help="before each run wait up to this many seconds for a machine >= 85%% idle (default 5; 0: off)")
    ap.add_argument("--max-others", type=float, default=0.25,
                    help="run again (up to --tries runs) when other processes used more than this share of the CPUs "
                         "during a run (default 0.25)")
    ap.add_argument("--tries", type=int, default=3, help="at most this many runs per sample when busy (default 3)")
    ap.add_argument("--json", help="write every sample to this file")
    add_scratch_arg(ap)


def add_scratch_arg(ap) -> None:
    ap.add_argument("--scratch-in", type=Path, default=SCRATCH_IN if SCRATCH_IN.is_dir() else None,
                    help=f"make the scratch directory (loop images, mount points) in this directory "
                         f"(default {SCRATCH_IN}: the ext4 image in RAM; a disk-backed directory adds the host's "
                         f"write-back to every ext4 run)")


def dump_samples(path: str | None, all_samples: dict) -> None:
    """Every sample of every target and method, with the command line, to path (if given)."""
    if not path:
        return
    dump = {t: {m: [s.__dict__ if s else None for s in ss] for m, ss in res.items()} for t, res in all_samples.items()}
    Path(path).write_text(json.dumps({"argv": sys.argv, "samples": dump}, indent=1, default=str))
