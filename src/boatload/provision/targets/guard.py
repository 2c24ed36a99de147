"""The guard: whether a block device may be formatted, every reason it may
not, before anything is opened for writing.

A device is refused when it is not a block device; when it holds the file
system of `/` or of the scratch directory; when it, a partition of it or
anything stacked on it is mounted, is active swap, or is held (device-mapper,
md, LVM, a loop device on it); when it is read-only or smaller than the file
system needs; when it carries a file-system, RAID or partition-table
signature (`wipefs --no-act`, `blkid -p`) and `wipe` is missing; and whenever
`wipe` is not its identity (boatload.provision.blockdev.identity). Signatures are
probed (read only) only on a device nothing uses."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from boatload.provision import blockdev
from boatload.provision.blockdev import BlockDev
from boatload.provision.hostops import existing_ancestor, run
from boatload.base.targetspec import MIN_LOG_MB, MIN_SIZE_MB, MiB, TargetSpec
from boatload.base.tools import find as find_tool

PLACEHOLDER = "CHANGE-ME"  # config/devices.yaml's placeholders


@dataclass
class Assessment:
    dev: BlockDev
    in_use: str | None  # why the device is in use, or None
    signatures: list[str] | None  # None: not probed (in use)


def in_use(dev: BlockDev, scratch: Path | None) -> str | None:
    """Why the device may not be touched: the root or scratch file system,
    a mount, swap or a holder on it or its partitions; None if nothing uses it."""
    fam = blockdev.family(dev)
    devnos = {d.devno: d.name for d in fam}
    for what, where in (("as the root file system /", Path("/")), ("with the scratch directory's file system", scratch)):
        if where is not None and blockdev.devno_of_path(existing_ancestor(where)) in devnos:
            return f"is mounted {what}"
    mounts = blockdev.mounts_of(fam)
    if mounts:
        mp, name = mounts[0]
        more = f" and {len(mounts) - 1} more" if len(mounts) > 1 else ""
        return f"is mounted ({'/dev/' + name + ' ' if name != dev.name else ''}on {mp}{more})"
    swaps = blockdev.swaps_on(fam)
    if swaps:
        return f"is active swap ({swaps[0]})"
    stacked = [d.name for d in fam if d.name != dev.name and d.name not in {p.name for p in blockdev.partitions(dev)}]
    if stacked:
        return f"has holders stacked on it ({', '.join(stacked)})"
    return None


def signatures(dev: BlockDev) -> list[str]:
    """File-system, RAID and partition-table signatures as `wipefs --no-act` and `blkid -p` see them (read only)."""
    found: list[str] = []
    wipefs = find_tool("wipefs")
    if wipefs:
        r = run([wipefs, "--no-act", "--json", dev.path], timeout=60)
        try:
            for sig in json.loads(r.stdout or "{}").get("signatures", []):
                found.append(f"{sig.get('type')} at {sig.get('offset')}")
        except ValueError:
            pass
    blkid = find_tool("blkid")
    if blkid:
        r = run([blkid, "-p", "-o", "export", dev.path], timeout=60)
        facts = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        for key in ("TYPE", "PTTYPE"):
            if key in facts and not any(f.startswith(facts[key] + " ") for f in found):
                found.append(f"{facts[key]} (blkid)")
    return found


def assess(dev: BlockDev, scratch: Path | None) -> Assessment:
    why = in_use(dev, scratch)
    return Assessment(dev, why, None if why or dev.size_bytes == 0 else signatures(dev))


def check_device(field: str, path: str, wipe: str | None, min_bytes: int, scratch: Path | None) -> list[str]:
    """Every reason `path` may not be formatted, one line each naming `field`
    (targets.<name>.device or .log.device; `wipe` beside it)."""
    wipe_field = field.rpartition(".")[0] + ".wipe"
    if PLACEHOLDER in path:
        return [f"{field}: still the template's placeholder {path}; name your device (see `boatload devices`)",
                *([f"{wipe_field}: still the template's placeholder; put the identity `boatload devices` prints "
                   "for the device"] if wipe is not None and PLACEHOLDER in wipe else [])]
    found = blockdev.lookup(path)
    if isinstance(found, str):
        return [f"{field}: {found}"]
    dev = found
    if wipe is not None and PLACEHOLDER in wipe:
        return [f"{wipe_field}: still the template's placeholder; put the identity `boatload devices` prints for {path}"]
    a = assess(dev, scratch)
    problems = []
    if a.in_use:
        problems.append(f"{field}: {path} {a.in_use}; boatload formats only a device nothing uses")
    if dev.read_only:
        problems.append(f"{field}: {path} is read-only")
    if dev.size_bytes < min_bytes:
        problems.append(f"{field}: {path} is {dev.size_bytes // MiB} MiB, smaller than the {min_bytes // MiB} MiB the file system needs")
    ident = blockdev.identity(dev)
    if a.signatures and wipe is None:
        problems.append(
            f"{wipe_field}: missing, and {path} carries {', '.join(a.signatures)}; to let boatload erase it, "
            f"set {wipe_field}: \"{ident}\"")
    elif wipe is not None and wipe != ident:
        problems.append(f"{wipe_field}: {wipe!r} is not the identity of {path}, which is {ident!r}")
    return problems


def needs_root_message(spec: TargetSpec, euid: int) -> str:
    return (f"targets.{spec.name}.device: kind device needs root to format and mount {spec.device} "
            f"(running as uid {euid}); nothing was opened")


def refusals(spec: TargetSpec, scratch: Path | None, euid: int | None = None) -> list[str]:
    """Every reason a `device` target may not be provisioned (none for other kinds)."""
    if spec.kind != "device":
        return []
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        return [needs_root_message(spec, euid)]
    where = f"targets.{spec.name}"
    problems = check_device(f"{where}.device", spec.device, spec.wipe, MIN_SIZE_MB[spec.fs] * MiB, scratch)
    if spec.log_device:
        problems += check_device(f"{where}.log.device", spec.log_device, spec.log_wipe, MIN_LOG_MB[spec.fs] * MiB, scratch)
        a, b = blockdev.lookup(spec.device), blockdev.lookup(spec.log_device)
        if isinstance(a, BlockDev) and isinstance(b, BlockDev) and (a.disk == b.disk and (a.name == b.name or a.disk in (a.name, b.name))):
            problems.append(f"{where}.log.device: {spec.log_device} overlaps {spec.device}")
    return problems
