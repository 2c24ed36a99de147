"""What every kind of target shares: the `Provisioned` result, the provenance
fields every run records, and the last step of the kinds that mount
something (a mount point of ours under `<scratch>/mnt/`, the mount, and a
check that the kernel mounted what was asked)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from boatload.provision.hostops import check, mount_at, mount_containing, rmdir, run, statfs_type, token
from boatload.provision.ledger import Ledger
from boatload.base.signals import deferred_signals
from boatload.provision.targets.teardown import unmount
from boatload.base.targetspec import TargetError, TargetSpec


@dataclass
class Provisioned:
    spec: TargetSpec
    path: Path  # the directory to run the workload in
    provenance: dict = field(default_factory=dict)

    def usage(self) -> dict:
        """Space and inodes in use on the file system holding `path` (os.statvfs).

        For kind "dir" these are the numbers of the whole host file system.
        Inodes are None where the file system does not count them (btrfs)."""
        st = os.statvfs(self.path)
        used_kb = (st.f_blocks - st.f_bfree) * st.f_frsize // 1024
        if st.f_files > 0:
            return {"blocks_used_kb": used_kb, "inodes_used": st.f_files - st.f_ffree, "inodes_total": st.f_files}
        return {"blocks_used_kb": used_kb, "inodes_used": None, "inodes_total": None}


def base_provenance(spec: TargetSpec, scratch: Path) -> dict:
    holder = mount_containing(scratch)
    return {
        "name": spec.name,
        "kind": spec.kind,
        "fs": spec.fs,
        "spec": spec.to_dict(),
        "size_mb": None if spec.kind == "dir" else spec.size_mb,
        "kernel": os.uname().release,
        "mkfs_command": None,
        "mkfs_version": None,
        "mount_command": None,
        "mount_options_requested": list(spec.mount_options),
        "mount_options": None,
        "mount_source": None,
        "kernel_fs": None,
        "loop_device": None,
        "loop_write_cache": None,
        "write_cache_requested": spec.write_cache,
        "log_device": None,
        "log_image": None,
        "log_size_bytes": None,
        "log_mkfs_command": None,
        "log_write_cache": None,
        "log_backing_fs": None,
        "device": None,  # kind device: the hardware as sysfs has it (boatload.provision.blockdev.facts)
        "device_write_cache": None,
        "log_device_facts": None,
        "image": None,
        "image_size_bytes": None,
        "backing_fs": statfs_type(scratch),
        "backing_fs_mount": holder.fstype if holder else None,
        "scratch": str(scratch),
        "path": None,
    }


def mount_fs(spec: TargetSpec, scratch: Path, ledger: Ledger, undo, prov: dict, tools: dict, source: str,
             opts: list[str]) -> Path:
    """Mount `source` (fs `spec.fs`, options `opts`) on a new mount point of
    ours, recorded in the ledger first; unmounted and removed on teardown."""
    mount, umount = tools["mount"], tools["umount"]
    mp = scratch / "mnt" / f"boatload-{spec.name}-{token()}"
    with deferred_signals():
        mnt_rid = ledger.record("mount", mp, fs=spec.fs, source=source)
        try:
            os.mkdir(mp, 0o755)
        except FileExistsError:
            ledger.release(mnt_rid, by="never-created")
            raise TargetError(f"targets.{spec.name}: mount point {mp} already exists; refusing to use it") from None

        def unmount_and_rmdir():
            unmount(mp, umount)
            rmdir(mp)

        undo.step(f"unmount {mp}", unmount_and_rmdir, release=(ledger, mnt_rid))
        argv = [mount, "-t", spec.fs, *(["-o", ",".join(opts)] if opts else []), source, str(mp)]
        check(run(argv, timeout=300), f"targets.{spec.name}.mount_options: mounting {spec.fs}")

    entry = mount_at(mp)
    if entry is None:
        raise TargetError(f"targets.{spec.name}: mount reported success but {mp} is not in /proc/self/mountinfo")
    if entry.fstype != spec.fs:
        raise TargetError(f"targets.{spec.name}.fs: asked for {spec.fs} but the kernel mounted {entry.fstype}")
    prov.update(
        path=str(mp),
        mount_command=argv,
        mount_options=entry.options,
        mount_source=entry.source,
        kernel_fs=entry.fstype,
    )
    return mp
