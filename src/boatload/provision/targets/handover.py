"""What a killed run leaves on what the config handed over: a user's device
(`device` targets: its write cache changed, a file system of ours on it) and
a `boatload-<run id>` directory under a `mount` target's path. Found only
through the ledger (they are outside the scratch directory), and undone only
while they are still what was recorded: the same device number and identity,
nothing using the device; the same directory inode. boatload.provision.cleanup calls
it after unmounting."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from boatload.provision import blockdev
from boatload.provision.hostops import why
from boatload.provision.ledger import Ledger, Resource
from boatload.provision.targets.device import erase
from boatload.provision.targets.guard import in_use
from boatload.provision.targets.writecache import loop_write_cache, restore_write_cache
from boatload.base.targetspec import WRITE_CACHE
from boatload.base.tools import find as find_tool


def undo_device(res: Resource, scratch: Path) -> tuple[list[str], list[str]]:
    """Put back the write cache and erase our file system; (done, failed) lines."""
    done, failed = [], []
    dev = blockdev.lookup(res.path)
    if isinstance(dev, str) or dev.devno != res.facts.get("devno") or blockdev.identity(dev) != res.facts.get("identity"):
        return [f"left {res.path} alone: no longer the device the run recorded"], []
    before = res.facts.get("write_cache_before")
    if before in WRITE_CACHE and loop_write_cache(dev.path) != before:
        try:
            restore_write_cache(dev.path, None, before)
            done.append(f"set the write cache of {dev.path} back to {before!r}")
        except OSError as e:
            failed.append(f"write cache of {dev.path}: {e.strerror}")
    if res.facts.get("formatted"):
        busy = in_use(dev, scratch)
        wipefs = find_tool("wipefs")
        if busy:
            failed.append(f"erase {dev.path}: it {busy}")
        elif wipefs:
            r = erase(wipefs, dev.path)
            (done if r.returncode == 0 else failed).append(
                f"erased the file system boatload made on {dev.path}" if r.returncode == 0 else f"erase {dev.path}: {why(r)}")
    return done, failed


def undo_userdir(res: Resource) -> tuple[list[str], list[str]]:
    """Delete the run's directory under a mount target, if it is still the one made."""
    p = Path(res.path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return [], []
    if not stat.S_ISDIR(st.st_mode) or (st.st_ino, st.st_dev) != (res.facts.get("inode"), res.facts.get("dev")):
        return [f"left {p} alone: not the directory the run made"], []
    try:
        shutil.rmtree(p)
    except OSError as e:
        return [], [f"remove {p}: {e.strerror}"]
    return [f"removed directory {p}"], []


def undo(ledger: Ledger, resources: dict[str, Resource], dead, scratch: Path) -> tuple[list[str], list[str]]:
    """Every dead run's device and user directory: (done, failed); released in the ledger when undone."""
    done, failed = [], []
    for rid, res in resources.items():
        if res.kind not in ("device", "userdir") or not dead(res.pid, res.pid_start):
            continue
        d, f = undo_device(res, scratch) if res.kind == "device" else undo_userdir(res)
        done += d
        failed += f
        if not f:
            ledger.release(rid, by="cleanup")
    return done, failed
