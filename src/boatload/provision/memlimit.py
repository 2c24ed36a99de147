"""Memory limits: a cgroup (v1 or v2) around the worker, and a swap file.

    with memory_limit(256, 512, scratch) as limit:
        r = limit.run([worker, ...], capture_output=True)  # runs inside the cgroup
        limit.stats()  # peak and current usage, swap, OOM kills

`memory_limit(limit_mb, swap_mb, scratch)` creates a memory cgroup with the
limit and, if `swap_mb > 0`, a swap file `<scratch>/swap/swap-<pid>-<rand>`
(created with O_EXCL, fully allocated, `mkswap`, `swapon --priority`).
Children started through `Limit.preexec()` / `Limit.run()` move into the
cgroup before they exec; the calling process stays outside. On exit, also on
error, SIGINT, SIGTERM and SIGHUP, whatever still runs in the cgroup is
killed, the cgroup removed, the swap file swapped off and deleted.

Which cgroup:

* cgroup v1 with the memory controller mounted (e.g. /sys/fs/cgroup/memory):
  `<mount>/boatload-<pid>-<rand>` as root (or a child of our own cgroup if that
  is delegated to us), with `memory.limit_in_bytes`, `memory.swappiness` 60 and,
  where swap accounting exists, `memory.memsw.limit_in_bytes` = limit + swap
  (so the group can page out exactly its swap_mb, no more, and with swap_mb 0
  cannot swap at all, even to other swap on the host).
* cgroup v2 (a cgroup2 mount whose cgroup.controllers lists memory): as root a
  child of the mount's top cgroup, else a child of the nearest writable
  ancestor of our own cgroup (a delegated subtree); "+memory" is written to
  the parent's cgroup.subtree_control if it is not there yet. Then
  `memory.max` = limit and `memory.swap.max` = swap. The kernel refuses
  "+memory" in a non-root cgroup that has processes of its own (the
  no-internal-process rule); the error then says so. A parent of our own
  in between would not help: the controller must be enabled in the parent
  above it all the same.
* neither: MemoryLimitNeedsRoot (a NeedsRoot) when root or a delegated
  subtree would do, else MemoryLimitError; the message says what was found.

Everything is recorded in the ledger (kinds "cgroup" and "swap") before it
is created; `find_leftovers()` is what `boatload.provision.cleanup` uses to
undo the leftovers of killed runs: cgroups recorded in the ledger, or named
`boatload-<pid>-<rand>` with a dead pid, and swap files under
`<scratch>/swap/` (or a target's `<scratch>/mnt/<mount>/swap/`).
"""

from __future__ import annotations

import errno
import os
import re
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from boatload.provision.cgroups import (
    CGROUP_FS, Choice, MemoryLimitError, MemoryLimitNeedsRoot, active_swaps, choose, hierarchies, lineage,
    meminfo_swap_used, procs, read_int, read_kv, words, writable, write_cgroup,
)
from boatload.provision.hostops import (
    MOUNT_RE, Teardown, mount_at, not_installed, plain_dir, scratch_hash, statfs_type, subdir, token,
)
from boatload.provision.ledger import Ledger, pid_alive
from boatload.base.signals import deferred_signals, signals_as_exceptions
from boatload.provision.swapfiles import setup_swap, swap_off
from boatload.base.targetspec import MiB, TargetError
from boatload.base.tools import find as find_tool

__all__ = ["Limit", "Leftovers", "memory_limit", "find_leftovers"]

# boatload-<pid>-<rand>-<scratch tag>; without the tag: an older run's, found through its ledger only
CGROUP_RE = re.compile(r"boatload-(?P<pid>\d+)-(?P<rand>[0-9a-f]+)(?:-(?P<scratch>[0-9a-f]{8}))?\Z")
SWAP_RE = re.compile(r"swap-(?P<pid>\d+)-(?P<rand>[0-9a-f]+)\Z")
V1_SWAPPINESS = 60
MIN_LIMIT_MB = 4
KILL_TIMEOUT = 10.0


# --------------------------------------------------------------------------
# the limit


