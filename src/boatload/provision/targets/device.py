"""Kind "device": a fresh file system on a block device the user named
(`device`, and `log.device` for an external XFS log or ext4 journal), made
every run with mkfs and mounted under the scratch directory, as loop targets
are. Nothing is written before the guard (boatload.provision.targets.guard) passes;
it is asked again right before every mkfs, so a device mounted or stacked on
in between is refused then. `write_cache` sets the device's
`queue/write_cache` for the run; the value found is put back on teardown,
and by boatload.provision.cleanup after a kill (the ledger's "device" record)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from boatload.provision import blockdev
from boatload.provision.hostops import check, run
from boatload.provision.ledger import Ledger
from boatload.base.signals import deferred_signals
from boatload.provision.targets.guard import in_use, refusals
from boatload.provision.targets.base import mount_fs
from boatload.provision.targets.mkfs import make_fs, mkfs_version
from boatload.provision.targets.writecache import restore_write_cache, set_write_cache
from boatload.base.targetspec import TargetError, TargetSpec


def _claim(spec: TargetSpec, field_: str, path: str, ledger: Ledger, undo, want_cache: str | None) -> tuple[blockdev.BlockDev, str | None, str]:
    """Record the device in the ledger and set its write cache (if asked); returns
    it, the cache read back and its ledger id."""
    dev = blockdev.lookup(path)
    if isinstance(dev, str):
        raise TargetError(f"{field_}: {dev}")
    with deferred_signals():
        rid = ledger.record("device", dev.path, devno=dev.devno, identity=blockdev.identity(dev))
        undo.step(f"release {dev.path}", lambda: None, release=(ledger, rid))
    cache = set_write_cache(
        f"targets.{spec.name}.write_cache", dev.path, want_cache, None,
        lambda **facts: ledger.note(rid, **facts), undo,
        lambda before: restore_write_cache(dev.path, None, before),
    )
    return dev, cache, rid


def erase(wipefs: str, path: str) -> subprocess.CompletedProcess:
    """`wipefs --all` on `path`: every file-system, RAID and partition-table
    signature goes, so old ones that mkfs would leave behind go too."""
    return run([wipefs, "--all", "--quiet", path], timeout=300)


def wipe_signatures(spec: TargetSpec, dev: blockdev.BlockDev, wipefs: str) -> None:
    """Erase `dev`'s signatures. Only reached when the guard passed, so `wipe` named this device."""
    check(erase(wipefs, dev.path), f"targets.{spec.name}.wipe: erasing {dev.path}")


def _why_not_now(dev: blockdev.BlockDev, scratch: Path) -> str | None:
    """Why `dev` may not be written now (its path is another device by now, or
    something uses it), None if it may: asked again right before each write."""
    now = blockdev.lookup(dev.path)
    if isinstance(now, str) or now.devno != dev.devno:
        return "is no longer the device the guard passed"
    return in_use(now, scratch)


def _blank_if_free(spec: TargetSpec, dev: blockdev.BlockDev, wipefs: str, scratch: Path) -> None:
    why = _why_not_now(dev, scratch)
    if why:
        raise TargetError(f"{dev.path} {why}; leaving its file system")
    wipe_signatures(spec, dev, wipefs)


def setup(spec: TargetSpec, scratch: Path, ledger: Ledger, undo, prov: dict, tools: dict) -> Path:
    problems = refusals(spec, scratch)
    if problems:
        raise TargetError(problems[0])
    data, data_cache, data_rid = _claim(spec, f"targets.{spec.name}.device", spec.device, ledger, undo, spec.write_cache)
    log = log_cache = log_rid = None
    if spec.log_device:
        log, log_cache, log_rid = _claim(spec, f"targets.{spec.name}.log.device", spec.log_device, ledger, undo, spec.write_cache)

    def verify():  # the moment before mkfs: still the devices the guard passed
        for d, field_ in ((data, "device"), (log, "log.device")):
            why = _why_not_now(d, scratch) if d is not None else None
            if why:
                raise TargetError(f"targets.{spec.name}.{field_}: {d.path} {why}; refusing to format it")

    verify()
    for d, rid in ((data, data_rid), (log, log_rid)):
        if d is not None:
            ledger.note(rid, formatted=True)  # from here on, cleanup erases it after a kill
            wipe_signatures(spec, d, tools["wipefs"])
            # after the run (unmounted by then: the undo stack runs backwards) the device is left
            # blank, so the next run finds no signature; a device still in use is left alone
            undo.step(f"erase {d.path} after the run", lambda d=d: _blank_if_free(spec, d, tools["wipefs"], scratch))
    made = make_fs(spec, tools, data.path, log.path if log else None, None, verify)
    prov.update(
        device=blockdev.facts(data),
        mkfs_command=made.mkfs_command,
        mkfs_version=mkfs_version(made.mkfs_command[0]),
        device_write_cache=data_cache,
    )
    if log:
        prov.update(log_device=log.path, log_device_facts=blockdev.facts(log), log_mkfs_command=made.log_mkfs_command,
                    log_write_cache=log_cache)
    return mount_fs(spec, scratch, ledger, undo, prov, tools, data.path, made.mount_options)
