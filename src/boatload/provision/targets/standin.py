"""Kind "dir": a fresh plain directory under `<scratch>/dirs/`, standing in
for a file system of our own where there is no root; marked as such."""

from __future__ import annotations

from pathlib import Path

from boatload.provision.hostops import create_pinned, mount_containing, token
from boatload.provision.ledger import Ledger
from boatload.base.targetspec import TargetError, TargetSpec


def setup(spec: TargetSpec, scratch: Path, ledger: Ledger, undo, prov: dict, tools: dict) -> Path:
    d = scratch / "dirs" / f"{spec.name}-{token()}"
    try:
        create_pinned(ledger, undo, "dir", d, directory=True)
    except FileExistsError:
        raise TargetError(f"targets.{spec.name}: {d} already exists; refusing to use it") from None
    holder = mount_containing(d)
    prov.update(
        path=str(d),
        kernel_fs=holder.fstype if holder else None,
        mount_options=holder.options if holder else None,
        mount_source=holder.source if holder else None,
    )
    return d
