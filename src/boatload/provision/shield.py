"""The shield: the measurement runs with the highest CPU weight of the machine.

As root, `shielded(scratch)` moves the calling process (the runner, so that
the worker, the peer tools and everything they start inherit it) into a
cgroup of its own with the highest CPU weight: cgroup v1 `cpu.shares`
262144, or cgroup v2 `cpu.weight` 10000. Another process that wakes on the
measurement's core then waits instead of the measurement. Nothing of any
other process is changed: their cgroups, weights and affinities stay as
they were.

No cpuset: pinning the measurement cannot keep the others off its cores
without moving them (which the shield never does), and on a machine of 2
cores it would take a core from a 2-thread worker. The record says so.

On cgroup v1 (this project's test machines) the cpu hierarchy is apart from
the memory one, so a worker moved into a memory limit stays shielded. On
cgroup v2 a process is in one cgroup for every controller: a worker started
in a memory limit (boatload.provision.memlimit) leaves the shield's cgroup, and runs
at the default weight; the v2 path is not exercised by the tests here.

The cgroup is recorded in the ledger (kind "cgroup", named
`boatload-<pid>-<rand>` as memlimit's are) before it is made, so
`boatload cleanup` removes it after a SIGKILL; on every other exit the
process moves back to the cgroup it came from and the cgroup is removed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from boatload.provision.cgroups import MemoryLimitError, own_cgroup, procs, read_int, words, write_cgroup
from boatload.provision.hostops import Teardown, mountinfo, plain_dir
from boatload.provision.ledger import Ledger
from boatload.provision.memlimit import new_cgroup, remove_cgroup
from boatload.base.signals import deferred_signals

V1_SHARES_MAX = 262144  # the kernel's MAX_SHARES; every other process has 1024 at nice 0
V2_WEIGHT_MAX = 10000  # cgroup v2's cpu.weight range is 1..10000, default 100
NO_CPUSET = ("not pinned: a cpuset cannot keep other processes off the measurement's cores without "
             "moving them, which the shield does not do")


def where() -> tuple[int, Path, Path] | None:
    """(version, the parent to make the shield in, our own cgroup) or None without a CPU controller."""
    for e in mountinfo():
        if e.fstype == "cgroup" and "cpu" in e.super_options.split(",") and e.root == "/":
            own = own_cgroup("cpu")
            if own is not None:
                return 1, Path(e.mount_point), Path(e.mount_point) / own.lstrip("/")
    for e in mountinfo():
        if e.fstype == "cgroup2" and e.root == "/" and "cpu" in words(Path(e.mount_point) / "cgroup.controllers"):
            own = own_cgroup(None)
            if own is not None:
                return 2, Path(e.mount_point), Path(e.mount_point) / own.lstrip("/")
    return None


def _remove(path: Path) -> None:
    """Remove the shield's cgroup, killing what a dead child left in it, never this process."""
    if os.getpid() in procs(path):
        raise MemoryLimitError(f"shield: this process is still in {path}; left in place")
    remove_cgroup(path)


@contextmanager
def shielded(scratch: Path, enabled: bool = True) -> Iterator[dict]:
    """The body runs shielded where it can be; yields the record of how."""
    record = {"cpu_weight": None, "cgroup": None, "cgroup_version": None, "cpuset": None,
              "cpuset_why": NO_CPUSET, "why_not": None}
    found = where() if enabled and os.geteuid() == 0 else None
    if not enabled:
        record["why_not"] = "interference.shield is false"
    elif os.geteuid() != 0:
        record["why_not"] = f"not root (uid {os.geteuid()})"
    elif found is None:
        record["why_not"] = "no cgroup hierarchy with the cpu controller is mounted"
    if found is None:
        yield record
        return
    version, parent, own = found
    with Teardown("shield", MemoryLimitError) as undo:
        ledger = Ledger(plain_dir(Path(scratch).resolve(), MemoryLimitError))
        path, _ = new_cgroup(parent, ledger, undo, "shield: cannot create cgroup", _remove, version=version, shield=True)
        if version == 1:
            write_cgroup(path / "cpu.shares", str(V1_SHARES_MAX))
            record["cpu_weight"] = {"cpu.shares": read_int(path / "cpu.shares"), "others": 1024}
        else:
            if "cpu" not in words(parent / "cgroup.subtree_control"):
                write_cgroup(parent / "cgroup.subtree_control", "+cpu")
            write_cgroup(path / "cpu.weight", str(V2_WEIGHT_MAX))
            record["cpu_weight"] = {"cpu.weight": read_int(path / "cpu.weight"), "others": 100}
        record.update(cgroup=str(path), cgroup_version=version)
        with deferred_signals():
            # back first, then the cgroup goes (steps run in reverse)
            undo.step(f"move back to {own}", lambda: write_cgroup(own / "cgroup.procs", str(os.getpid())))
            write_cgroup(path / "cgroup.procs", str(os.getpid()))
        yield record
