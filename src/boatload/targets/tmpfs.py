"""Kind "tmpfs": `mount -t tmpfs -o size=<size_mb>m[,mount_options] boatload-tmpfs <mnt>`."""

from __future__ import annotations

from pathlib import Path

from boatload.ledger import Ledger
from boatload.targets.base import mount_fs
from boatload.targetspec import TargetSpec

SOURCE = "boatload-tmpfs"


def setup(spec: TargetSpec, scratch: Path, ledger: Ledger, undo, prov: dict, tools: dict) -> Path:
    return mount_fs(spec, scratch, ledger, undo, prov, tools, SOURCE, [f"size={spec.size_mb}m", *spec.mount_options])
