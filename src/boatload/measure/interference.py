"""What else the machine did during each timed phase, and whether that disturbed it.

A `Monitor` is active around one attempt of a job (boatload.measure.runner). Each
timed phase gets two snapshots of the machine, one right before it and one
right after it, both outside the timed window: the worker asks for them over
a socket (BOATLOAD_PHASE_SYNC_FD, see native/src/phase.c) and waits for the
answer; a peer tool (fio, bonnie++), whose phases we cannot see, is
bracketed as a whole (`tool_phase`). Between the snapshots a thread samples
the run queue. The record of a phase splits the CPU the machine used
(/proc/stat) into the measurement itself, this monitor, the orchestrator
(the Snakemake process tree that started the run), other user processes,
kernel threads, interrupts and what no live process accounts for, and adds
the I/O on the host's disk and the target's device, the dirty and write-back
memory at the start, and the cache state.

Each record also has the measured threads' run delay (boatload.measure.schedstat:
the time they were runnable without a CPU, summed over the threads) and
what other processes did in a window just before the phase (`before`, at
least `before_s` long), from which boatload.measure.disturbance judges whether the
phase was disturbed and whether by a passing or a constant load. This
monitor is part of the run (it is the measuring apparatus, its CPU is
recorded and bench/quiet.py counts it as ours); kernel threads and
interrupts are recorded but do not compete: loop workers, journal threads,
write-back and reclaim do the measured I/O on the measurement's behalf.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from boatload.base.hostcpu import MAX_STEAL, STEAL_WAIT_S, TICK_S, cpu_jiffies, steal_share
from boatload.measure import disturbance
from boatload.measure.procfs import (
    MB, Proc, disk_sectors, meminfo_mb, orchestrator_root, pressure_us, processes, reaped, run_queue,
    self_cpu_ticks, subtree, used_ticks,
)
from boatload.measure.schedstat import run_delays, waited_s

SECTOR = 512

# Sampling the run queue costs this process about 0.25 ms of CPU a sample:
# four a second keep the monitor near 0.1 % of a core. Pressure stall
# totals (/proc/pressure) cover what falls between samples. The meaning of
# each: workflow/schemas/config.schema.yaml, `interference`.
DEFAULTS = {"max_run_delay": 0.05, "max_others_io": 0.10, "max_other_cpu": 0.05,
            "max_steal": MAX_STEAL, "steal_wait_s": STEAL_WAIT_S, "redo": 2,
            "run_queue_sample_s": 0.25, "before_s": 0.3, "wait_quiet_s": 0, "shield": True,
            "preflight_sample_s": 3.0}

_active: contextvars.ContextVar[Monitor | None] = contextvars.ContextVar("boatload_monitor", default=None)


@dataclass
class Snapshot:
    mono: float
    jiffies: dict[str, int]
    self_ticks: int
    procs: dict[int, Proc]
    disks: dict[str, tuple[int, int]]
    pressure: dict[str, int]
    delays: dict = field(default_factory=dict)  # the measured threads' run delay (boatload.measure.schedstat)

    def classes(self, me: int, orchestrator: int | None) -> dict[str, set[int]]:
        own = subtree(self.procs, me)
        orch = subtree(self.procs, orchestrator) - own
        kernel = {pid for pid, p in self.procs.items() if p.kthread}
        return {"own": own, "orchestrator": orch, "kernel_threads": kernel,
                "other_processes": set(self.procs) - own - orch - kernel}

    def ticks(self, pids: set[int]) -> int:
        return sum(self.procs[pid].cpu_ticks for pid in pids)


def baseline() -> Snapshot:
    """Every process's CPU and I/O now: where a window before a phase can start
    (taken before the target is provisioned, so that provisioning counts)."""
    procs = processes()
    return Snapshot(time.monotonic(), {}, 0, procs, {}, {})


@dataclass
class Monitor:
    """Snapshots around every timed phase of one attempt; `records` in phase order."""

    target_device: str | None = None
    host_device: str | None = None
    settings: dict = field(default_factory=lambda: dict(DEFAULTS))
    disk_bound: bool = False  # the target's I/O reaches the host's disk (others' I/O there can disturb it)
    records: list[dict] = field(default_factory=list)
    orchestrator: int | None = field(default_factory=orchestrator_root)
    # the study's drop_caches: sync and drop the page cache before each measured phase that reads
    drop_caches: bool = False
    # the host's files behind the target's modelled devices: nbdkit writes them through the host's
    # page cache, and the host would write them back inside a later timed phase (a real disk has no
    # host page cache), so each measured phase starts with them written back (write_back_host_copies)
    host_copies: tuple[str, ...] = ()
    baseline: Snapshot | None = None  # the start of the first window before a phase (default: now)
    _history: list[Snapshot] = field(default_factory=list)  # the baseline and every phase edge, oldest first

    def __post_init__(self) -> None:
        self._history.append(self.baseline or baseline())

    @property
    def sample_s(self) -> float:
        return self.settings["run_queue_sample_s"]

    def _window_start(self) -> Snapshot:
        """The newest snapshot at least `before_s` old; before the first phase, wait until the baseline is."""
        before_s = self.settings["before_s"]
        now = time.monotonic()
        old = [s for s in self._history if s.mono <= now - before_s]
        if old:
            return old[-1]
        time.sleep(max(0.0, self._history[0].mono + before_s - now))
        return self._history[0]

    def _devices(self) -> list[str]:
        return [d for d in (self.host_device, self.target_device) if d]

    def snapshot_before(self) -> Snapshot:
        # the slow part (every process) first, the clock last: right before the phase
        procs = processes()
        jiffies, self_ticks, disks = cpu_jiffies(), self_cpu_ticks(), disk_sectors(self._devices())
        pressure = pressure_us()
        return Snapshot(time.monotonic(), jiffies, self_ticks, procs, disks, pressure)

    def snapshot_after(self) -> Snapshot:
        # the clock and the machine's counters first, right after the phase
        mono = time.monotonic()
        jiffies, self_ticks, disks = cpu_jiffies(), self_cpu_ticks(), disk_sectors(self._devices())
        pressure = pressure_us()
        return Snapshot(mono, jiffies, self_ticks, processes(), disks, pressure)

    @contextlib.contextmanager
    def phase(self, name: str, tool: str, measured: bool = True) -> Iterator[None]:
        """Record the machine around the body: one timed phase (or a peer's whole run).

        A phase that is not `measured` (laying out files for the measurement)
        is recorded but never counts as disturbed."""
        written_back_s = write_back_host_copies(self.host_copies) if measured and self.host_copies else None
        dropped = drop_page_cache() if self.drop_caches and measured and reads(name) else None
        memory = meminfo_mb()
        window = self._window_start()
        before = self.snapshot_before()
        me = os.getpid()
        measured_pids = subtree(before.procs, me) - {me}
        before.delays = run_delays(measured_pids)
        samples: list[int] = []
        seen: dict = {}
        stop = threading.Event()
        # a peer's processes come and go inside its phase: look for them at every sample
        rescan = tool != "worker"
        sampler = threading.Thread(target=self._sample, args=(samples, seen, measured_pids, rescan, stop), daemon=True)
        sampler.start()
        try:
            yield
        finally:
            stop.set()
            sampler.join()
            after = self.snapshot_after()
            after.delays = run_delays((subtree(after.procs, me) - {me}) | measured_pids | {pid for pid, _ in seen})
            self._history[:] = [*self._history[-4:], before, after]
            self.records.append(self._record(name, tool, measured, before, after, samples, memory, seen, window, dropped))
            self.records[-1]["host_copies_written_back_s"] = written_back_s

    def _sample(self, samples: list[int], seen: dict, pids: set[int], rescan: bool, stop: threading.Event) -> None:
        me = os.getpid()
        while not stop.wait(self.sample_s):
            samples.append(run_queue() - 1)  # less this sampler, which is running as it reads
            now = pids | (subtree(processes(with_io=False), me) - {me}) if rescan else pids
            seen.update(run_delays(now))

    def _record(self, name, tool, measured, before: Snapshot, after: Snapshot, samples, memory, seen,
                window: Snapshot, dropped: str | None = None) -> dict:
        seconds = after.mono - before.mono
        me = os.getpid()
        start, end = before.classes(me, self.orchestrator), after.classes(me, self.orchestrator)

        def delta(cls: str) -> float:
            return (after.ticks(end[cls]) - before.ticks(start[cls])) * TICK_S

        ran, waited, threads = waited_s(before.delays, after.delays, seen)
        cores = len(os.sched_getaffinity(0))

        j0, j1 = before.jiffies, after.jiffies
        dj = {k: (j1[k] - j0[k]) * TICK_S for k in j0}
        busy = dj["user"] + dj["nice"] + dj["system"] + dj["irq"] + dj["softirq"]
        monitor = (after.self_ticks - before.self_ticks) * TICK_S
        cpu = {
            "machine_busy": busy,
            "measurement": max(delta("own") - monitor, 0.0),
            "monitor": monitor,
            "orchestrator": delta("orchestrator"),
            "other_processes": delta("other_processes"),
            "kernel_threads": delta("kernel_threads"),
            "irq": dj["irq"] + dj["softirq"],
            "steal": dj["steal"],
            "iowait": dj["iowait"],
        }
        cpu["unattributed"] = busy - sum(cpu[k] for k in
                                         ("measurement", "monitor", "orchestrator", "other_processes",
                                          "kernel_threads", "irq"))
        competing = cpu["orchestrator"] + cpu["other_processes"]
        rec = {
            "phase": name,
            "tool": tool,
            "measured": measured,
            "seconds": seconds,
            "cpu_s": {k: round(v, 4) for k, v in cpu.items()},
            "other_cpu_s": round(busy - cpu["measurement"], 4),
            "competing_cpu_s": round(competing, 4),
            "competing_cores": round(competing / seconds, 4) if seconds > 0 else None,
            "top_others": _top(before, after, start, end),
            "run_queue": {
                "mean": round(sum(samples) / len(samples), 3) if samples else None,
                "max": max(samples) if samples else None,
                "samples": len(samples),
                "sample_s": self.sample_s,
            },
            # share of the phase in which some task waited for CPU, I/O, memory
            "pressure": {k: round((after.pressure[k] - before.pressure[k]) / 1e6 / seconds, 4)
                         for k in after.pressure if k in before.pressure and seconds > 0},
            "disk": self._disk(before, after),
            "others_io_mb": _others_io(before, after, end),
            "memory_at_start": memory,
            "cache": _cache_state(first=not self.records, dropped=dropped),
            # the measured threads (not this monitor) runnable without a CPU, summed over threads
            "run_delay_s": round(waited, 6),
            "run_delay_share": round(waited / seconds, 5) if seconds > 0 else None,
            # the share of the machine's CPU time its hypervisor gave to others (/proc/stat's steal, every CPU)
            "steal_share": round(steal_share(dj["steal"], seconds), 4) if seconds > 0 else None,
            "threads": threads,
            "ran_s": round(ran, 6),  # the measured threads on a CPU, summed over threads
            "cores": cores,
            "before": _window(window, before, me, self.orchestrator),
            "max_run_delay": self.settings["max_run_delay"],
            "max_others_io": self.settings["max_others_io"],
            "max_steal": self.settings["max_steal"],
            "max_other_cpu": self.settings["max_other_cpu"],
        }
        host_mb = (rec["disk"]["host_read_mb"] or 0.0) + (rec["disk"]["host_write_mb"] or 0.0)
        others_mb = rec["others_io_mb"]["read"] + rec["others_io_mb"]["write"]
        # CPU of competing sessions that had used none in the window before: a load that came with the phase
        fresh = {sid: cpu_s for sid, cpu_s in _by_session(before, after, start, end).items()
                 if sid not in rec["before"]["busy_sessions"]}
        rec["new_competing_cores"] = round(sum(fresh.values()) / seconds, 4) if seconds > 0 else 0.0
        rec["new_others"] = [t for t in _top(before, after, start, end, n=len(after.procs))
                             if t["kind"] != "kernel_threads" and after.procs[t["pid"]].session in fresh][:3]
        rec["others_io_share"] = round(min(others_mb, host_mb) / host_mb, 4) if host_mb > 0 else None
        rec["waited_for_others_s"] = round(disturbance.waited_for_others(rec), 6)
        rec["lost_share"] = round(disturbance.lost_share(rec), 6)
        rec["disturbed_by"] = disturbance.judge(rec, self.settings, self.disk_bound)
        rec["disturbed"] = bool(rec["disturbed_by"])
        rec["disturbance"] = disturbance.persistence(rec, rec["disturbed_by"], self.settings) if rec["disturbed"] else None
        return rec

    def _disk(self, before: Snapshot, after: Snapshot) -> dict:
        out = {}
        for role, dev in (("host", self.host_device), ("target", self.target_device)):
            b, a = before.disks.get(dev or ""), after.disks.get(dev or "")
            out[f"{role}_device"] = dev
            out[f"{role}_read_mb"] = round((a[0] - b[0]) * SECTOR / MB, 3) if a and b else None
            out[f"{role}_write_mb"] = round((a[1] - b[1]) * SECTOR / MB, 3) if a and b else None
        return out


def _cache_state(first: bool, dropped: str | None = None) -> dict:
    """Cold or warm: the first timed phase of an attempt runs on a file system
    made for it, every later one on what the earlier phases left (in the file
    system and in the page cache), unless the page cache was dropped right
    before it (`dropped` "yes", or why not)."""
    return {"file_system": "fresh" if first else "reused", "caches_dropped": dropped == "yes",
            **({"drop_caches_failed": dropped} if dropped not in (None, "yes") else {}),
            "state": "cold" if first or dropped == "yes" else "warm"}


# Phases that read what earlier ones wrote (meta's open, stat and read; seqio's and randio's reads).
READING = ("open", "stat", "read", "randio", "mixed")


def reads(phase: str) -> bool:
    return any(word in phase for word in READING)


def write_back_host_copies(paths: tuple[str, ...]) -> float:
    """fdatasync each file (a modelled device's image on the host): the seconds it took.
    A file already gone (its target torn down) is skipped."""
    t = time.monotonic()
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)
    return round(time.monotonic() - t, 4)


def drop_page_cache() -> str:
    """sync, then `echo 3 > /proc/sys/vm/drop_caches` (root only): "yes", or why not."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
    except OSError as e:
        return f"/proc/sys/vm/drop_caches: {e.strerror}"
    return "yes"


def _by_session(before: Snapshot, after: Snapshot, start, end) -> dict[int, float]:
    """CPU seconds competing processes used between two snapshots, per session
    (a child that exited counts at its parent, which reaped it)."""
    gone = reaped(before.procs, after.procs)
    out: dict[int, float] = {}
    for pid in end["other_processes"] | end["orchestrator"]:
        used = used_ticks(pid, before.procs, after.procs, gone)
        if used > 0:
            session = after.procs[pid].session
            out[session] = out.get(session, 0.0) + used * TICK_S
    return out


def _window(start: Snapshot, end: Snapshot, me: int, orchestrator: int | None) -> dict:
    """What competed with the measurement between two snapshots before a phase."""
    seconds = end.mono - start.mono
    a, b = start.classes(me, orchestrator), end.classes(me, orchestrator)
    competing = sum((end.ticks(b[c]) - start.ticks(a[c])) * TICK_S for c in ("orchestrator", "other_processes"))
    return {"seconds": round(seconds, 3),
            "competing_cores": round(max(competing, 0.0) / seconds, 4) if seconds > 0 else 0.0,
            "others_io_mb": _others_io(start, end, b),
            "busy_sessions": sorted(_by_session(start, end, a, b)),
            "top_others": _top(start, end, a, b)}


def _top(before: Snapshot, after: Snapshot, start, end, n: int = 3) -> list[dict]:
    """The n competing processes and the two kernel threads that used the most CPU during the phase.

    `cpu_s` is a process's own CPU; `children_s` that of its children that
    exited during the phase (counted at the parent that reaped them: a
    short-lived process leaves no other trace in /proc)."""
    gone: dict[int, int] = {}  # parent -> CPU, at the start, of its children gone by the end
    for pid, p in before.procs.items():
        if pid not in after.procs:
            gone[p.ppid] = gone.get(p.ppid, 0) + p.cpu_ticks
    rows = []
    for cls in ("other_processes", "kernel_threads", "orchestrator"):
        for pid in end[cls]:
            p = after.procs[pid]
            was = before.procs.get(pid)
            if was and was.started != p.started:
                was = None
            own = p.own_ticks - (was.own_ticks if was else 0)
            children = (p.cpu_ticks - p.own_ticks) - ((was.cpu_ticks - was.own_ticks) if was else 0) - gone.get(pid, 0)
            if own > 0 or children > 0:
                rows.append({"pid": pid, "comm": p.comm, "kind": cls, "cpu_s": round(own * TICK_S, 3),
                             "children_s": round(max(children, 0) * TICK_S, 3)})
    rows.sort(key=lambda r: -(r["cpu_s"] + r["children_s"]))
    # the competing processes first (they decide "disturbed"), then the kernel threads
    return [r for r in rows if r["kind"] != "kernel_threads"][:n] + [r for r in rows if r["kind"] == "kernel_threads"][:2]


def _others_io(before: Snapshot, after: Snapshot, end: dict) -> dict:
    """Storage I/O that other user processes caused (/proc/PID/io) between the
    snapshots, in MB: each process's own growth, so a process that joins the
    class during the phase (one that was measured or unreadable at the start)
    brings only its I/O since then, not its lifetime's; one born during the
    phase brings all of its own."""
    read = write = 0
    for pid in end["other_processes"]:
        now, was = after.procs[pid], before.procs.get(pid)
        if not now.io:
            continue
        if was is None or was.started != now.started:
            base = (0, 0)  # born during the phase
        elif was.io:
            base = was.io
        else:
            continue  # its counters at the start are unknown
        read += max(now.io[0] - base[0], 0)
        write += max(now.io[1] - base[1], 0)
    return {"read": round(read / MB, 3), "write": round(write / MB, 3)}


# ---------------------------------------------------------------------------
# the active monitor, as the places that start tools see it


def active() -> Monitor | None:
    return _active.get()


@contextlib.contextmanager
def monitoring(monitor: Monitor) -> Iterator[Monitor]:
    token = _active.set(monitor)
    try:
        yield monitor
    finally:
        _active.reset(token)


@contextlib.contextmanager
def tool_phase(tool: str, name: str | None = None) -> Iterator[None]:
    """Bracket a peer's whole run as one phase, if a monitor is active."""
    monitor = active()
    if monitor is None:
        yield
        return
    with monitor.phase(name or tool, tool):
        yield


@contextlib.contextmanager
def worker_sync(measured=lambda phase: True, tool: str = "worker", on_phase=None) -> Iterator[dict]:
    """Serve the worker's phase handshake while the body runs it; `measured(phase name)`
    tells the phases of the measurement from those that prepare it.
    `on_phase("begin" | "end", phase name)`, if given, is called at each
    edge, outside the timed window and outside the monitor's snapshots (its
    own reading then costs the phase nothing and the monitor sees none of it).

    Yields the environment and the fd to pass to the worker (`env`,
    `pass_fds`); both are empty without an active monitor or `on_phase`,
    and the worker then runs unsynchronised."""
    monitor = active()
    if monitor is None and on_phase is None:
        yield {}
        return
    ours, theirs = socket.socketpair()
    server = threading.Thread(target=_serve, args=(monitor, ours, tool, measured, on_phase), daemon=True)
    server.start()
    try:
        yield {"env": {**os.environ, "BOATLOAD_PHASE_SYNC_FD": str(theirs.fileno())},
               "pass_fds": (theirs.fileno(),)}
    finally:
        theirs.close()
        server.join()
        ours.close()


def _serve(monitor: Monitor | None, sock: socket.socket, tool: str, measured, on_phase=None) -> None:
    """Answer "begin NAME" / "end NAME" lines: a snapshot, then one byte back."""
    stream = sock.makefile("rb")
    phase = None
    try:
        for raw in stream:
            what, _, name = raw.decode().strip().partition(" ")
            if what == "begin":
                if on_phase is not None:
                    on_phase("begin", name)
                if monitor is not None:
                    phase = monitor.phase(name, tool, measured(name))
                    phase.__enter__()
            elif what == "end":
                if phase is not None:
                    phase.__exit__(None, None, None)
                    phase = None
                if on_phase is not None:
                    on_phase("end", name)
            sock.sendall(b".")
    except OSError:
        pass
    finally:
        if phase is not None:  # the worker died inside a phase: record what there is
            phase.__exit__(None, None, None)
        stream.close()


def attach(doc: dict, records: list[dict]) -> None:
    """Put each record into the worker phase it belongs to (in order, by name)."""
    queue = list(records)
    for ph in doc.get("phases", []):
        if queue and queue[0]["phase"] == ph.get("name"):
            ph["interference"] = queue.pop(0)
