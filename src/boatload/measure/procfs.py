"""What /proc says about the machine now: every process (its CPU, I/O,
session, parent), block-device sectors,
pressure stall totals, dirty memory, the run queue, and which process is the
run's orchestrator. Read by boatload.measure.interference around each timed phase and
by boatload.measure.machineload before a run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PF_KTHREAD = 0x00200000
MB = 1e6


@dataclass(frozen=True)
class Proc:
    comm: str
    ppid: int
    kthread: bool
    cpu_ticks: int  # own utime+stime plus that of its reaped children (class sums stay whole)
    own_ticks: int  # own utime+stime alone (who used the CPU)
    started: int  # clock ticks after boot
    io: tuple[int, int] | None  # storage bytes read, written (/proc/PID/io), None if not readable
    session: int = 0  # its session: one shell's job, one build, one daemon (what a load is made of)


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _proc(pid: int, with_io: bool) -> Proc | None:
    text = _read(f"/proc/{pid}/stat")
    if text is None:
        return None
    comm = text[text.index("(") + 1 : text.rindex(")")]
    f = text[text.rindex(")") + 2 :].split()
    # fields from 3 on: state ppid ... flags(9) ... utime(14) stime cutime cstime ... starttime(22)
    ppid, flags = int(f[1]), int(f[6])
    own = int(f[11]) + int(f[12])
    cpu = own + int(f[13]) + int(f[14])
    kthread = bool(flags & PF_KTHREAD)
    io = None
    if with_io and not kthread:
        raw = _read(f"/proc/{pid}/io")
        if raw:
            kv = dict(line.split(": ") for line in raw.splitlines() if ": " in line)
            io = (int(kv.get("read_bytes", 0)), int(kv.get("write_bytes", 0)))
    return Proc(comm, ppid, kthread, cpu, own, int(f[19]), io, int(f[3]))


def processes(with_io: bool = True) -> dict[int, Proc]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (p := _proc(int(name), with_io)) is not None:
            out[int(name)] = p
    return out


def self_cpu_ticks() -> int:
    f = _read("/proc/self/stat").rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def disk_sectors(names: list[str]) -> dict[str, tuple[int, int]]:
    """Sectors read and written so far per block device (/proc/diskstats)."""
    out = {}
    for line in (_read("/proc/diskstats") or "").splitlines():
        f = line.split()
        if len(f) > 9 and f[2] in names:
            out[f[2]] = (int(f[5]), int(f[9]))
    return out


def pressure_us() -> dict[str, int]:
    """Microseconds so far in which some task waited for CPU, I/O or memory (PSI), {} without PSI."""
    out = {}
    for what in ("cpu", "io", "memory"):
        text = _read(f"/proc/pressure/{what}")
        if text and text.startswith("some"):
            out[what] = int(text.split("\n")[0].rsplit("total=", 1)[1])
    return out


def meminfo_mb(keys=("Dirty", "Writeback")) -> dict[str, float]:
    kv = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        name, _, rest = line.partition(":")
        if name in keys:
            kv[name.lower() + "_mb"] = int(rest.split()[0]) * 1024 / MB
    return kv


def host_disk(path: Path) -> str | None:
    """The whole block device holding `path` ("vda" for a file on vda1), None for tmpfs and the like."""
    dev = os.stat(path).st_dev
    sys_dev = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if os.major(dev) == 0 or not sys_dev.exists():
        return None
    real = sys_dev.resolve()
    return real.parent.name if (real / "partition").exists() else real.name


def run_queue() -> int:
    """Runnable tasks on the machine now (the fourth field of /proc/loadavg)."""
    return int(_read("/proc/loadavg").split()[3].split("/")[0])


def _cmdline(pid: int) -> list[str]:
    raw = _read(f"/proc/{pid}/cmdline") or ""
    return [a for a in raw.split("\0") if a]


def is_snakemake(pid: int) -> bool:
    return any(os.path.basename(a) == "snakemake" or a == "snakemake" for a in _cmdline(pid)[:3])


def _is_orchestrator(pid: int) -> bool:
    """Snakemake, or the `boatload reproduce` above it that prints the progress."""
    argv = _cmdline(pid)
    return is_snakemake(pid) or ("reproduce" in argv[1:4] and any(os.path.basename(a) == "boatload" for a in argv[:2]))


def parent(pid: int) -> int | None:
    p = _proc(pid, with_io=False)
    return p.ppid if p else None


def orchestrator_root(start: int | None = None) -> int | None:
    """The outermost Snakemake (or `boatload reproduce`) above `start` (this process): the run's orchestrator."""
    root, pid = None, start or os.getpid()
    while pid > 1:
        if _is_orchestrator(pid):
            root = pid
        p = _proc(pid, with_io=False)
        if p is None:
            break
        pid = p.ppid
    return root


def subtree(procs: dict[int, Proc], root: int | None) -> set[int]:
    if root is None or root not in procs:
        return set()
    children: dict[int, list[int]] = {}
    for pid, p in procs.items():
        children.setdefault(p.ppid, []).append(pid)
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo.extend(children.get(pid, ()))
    return out


def reaped(before: dict[int, Proc], after: dict[int, Proc]) -> dict[int, int]:
    """Per surviving process, the CPU ticks (as of `before`) of its descendants
    gone by `after`: what its reaped-children time gained that was used
    before, to take off. A gone process whose parent went too counts at the
    nearest ancestor still there."""
    out: dict[int, int] = {}
    for pid, p in before.items():
        if pid in after:
            continue
        up = p.ppid
        while up in before and up not in after:
            up = before[up].ppid
        out[up] = out.get(up, 0) + p.cpu_ticks
    return out


def used_ticks(pid: int, before: dict[int, Proc], after: dict[int, Proc], gone: dict[int, int]) -> int:
    """CPU ticks `pid` used between two process tables, with the children it
    reaped meanwhile (`gone`: reaped(before, after)); all of it if it is new
    (or its pid was reused) since `before`."""
    p, was = after[pid], before.get(pid)
    return p.cpu_ticks - (was.cpu_ticks if was and was.started == p.started else 0) - gone.get(pid, 0)