@dataclass
class Limit:
    """A live memory cgroup. `stats()` after the block gives the numbers taken at teardown."""

    version: int
    path: Path  # the cgroup directory
    limit_bytes: int
    swap_file: Path | None
    provenance: dict = field(default_factory=dict)
    _swap_baseline: int | None = None
    _final: dict | None = None

    def preexec(self) -> Callable[[], None]:
        """For subprocess's preexec_fn: the child moves itself into the cgroup
        before it execs (only async-signal-safe calls; nothing allocated)."""
        procs = os.fsencode(str(self.path / "cgroup.procs"))

        def move() -> None:
            fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, b"0")  # "0": the writing process itself (v1 and v2)
            finally:
                os.close(fd)

        return move

    def run(self, argv, **kwargs) -> subprocess.CompletedProcess:
        """subprocess.run(argv, preexec_fn=self.preexec(), **kwargs)."""
        if "preexec_fn" in kwargs:
            raise TypeError("Limit.run sets preexec_fn itself")
        try:
            return subprocess.run(argv, preexec_fn=self.preexec(), **kwargs)
        except subprocess.SubprocessError as e:
            if "preexec_fn" in str(e):
                raise MemoryLimitError(f"could not move `{argv[0]}` into cgroup {self.path}: {e}") from None
            raise

    def pids(self) -> list[int]:
        return procs(self.path)

    def stats(self) -> dict:
        """Usage of the cgroup, in bytes:

        peak_bytes, current_bytes: memory (v1 max_usage/usage_in_bytes, v2
        memory.peak/current; None where the kernel has no such file);
        swap_bytes: swap in use now (from the cgroup, else the machine's
        SwapTotal-SwapFree minus what was in use before; swap_source says
        which); swap_peak_bytes: v2 memory.swap.peak, or for v1 a lower bound,
        memsw peak minus memory peak; oom_kills, failcnt (v1 memory.failcnt,
        v2 events "max"), events (the raw counters)."""
        if self._final is not None and not self.path.is_dir():
            return dict(self._final)
        p = self.path
        if self.version == 1:
            st = read_kv(p / "memory.stat")
            peak = read_int(p / "memory.max_usage_in_bytes")
            memsw_peak = read_int(p / "memory.memsw.max_usage_in_bytes")
            oom = read_kv(p / "memory.oom_control")
            events = {
                "failcnt": read_int(p / "memory.failcnt"),
                "memsw_failcnt": read_int(p / "memory.memsw.failcnt"),
                "oom_kill": oom.get("oom_kill"),
                "under_oom": oom.get("under_oom"),
            }
            out = {
                "peak_bytes": peak,
                "current_bytes": read_int(p / "memory.usage_in_bytes"),
                "swap_bytes": st.get("total_swap", st.get("swap")),
                "swap_peak_bytes": max(0, memsw_peak - peak) if memsw_peak is not None and peak is not None else None,
                "oom_kills": events["oom_kill"],
                "failcnt": events["failcnt"],
            }
        else:
            events = read_kv(p / "memory.events")
            out = {
                "peak_bytes": read_int(p / "memory.peak"),
                "current_bytes": read_int(p / "memory.current"),
                "swap_bytes": read_int(p / "memory.swap.current"),
                "swap_peak_bytes": read_int(p / "memory.swap.peak"),
                "oom_kills": events.get("oom_kill"),
                "failcnt": events.get("max"),
            }
        out["swap_source"] = "cgroup"
        if out["swap_bytes"] is None:
            now = meminfo_swap_used()
            if now is not None and self._swap_baseline is not None:
                out["swap_bytes"] = max(0, now - self._swap_baseline)
                out["swap_source"] = "meminfo"
            else:
                out["swap_source"] = None
        out["events"] = events
        out["version"] = self.version
        return out

    def _snapshot(self) -> None:
        if self.path.is_dir():
            self._final = self.stats()


def _check_sizes(limit_mb, swap_mb) -> None:
    if type(limit_mb) is not int or limit_mb < MIN_LIMIT_MB:
        raise MemoryLimitError(f"memory limit: expected an integer of at least {MIN_LIMIT_MB} MB, got {limit_mb!r}")
    if type(swap_mb) is not int or swap_mb < 0:
        raise MemoryLimitError(f"swap: expected a non-negative integer of MB, got {swap_mb!r}")


