"""Kind "dir": a fresh plain directory under `<scratch>/dirs/`, standing in
for a file system of our own where there is no root; marked as such."""

from __future__ import annotations

import os
from pathlib import Path

from boatload.hostops import mount_containing, remove_dir, token
from boatload.ledger import Ledger
from boatload.signals import deferred_signals
from boatload.targetspec import TargetError, TargetSpec


def setup(spec: TargetSpec, scratch: Path, ledger: Ledger, undo, prov: dict, tools: dict) -> Path:
    d = scratch / "dirs" / f"{spec.name}-{token()}"
    with deferred_signals():
        rid = ledger.record("dir", d)
        try:
            os.mkdir(d, 0o755)
        except FileExistsError:
            ledger.release(rid, by="never-created")
            raise TargetError(f"targets.{spec.name}: {d} already exists; refusing to use it") from None
        # an open fd pins the inode, so its number cannot be reused by another directory
        pin = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        undo.step(f"close {d}", lambda: os.close(pin))
        undo.step(f"remove {d}", lambda: remove_dir(d, pin), release=(ledger, rid))
        st = os.fstat(pin)
        ledger.note(rid, inode=st.st_ino, dev=st.st_dev)
    holder = mount_containing(d)
    prov.update(
        path=str(d),
        kernel_fs=holder.fstype if holder else None,
        mount_options=holder.options if holder else None,
        mount_source=holder.source if holder else None,
    )
    return d
