"""Kind "tmpfs": `mount -t tmpfs -o size=<size_mb>m[,mount_options] boatload-tmpfs <mnt>`.

* `model: <preset>`: the disk the tmpfs's pages are swapped to. A tmpfs has
  no disk of its own: beyond memory its pages go to swap, so its speed there
  is the swap disk's. The target then also gets a modelled device of
  `size_mb` (boatload.provision.targets.modelled), an ext4 on it mounted under
  `<scratch>/mnt/`, and its path as provenance `swap_dir`: a memory limit
  given it (boatload.provision.memlimit's `swap_on`) makes its swap file there."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from boatload.provision.hostops import check, run, token
from boatload.provision.ledger import Ledger
from boatload.provision.targets.base import mount_fs
from boatload.provision.targets.image import Attached
from boatload.provision.targets.loop import verify_attached
from boatload.provision.targets.modelled import attach_modelled
from boatload.base.targetspec import MKFS, SWAP_DISK_FS, MiB, TargetSpec

SOURCE = "boatload-tmpfs"
# the whole inode table and journal written at mkfs: no lazy init writing to
# the modelled disk in the background while a run measures
SWAP_DISK_MKFS = ("-E", "lazy_itable_init=0,lazy_journal_init=0")


def setup(spec: TargetSpec, scratch: Path, ledger: Ledger, undo, prov: dict, tools: dict) -> Path:
    swap_dir = swap_disk(spec, scratch, ledger, undo, prov, tools) if spec.model is not None else None
    path = mount_fs(spec, scratch, ledger, undo, prov, tools, SOURCE, [f"size={spec.size_mb}m", *spec.mount_options])
    if swap_dir is not None:
        prov["swap_dir"] = str(swap_dir)
    return path


def swap_disk(spec: TargetSpec, scratch: Path, ledger: Ledger, undo, prov: dict, tools: dict) -> Path:
    """The modelled disk to swap to, formatted and mounted: its mount point."""
    image = scratch / "images" / f"{spec.name}-swap-{token()}.img"
    disk: Attached = attach_modelled(spec, image, spec.size_mb * MiB, ledger, undo, scratch, spec.model,
                                     f"targets.{spec.name}.model", prov, "model", what="swap disk image",
                                     outlive_parent=True)  # swapoff after a SIGKILL needs the disk to answer
    verify_attached(spec, ledger, disk, tools["losetup"])  # format only the image we made, behind the model
    mkfs, flags = MKFS[SWAP_DISK_FS]
    argv = [tools[mkfs], *flags, *SWAP_DISK_MKFS, disk.device]
    check(run(argv), f"targets.{spec.name}.model: formatting the swap disk ({SWAP_DISK_FS})")
    on_disk = replace(spec, name=f"{spec.name}-swap", fs=SWAP_DISK_FS, mount_options=())
    mounted: dict = {}
    mp = mount_fs(on_disk, scratch, ledger, undo, mounted, tools, disk.device, [])
    prov.update(swap_disk={"device": disk.device, "image": str(image), "mkfs_command": argv,
                           "mount_command": mounted["mount_command"], "fs": SWAP_DISK_FS})
    return mp