def _resolve(commands: list[str]) -> dict[str, str]:
    found = {}
    for cmd in commands:
        found[cmd] = find_tool(cmd)
        if found[cmd] is None:
            raise MemoryLimitError(f"swap: {not_installed(cmd)}")
    return found


@contextmanager
def memory_limit(limit_mb: int, swap_mb: int, scratch: Path, swap_on: Path | None = None) -> Iterator[Limit]:
    """A memory cgroup of `limit_mb` MiB, and a swap file of `swap_mb` MiB if > 0.

    The swap file is made in `<swap_on>/swap/` when given: a file system of
    this scratch's targets under `<scratch>/mnt/` (a tmpfs target's modelled
    swap disk), so that cleanup finds it; else in `<scratch>/swap/`.

    Nothing is touched before the checks pass (sizes, a usable cgroup
    hierarchy, root for swap, the swap tools). Teardown as in
    boatload.provision.targets.provision: on every exit path, signals held while a
    resource is created or removed."""
    _check_sizes(limit_mb, swap_mb)
    choice = choose()
    euid = os.geteuid()
    tools = {}
    if swap_mb:
        if euid != 0:
            raise MemoryLimitNeedsRoot(f"a swap file needs root (swapon); running as uid {euid}")
        tools = _resolve(["mkswap", "swapon", "swapoff"])
    scratch = Path(scratch).resolve()
    limit_bytes = limit_mb * MiB
    swap_bytes = swap_mb * MiB

    with signals_as_exceptions(only_if_default=True), Teardown("memory limit", MemoryLimitError) as undo:
        with deferred_signals():
            plain_dir(scratch, MemoryLimitError)
            swap_home = scratch if swap_on is None else _swap_home(scratch, Path(swap_on))
            if swap_mb:
                subdir(swap_home, "swap")
            ledger = Ledger(scratch)
        prov = {
            "cgroup_version": choice.hierarchy.version,
            "cgroup_mount": str(choice.hierarchy.mount),
            "cgroup": None,
            "cgroup_parent": str(choice.parent),
            "enabled_memory_controller_in": None,
            "limit_mb": limit_mb,
            "limit_bytes": None,
            "swap_limit_bytes": None,
            "cgroup_swappiness": None,
            "kernel_swappiness": read_int("/proc/sys/vm/swappiness"),
            "swap_mb": swap_mb,
            "swap_file": None,
            "swap_size_bytes": None,
            "swap_priority": None,
            "swap_fill": None,
            "swap_backing_fs": None,
            "other_swaps": {p: s for p, s in active_swaps().items()},
            "kernel": os.uname().release,
        }
        _enable_memory(choice, prov)  # the one cgroup step likely to fail: before the swap file
        baseline = meminfo_swap_used()
        swap_file = setup_swap(swap_home, swap_bytes, ledger, undo, prov, tools) if swap_mb else None
        limit = _setup_cgroup(choice, limit_bytes, swap_bytes, ledger, undo, prov)
        limit.swap_file = swap_file
        limit._swap_baseline = baseline
        undo.step("take the final numbers", limit._snapshot)
        yield limit


def _swap_home(scratch: Path, swap_on: Path) -> Path:
    """`swap_on`, checked to be a mounted file system of this scratch's (one of `swap_dirs`)."""
    home = swap_on.resolve()
    if home.parent != scratch / "mnt" or not MOUNT_RE.match(home.name) or mount_at(str(home)) is None:
        raise MemoryLimitError(f"swap: {swap_on} is not a file system mounted under {scratch / 'mnt'}; "
                               "refusing to put a swap file there")
    return home


def swap_dirs(scratch: Path) -> list[Path]:
    """Where this scratch's swap files live: `<scratch>/swap/`, and `swap/` in
    each of its mounted targets' directories under `<scratch>/mnt/`."""
    out = [scratch / "swap"]
    try:
        out += [scratch / "mnt" / n / "swap" for n in sorted(os.listdir(scratch / "mnt")) if MOUNT_RE.match(n)]
    except OSError:
        pass
    return out


