"""Kind "mount": a file system the user already mounted (`path`, the root of
the mount), which boatload never formats. Each run works in a new directory
`boatload-<pid>-<random>` under it and nothing else, and deletes it after the
run; boatload.provision.cleanup deletes a killed run's (the ledger's "userdir"
record). Works without root: the user's own mounted file system.

Refused in one line naming `targets.<name>.path` when the path is not the
root of a mount, is `/`, the scratch directory's file system or a pseudo
file system, or is not writable. Whether the space and inodes suffice is
the studies' capacity check (boatload.provision.capacity), made with the free space
the file system has now."""

from __future__ import annotations

import os
from pathlib import Path

from boatload.provision.hostops import create_pinned, existing_ancestor, mount_at, token
from boatload.provision.ledger import Ledger
from boatload.base.targetspec import TargetError, TargetSpec

# kernel interfaces, not storage
PSEUDO_FS = {
    "proc", "sysfs", "cgroup", "cgroup2", "devtmpfs", "devpts", "securityfs", "debugfs", "tracefs", "pstore", "bpf",
    "mqueue", "hugetlbfs", "configfs", "fusectl", "autofs", "binfmt_misc", "efivarfs", "nsfs", "rpc_pipefs",
}
DIR_PREFIX = "boatload-"


def refusals(spec: TargetSpec, scratch: Path | None) -> list[str]:
    """Every reason a `mount` target may not be used (none for other kinds)."""
    if spec.kind != "mount":
        return []
    field_ = f"targets.{spec.name}.path"
    path = spec.path
    if "CHANGE-ME" in path:
        return [f"{field_}: still the template's placeholder {path}; name the mount point of your file system"]
    if path == "/":
        return [f"{field_}: / is the root file system; name a file system mounted for measuring"]
    if os.path.realpath(path) != path:
        return [f"{field_}: {path} is not a canonical path (it resolves to {os.path.realpath(path)})"]
    entry = mount_at(path)
    if entry is None:
        return [f"{field_}: {path} is not a mount point (the root of a mounted file system)"]
    if entry.fstype in PSEUDO_FS:
        return [f"{field_}: {path} is a {entry.fstype} pseudo file system, not storage"]
    if scratch is not None and os.stat(path).st_dev == os.stat(existing_ancestor(scratch)).st_dev:
        return [f"{field_}: {path} is the scratch directory's file system; name another one"]
    if "ro" in entry.mount_options.split(",") or not os.access(path, os.W_OK | os.X_OK):
        return [f"{field_}: {path} is not writable by uid {os.geteuid()}"]
    return []


def setup(spec: TargetSpec, scratch: Path, ledger: Ledger, undo, prov: dict, tools: dict) -> Path:
    problems = refusals(spec, scratch)
    if problems:
        raise TargetError(problems[0])
    d = Path(spec.path) / f"{DIR_PREFIX}{token()}"
    try:
        create_pinned(ledger, undo, "userdir", d, directory=True)
    except FileExistsError:
        raise TargetError(f"targets.{spec.name}.path: {d} already exists; refusing to use it") from None
    except OSError as e:
        raise TargetError(f"targets.{spec.name}.path: cannot create {d} ({e.strerror})") from None
    entry = mount_at(spec.path)
    prov.update(
        path=str(d),
        mount_path=spec.path,
        kernel_fs=entry.fstype if entry else None,
        mount_options=entry.options if entry else None,
        mount_source=entry.source if entry else None,
    )
    return d
