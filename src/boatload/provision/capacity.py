"""How many files and bytes a target can hold, from its config alone, so that
a study asking for more is refused before any run, naming the field.

Inode counts are fixed at mkfs time on ext2/3/4 (mke2fs: one inode per
`inode_ratio` bytes, or `-N`) and capped on xfs (`imaxpct` of the space, 512
bytes an inode); btrfs and tmpfs allocate inodes as they go, so only their
bytes are checked. A `device` target's size is the device's (sysfs), a
`mount` target's room is its file system's free space and free inodes now.
"""

from __future__ import annotations

import os

from boatload.provision import blockdev
from boatload.base.errors import ConfigError
from boatload.base.targetspec import MiB, TargetSpec, option_value, parse_target

# /etc/mke2fs.conf as Debian ships it: the usage type by size, and its bytes per inode.
EXT_INODE_RATIO = ((3 * MiB, 8192), (512 * MiB, 4096), (None, 16384))
XFS_INODE_BYTES = 512
XFS_IMAXPCT = 25  # mkfs.xfs's default below 1 TiB
# Share of an image that file data may take (inode tables, journal or log, metadata).
USABLE = 0.9


def spec_of(target: dict) -> TargetSpec:
    return parse_target(target["name"], {k: v for k, v in target.items() if k != "name"})


def size_bytes(spec: TargetSpec) -> int | None:
    """The size of the file system boatload makes: the image's, the tmpfs's, the device's (None if it is not there)."""
    if spec.kind == "device":
        dev = blockdev.lookup(spec.device)
        return None if isinstance(dev, str) else dev.size_bytes
    return spec.size_mb * MiB if spec.kind in ("loop", "tmpfs") else None


def _free(spec: TargetSpec) -> tuple[int, int] | None:
    """A mount target's free bytes and inodes for us (None where it is not mounted yet)."""
    try:
        st = os.statvfs(spec.path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize, (st.f_favail if st.f_files else None)


def inodes(spec: TargetSpec) -> int | None:
    """About how many files and directories the target can hold; None if not fixed."""
    if spec.kind == "mount":
        free = _free(spec)
        return free[1] if free else None
    if spec.kind not in ("loop", "device"):
        return None
    size = size_bytes(spec)
    if size is None:
        return None
    if spec.fs in ("ext2", "ext3", "ext4"):
        count = option_value(spec.mkfs_options, "-N")
        if count and count.isdigit():
            return int(count)
        ratio = option_value(spec.mkfs_options, "-i")
        if ratio and ratio.isdigit():
            return size // int(ratio)
        return size // next(r for limit, r in EXT_INODE_RATIO if limit is None or size < limit)
    if spec.fs == "xfs":
        maxpct, inode_bytes = XFS_IMAXPCT, XFS_INODE_BYTES
        for value in (option_value(spec.mkfs_options, "-i") or "").split(","):
            key, _, number = value.partition("=")
            if key == "maxpct" and number.isdigit():
                maxpct = int(number) or 100  # 0: no limit but the space
            elif key == "size" and number.isdigit():
                inode_bytes = int(number)
        return size * maxpct // 100 // inode_bytes
    return None


def usable_bytes(spec: TargetSpec) -> int | None:
    """Bytes that file data may take; None for a plain directory (the scratch file system decides)."""
    if spec.kind == "mount":
        free = _free(spec)
        return free[0] if free else None
    size = size_bytes(spec)
    if size is None:
        return None
    return size if spec.kind == "tmpfs" else int(size * USABLE)


def check(target: dict, *, study: str, files: int, data_bytes: int, what: str, lower: str) -> None:
    """ConfigError naming targets.<name>.size_mb if `files` entries or `data_bytes` do not fit.

    `what` says what the study makes; `lower` names the study's fields to lower instead."""
    spec = spec_of(target)
    field = f"targets.{spec.name}.{ {'device': 'device', 'mount': 'path'}.get(spec.kind, 'size_mb') }"
    size = size_bytes(spec)
    what_target = f"a {size // MiB if size is not None else '?'} MB {spec.fs} {'image' if spec.kind == 'loop' else 'target'}"
    if spec.kind == "mount":
        what_target, raise_it = f"the file system at {spec.path}", "free some of it"
    elif spec.kind == "device":
        raise_it = "name a larger device"
    else:
        raise_it = f"raise {field}"
    most = inodes(spec)
    if most is not None and files > most:
        more = f" (or the inode count in its mkfs_options)" if spec.kind in ("loop", "device") else ""
        raise ConfigError(
            f"config: {field}: {what_target} holds about {most:,} {'more ' if spec.kind == 'mount' else ''}files and "
            f"directories; the {study} study makes {files:,} ({what}); {raise_it}{more} or lower {lower}")
    room = usable_bytes(spec)
    if room is not None and data_bytes > room:
        raise ConfigError(
            f"config: {field}: {what_target.replace(' image', ' target')} has room for about {room // MiB:,} MiB of data; "
            f"the {study} study writes {data_bytes // MiB:,} MiB ({what}); {raise_it} or lower {lower}")


def refuse_mount(target: dict, *, study: str, why: str) -> None:
    """A study that must make its own file system cannot run on a `mount` target: ConfigError naming both."""
    if target.get("kind") == "mount":
        raise ConfigError(
            f"config: studies.{study}.targets: the {study} study {why}, and target {target['name']} is a mounted "
            "file system boatload must not format; use a loop or device target")