def _in_swap_dir(scratch: Path, p: Path) -> bool:
    mnt = p.parent.parent
    return p.parent == scratch / "swap" or (
        p.parent.name == "swap" and mnt.parent == scratch / "mnt" and bool(MOUNT_RE.match(mnt.name)))


# --------------------------------------------------------------------------
# cgroup


def _enable_memory(choice: Choice, prov: dict) -> None:
    """cgroup v2: let the parent's children use the memory controller (left
    enabled afterwards: others may rely on it by then)."""
    parent = choice.parent
    if choice.enable and "memory" not in words(parent / "cgroup.subtree_control"):
        try:
            fd = os.open(parent / "cgroup.subtree_control", os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, b"+memory")
            finally:
                os.close(fd)
        except OSError as e:
            why = e.strerror
            if e.errno == errno.EBUSY:
                why = "it has processes of its own, and cgroup v2's no-internal-process rule forbids it"
            raise MemoryLimitError(
                f"cgroup v2: cannot enable the memory controller for the children of {parent} ({why})"
            ) from None
        prov["enabled_memory_controller_in"] = str(parent / "cgroup.subtree_control")


def _setup_cgroup(choice: Choice, limit_bytes: int, swap_bytes: int, ledger, undo, prov) -> Limit:
    h = choice.hierarchy
    parent = choice.parent
    path, rid = new_cgroup(parent, ledger, undo, f"cgroup v{h.version}: cannot create", remove_cgroup, version=h.version)
    if h.version == 1:
        write_cgroup(path / "memory.limit_in_bytes", str(limit_bytes))
        if (path / "memory.memsw.limit_in_bytes").exists():
            # memory + swap: the group may page out exactly swap_bytes (none when 0)
            write_cgroup(path / "memory.memsw.limit_in_bytes", str(limit_bytes + swap_bytes))
            memsw, mem = read_int(path / "memory.memsw.limit_in_bytes"), read_int(path / "memory.limit_in_bytes")
            prov["swap_limit_bytes"] = memsw - mem if memsw is not None and mem is not None else None
        write_cgroup(path / "memory.swappiness", str(V1_SWAPPINESS))
        prov["cgroup_swappiness"] = read_int(path / "memory.swappiness")
        prov["limit_bytes"] = read_int(path / "memory.limit_in_bytes")
    else:
        write_cgroup(path / "memory.max", str(limit_bytes))
        if (path / "memory.swap.max").exists():
            write_cgroup(path / "memory.swap.max", str(swap_bytes))
            prov["swap_limit_bytes"] = read_int(path / "memory.swap.max")
        prov["limit_bytes"] = read_int(path / "memory.max")
    prov["cgroup"] = str(path)
    ledger.note(rid, limit_bytes=prov["limit_bytes"])
    return Limit(version=h.version, path=path, limit_bytes=prov["limit_bytes"], swap_file=None, provenance=prov)


