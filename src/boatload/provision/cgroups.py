"""The host's memory cgroups and swap, as boatload.provision.memlimit reads them: the
cgroup hierarchies (v1 and v2), where a limit can go (`choose`), the
active swaps, and reading and writing cgroup files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from boatload.provision.hostops import mountinfo, read_sys, unescape, write_sys
from boatload.base.targetspec import NeedsRoot, TargetError

V2_PREFERRED = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
CGROUP_FS = ("cgroup", "cgroup2")  # statfs names, see hostops.FS_MAGIC


class MemoryLimitError(TargetError):
    """A memory limit or swap file that cannot be set up or torn down (one line)."""


class MemoryLimitNeedsRoot(MemoryLimitError, NeedsRoot):
    """Root, or a delegated cgroup v2 subtree with the memory controller, would do."""


# --------------------------------------------------------------------------
# cgroup files


def words(path: Path | str) -> list[str]:
    return (read_sys(path) or "").split()


def read_int(path: Path | str) -> int | None:
    """An integer from a cgroup file; None if absent or "max"."""
    text = read_sys(path) or ""
    return int(text) if text.isdigit() else None


def read_kv(path: Path | str) -> dict[str, int]:
    out = {}
    for line in (read_sys(path) or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def write_cgroup(path: Path, value: str) -> None:
    """Write one value to a cgroup file, as one write(2); MemoryLimitError naming it if that fails."""
    try:
        write_sys(path, value)
    except OSError as e:
        raise MemoryLimitError(f"cgroup: writing {value!r} to {path} failed ({e.strerror})") from None


def writable(path: Path) -> bool:
    return os.access(path, os.W_OK)


def procs(cgroup: Path) -> list[int]:
    """Processes in `cgroup` that we can see: the kernel lists those of other
    pid namespaces as 0, and kill(0, …) would hit our own process group."""
    return [int(w) for w in words(cgroup / "cgroup.procs") if w.isdigit() and int(w) > 0]


def meminfo_swap_used() -> int | None:
    """SwapTotal - SwapFree of the whole machine, in bytes."""
    info = {}
    for line in (read_sys("/proc/meminfo") or "").splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            info[name] = int(parts[0]) * 1024
    if "SwapTotal" not in info or "SwapFree" not in info:
        return None
    return info["SwapTotal"] - info["SwapFree"]


def active_swaps() -> dict[str, dict]:
    """/proc/swaps: path -> {"type", "size_bytes", "used_bytes", "priority"}."""
    out = {}
    for line in (read_sys("/proc/swaps") or "").splitlines()[1:]:
        parts = line.split()
        if len(parts) < 5:
            continue
        path = unescape(parts[0])
        if path.endswith("\\040(deleted)") or path.endswith(" (deleted)"):
            path = path.rsplit("(deleted)", 1)[0].rstrip().removesuffix("\\040")
        try:
            out[path] = {
                "type": parts[1],
                "size_bytes": int(parts[2]) * 1024,
                "used_bytes": int(parts[3]) * 1024,
                "priority": int(parts[4]),
            }
        except ValueError:
            continue
    return out


# --------------------------------------------------------------------------
# which cgroup hierarchy


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    mount: Path  # where it is mounted
    own: Path | None  # this process's cgroup in it (None: not visible in this mount)
    memory: bool  # the memory controller is available (v1: it is this hierarchy)


def _own_dir(entry, path: str | None) -> Path | None:
    if path is None:
        return None
    root = entry.root or "/"
    if root != "/":
        if path != root and not path.startswith(root.rstrip("/") + "/"):
            return None
        path = path[len(root) :]
    return Path(entry.mount_point) / path.lstrip("/")


def own_cgroup(controller: str | None, text: str | None = None) -> str | None:
    """This process's cgroup in the v1 hierarchy of `controller`, or (None) in
    cgroup v2, from /proc/self/cgroup (`text`: its content, for tests)."""
    text = read_sys("/proc/self/cgroup") if text is None else text
    for line in (text or "").splitlines():
        hid, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        if (controller is None and hid == "0" and names == "") or (controller and controller in names.split(",")):
            return path
    return None


def hierarchies(entries: list | None = None, self_cgroup: str | None = None) -> list[Hierarchy]:
    """The cgroup hierarchies that could limit memory, most preferred first:
    v1 memory hierarchies, then cgroup2 mounts (/sys/fs/cgroup first). The
    arguments (parsed /proc/self/mountinfo, text of /proc/self/cgroup) are
    for tests."""
    entries = mountinfo() if entries is None else entries
    text = read_sys("/proc/self/cgroup") if self_cgroup is None else self_cgroup
    own_v1, own_v2 = own_cgroup("memory", text), own_cgroup(None, text)
    by_mount: dict[str, Hierarchy] = {}  # the topmost mount on a mount point wins
    for e in entries:
        if e.fstype == "cgroup" and "memory" in e.super_options.split(","):
            by_mount[e.mount_point] = Hierarchy(1, Path(e.mount_point), _own_dir(e, own_v1), True)
        elif e.fstype == "cgroup2":
            memory = "memory" in words(Path(e.mount_point) / "cgroup.controllers")
            by_mount[e.mount_point] = Hierarchy(2, Path(e.mount_point), _own_dir(e, own_v2), memory)
        elif e.mount_point in by_mount:
            del by_mount[e.mount_point]  # something else mounted over it

    def rank(h: Hierarchy):
        pref = V2_PREFERRED.index(str(h.mount)) if str(h.mount) in V2_PREFERRED else len(V2_PREFERRED)
        return (h.version, not h.memory, pref, str(h.mount))

    return sorted(by_mount.values(), key=rank)


def lineage(h: Hierarchy, include_own: bool) -> list[Path]:
    """Our own cgroup (if asked) and its ancestors up to the mount, nearest first."""
    if h.own is None:
        return []
    out = []
    p = h.own if include_own else h.own.parent
    if h.own == h.mount and not include_own:
        return []
    while True:
        if p != h.mount and h.mount not in p.parents:
            break
        out.append(p)
        if p == h.mount:
            break
        p = p.parent
    return out


@dataclass(frozen=True)
class Choice:
    hierarchy: Hierarchy
    parent: Path
    enable: bool  # write "+memory" to the parent's cgroup.subtree_control first


def _proc_cgroups_memory() -> tuple[int, bool] | None:
    """(hierarchy id, enabled) of the memory controller in /proc/cgroups."""
    for line in (read_sys("/proc/cgroups") or "").splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "memory" and parts[1].isdigit():
            return int(parts[1]), parts[3] == "1"
    return None


def choose(hs: list[Hierarchy] | None = None, euid: int | None = None) -> Choice:
    """Where to create the cgroup; raises (naming what is missing) if nowhere."""
    hs = hierarchies() if hs is None else hs
    euid = os.geteuid() if euid is None else euid
    root = euid == 0
    found: list[str] = []
    for h in hs:
        if h.version == 1:
            for parent in ([h.mount] if root else []) + lineage(h, include_own=True):
                if root or (writable(parent) and writable(parent / "cgroup.procs")):
                    return Choice(h, parent, False)
            found.append(f"the cgroup v1 memory controller at {h.mount} (not writable by uid {euid})")
        elif h.memory:
            for parent in ([h.mount] if root else []) + lineage(h, include_own=False):
                if "memory" not in words(parent / "cgroup.controllers"):
                    continue
                if not root and not (writable(parent) and writable(parent / "cgroup.procs")):
                    continue
                if "memory" in words(parent / "cgroup.subtree_control"):
                    return Choice(h, parent, False)
                if root or writable(parent / "cgroup.subtree_control"):
                    return Choice(h, parent, True)
            own = f"; our cgroup is {h.own}" if h.own else ""
            found.append(f"cgroup v2 at {h.mount} (memory controller, but no subtree delegated to uid {euid}{own})")
        else:
            found.append(f"cgroup v2 at {h.mount} (without the memory controller)")
    mem = _proc_cgroups_memory()
    if mem is not None and not mem[1]:
        found.append("the memory controller disabled in the kernel (/proc/cgroups; cgroup_disable=memory?)")
    elif mem is not None and mem[0] > 0 and not any(h.version == 1 for h in hs):
        found.append(f"the memory controller bound to cgroup v1 hierarchy {mem[0]}, which is not mounted here")
    what = "; ".join(found) or "no cgroup file system mounted"
    if root:
        raise MemoryLimitError(
            "memory limit needs the cgroup memory controller (cgroup v1 memory, or cgroup v2 with "
            f"memory in cgroup.controllers); found {what}"
        )
    raise MemoryLimitNeedsRoot(
        f"memory limit needs root or a delegated cgroup v2 subtree with the memory controller; "
        f"running as uid {euid} with {what}"
    )
