"""How many files and bytes a target can hold, from its config alone, so that
a study asking for more is refused before any run, naming the field.

Inode counts are fixed at mkfs time on ext2/3/4 (mke2fs: one inode per
`inode_ratio` bytes, or `-N`) and capped on xfs (`imaxpct` of the space, 512
bytes an inode); btrfs and tmpfs allocate inodes as they go, so only their
bytes are checked.
"""

from __future__ import annotations

from boatload.errors import ConfigError
from boatload.targetspec import MiB, TargetSpec, option_value, parse_target

# /etc/mke2fs.conf as Debian ships it: the usage type by size, and its bytes per inode.
EXT_INODE_RATIO = ((3 * MiB, 8192), (512 * MiB, 4096), (None, 16384))
XFS_INODE_BYTES = 512
XFS_IMAXPCT = 25  # mkfs.xfs's default below 1 TiB
# Share of an image that file data may take (inode tables, journal or log, metadata).
USABLE = 0.9


def spec_of(target: dict) -> TargetSpec:
    return parse_target(target["name"], {k: v for k, v in target.items() if k != "name"})


def inodes(spec: TargetSpec) -> int | None:
    """About how many files and directories the target can hold; None if not fixed."""
    if spec.kind != "loop":
        return None
    size = spec.size_mb * MiB
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
    if spec.kind == "dir":
        return None
    return spec.size_mb * MiB if spec.kind == "tmpfs" else int(spec.size_mb * MiB * USABLE)


def check(target: dict, *, study: str, files: int, data_bytes: int, what: str, lower: str) -> None:
    """ConfigError naming targets.<name>.size_mb if `files` entries or `data_bytes` do not fit.

    `what` says what the study makes; `lower` names the study's fields to lower instead."""
    spec = spec_of(target)
    field = f"targets.{spec.name}.size_mb"
    most = inodes(spec)
    if most is not None and files > most:
        raise ConfigError(
            f"config: {field}: a {spec.size_mb} MB {spec.fs} image holds about {most:,} files and directories; "
            f"the {study} study makes {files:,} ({what}); raise {field} (or the inode count in its mkfs_options) "
            f"or lower {lower}")
    room = usable_bytes(spec)
    if room is not None and data_bytes > room:
        raise ConfigError(
            f"config: {field}: a {spec.size_mb} MB {spec.fs} target has room for about {room // MiB:,} MiB of data; "
            f"the {study} study writes {data_bytes // MiB:,} MiB ({what}); raise {field} or lower {lower}")