def _kill_all(cgroup: Path, timeout: float = KILL_TIMEOUT) -> int:
    """SIGKILL everything in `cgroup` and wait until it is empty; returns how many were killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    while True:
        pids = procs(cgroup)
        hidden = "0" in words(cgroup / "cgroup.procs")  # in other pid namespaces: only cgroup.kill reaches them
        if not pids and not hidden:
            return len(killed)
        if (cgroup / "cgroup.kill").exists():
            try:
                write_cgroup(cgroup / "cgroup.kill", "1")
            except MemoryLimitError:
                pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise MemoryLimitError(
                f"cgroup {cgroup}: processes {pids or '(in another pid namespace)'} still there {timeout:.0f} s after SIGKILL"
            )
        time.sleep(0.02)


def new_cgroup(parent: Path, ledger, undo, failure: str, remove: Callable[[Path], object], **facts) -> tuple[Path, str]:
    """A new cgroup `boatload-<pid>-<rand>-<scratch tag>` under `parent`,
    recorded in the ledger (kind "cgroup", with `facts`) before it is made and
    removed on teardown by `remove`; `failure` begins the error when mkdir
    fails. Returns the path and its ledger id."""
    path = parent / f"boatload-{token()}-{scratch_tag(ledger.scratch)}"
    with deferred_signals():
        rid = ledger.record("cgroup", path, **facts)
        try:
            os.mkdir(path, 0o755)
        except OSError as e:
            ledger.release(rid, by="never-created")
            raise MemoryLimitError(f"{failure} {path} ({e.strerror})") from None
        undo.step(f"remove cgroup {path}", lambda: remove(path), release=(ledger, rid))
    return path, rid


def remove_cgroup(path: Path, timeout: float = KILL_TIMEOUT) -> int:
    """Kill what runs in `path` and below, remove the directories (deepest first).
    No memory.force_empty needed: v1 moves the remaining charges (page cache)
    to the parent on rmdir. Returns the number of processes killed."""
    if not path.is_dir():
        return 0
    killed = 0
    subdirs = [Path(d) for d, _, _ in os.walk(path, topdown=False, followlinks=False)]
    for d in subdirs:  # deepest first, `path` last
        killed += _kill_all(d, timeout)
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() > deadline:
                    raise MemoryLimitError(f"cannot remove cgroup {d} ({e.strerror})") from None
                _kill_all(d, timeout)
                time.sleep(0.05)
    return killed


# --------------------------------------------------------------------------
# leftovers (for boatload.provision.cleanup)


def scratch_tag(scratch: Path) -> str:
    """The part of a cgroup's name that says which scratch directory's run made it: a scan for a dead run's
    cgroups (find_leftovers) takes only its own scratch directory's, never another's that a run beside it
    left for its own cleanup."""
    return scratch_hash(Path(scratch).resolve(), 8)


def _is_boatload_cgroup(path: Path) -> bool:
    """Named like ours, and a directory on a cgroup file system (not some other
    directory a damaged ledger might point at)."""
    return bool(CGROUP_RE.match(path.name)) and path.is_dir() and statfs_type(path) in CGROUP_FS


@dataclass
class Leftovers:
    ledger: Ledger
    cgroups: dict[str, list[str]] = field(default_factory=dict)  # path -> ledger ids
    swaps: dict[str, list[str]] = field(default_factory=dict)  # swap file -> ledger ids
    inodes: dict[str, tuple[int, int]] = field(default_factory=dict)
    release: list[tuple[str, str, str]] = field(default_factory=list)  # (rid, kind, path) to release once gone

    def privileged(self) -> list[str]:
        """What needs root (for the NeedsRoot check of cleanup)."""
        out = []
        cgs = [c for c in self.cgroups if os.path.isdir(c) and not writable(Path(c).parent)]
        active = active_swaps()
        sws = [s for s in self.swaps if s in active]
        if cgs:
            out.append(f"{len(cgs)} cgroup(s)")
        if sws:
            out.append(f"{len(sws)} active swap file(s)")
        return out

    def undo(self) -> tuple[list[str], list[str]]:
        done: list[str] = []
        failed: list[str] = []
        # 1. cgroups: kill what is left in them, then rmdir (before swapoff: their pages may be in swap)
        for cg in self.cgroups:
            p = Path(cg)
            if not _is_boatload_cgroup(p):
                continue
            try:
                killed = remove_cgroup(p)
                done.append(f"removed cgroup {cg}" + (f" (killed {killed} process(es))" if killed else ""))
            except MemoryLimitError as err:
                failed.append(str(err))
        # 2. swap files: swapoff, then delete
        active = active_swaps()
        swapoff = find_tool("swapoff")
        for sw in self.swaps:
            if sw in active:
                try:
                    if swapoff is None:
                        raise MemoryLimitError(not_installed("swapoff"))
                    swap_off(Path(sw), swapoff)
                    done.append(f"swapoff {sw}")
                except TargetError as err:
                    failed.append(f"swapoff {sw}: {err}")
                    continue
            try:
                st = os.lstat(sw)
            except FileNotFoundError:
                continue
            want = self.inodes.get(sw)
            if not stat.S_ISREG(st.st_mode) or (want and (st.st_ino, st.st_dev) != want):
                failed.append(f"{sw} is not the swap file boatload created; leaving it")
                continue
            try:
                os.unlink(sw)
                done.append(f"deleted swap file {sw} ({st.st_size // MiB} MB)")
            except OSError as err:
                failed.append(f"delete {sw}: {err.strerror}")
        # 3. ledger entries whose resource is gone
        active = active_swaps()
        for rid, kind, path in self.release:
            gone = not os.path.isdir(path) if kind == "cgroup" else not os.path.lexists(path) and path not in active
            if gone:
                self.ledger.release(rid, by="cleanup")
        return done, failed


def find_leftovers(scratch: Path, ledger: Ledger | None = None, force: bool = False) -> Leftovers:
    """Cgroups and swap files of dead runs of this scratch directory.

    From the ledger: cgroups and swap files not released whose creator is gone
    (any, with force). From a scan: this scratch directory's cgroups
    (`boatload-<pid>-<rand>-<scratch_tag>`) at the top of each cgroup
    hierarchy, in our own cgroup's lineage and next to the ledger's, whose pid
    is dead (force does not apply: a pid reused by a live run), and swap files `<scratch>/swap/swap-<pid>-<rand>`
    (in /proc/swaps or not) whose pid is dead (or any, with force)."""
    scratch = Path(scratch).resolve()
    ledger = ledger or Ledger(scratch)
    lo = Leftovers(ledger)
    live: set[str] = set()
    starts: dict[str, tuple[int | None, str | None]] = {}
    parents: set[Path] = set()
    for r in ledger.resources().values():
        starts.setdefault(r.path, (r.pid, r.pid_start))
    for rid, r in ledger.resources().items():
        if r.released or r.kind not in ("cgroup", "swap"):
            continue
        p = Path(r.path)
        if r.kind == "cgroup":
            if not CGROUP_RE.match(p.name):
                continue
            parents.add(p.parent)
        elif not _in_swap_dir(scratch, p):
            continue  # not under this scratch directory: never ours to touch
        if not force and pid_alive(r.pid, r.pid_start):
            live.add(r.path)
            continue
        lo.release.append((rid, r.kind, r.path))
        if r.kind == "cgroup":
            if _is_boatload_cgroup(p):
                lo.cgroups.setdefault(r.path, []).append(rid)
        else:
            lo.swaps.setdefault(r.path, []).append(rid)
            if isinstance(r.facts.get("inode"), int) and isinstance(r.facts.get("dev"), int):
                lo.inodes[r.path] = (r.facts["inode"], r.facts["dev"])

    def dead_by_name(name: str, regex, path: str, allow_force: bool) -> bool:
        m = regex.match(name)
        if not m:
            return False
        if force and allow_force:
            return True
        pid = int(m["pid"])
        lpid, lstart = starts.get(path, (None, None))
        return not pid_alive(pid, lstart if lpid == pid else None)

    tag = scratch_tag(scratch)
    for h in hierarchies():
        parents.add(h.mount)
        parents.update(lineage(h, include_own=True))
    for parent in parents:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for n in names:
            m = CGROUP_RE.match(n)
            if not m or m["scratch"] != tag:
                continue  # not ours, or another scratch directory's (its own cleanup's, through its ledger)
            p = str(parent / n)
            if p in live or p in lo.cgroups or not dead_by_name(n, CGROUP_RE, p, allow_force=False):
                continue
            # found only by name (its ledger entry lost); without the rights to remove it, not our business
            if _is_boatload_cgroup(Path(p)) and (os.geteuid() == 0 or writable(parent)):
                lo.cgroups[p] = []

    candidates = set()
    for swap_dir in swap_dirs(scratch):
        try:
            candidates.update(str(swap_dir / n) for n in os.listdir(swap_dir))
        except OSError:
            pass
    candidates.update(s for s in active_swaps() if _in_swap_dir(scratch, Path(s)))
    for p in sorted(candidates):
        if p not in live and p not in lo.swaps and dead_by_name(Path(p).name, SWAP_RE, p, allow_force=True):
            lo.swaps[p] = []
    return lo
