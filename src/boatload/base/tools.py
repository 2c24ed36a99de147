"""The external programs boatload runs, and where each comes from.

One table serves every install path: `.ci/run` installs the Debian packages,
`flake.nix` puts the Nix attributes on PATH, and tests/test_nix.py checks that
neither list drifts from this one.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Tool:
    command: str
    debian: str  # Debian 12 package that ships the command
    nix: str  # nixpkgs attribute that ships the command
    why: str


TOOLS: tuple[Tool, ...] = (
    Tool("mkfs.ext2", "e2fsprogs", "e2fsprogs", "format ext2 images"),
    Tool("mkfs.ext3", "e2fsprogs", "e2fsprogs", "format ext3 images"),
    Tool("mkfs.ext4", "e2fsprogs", "e2fsprogs", "format ext4 images"),
    Tool("mkfs.xfs", "xfsprogs", "xfsprogs", "format xfs images"),
    Tool("mkfs.btrfs", "btrfs-progs", "btrfs-progs", "format btrfs images"),
    Tool("losetup", "mount", "util-linux", "attach images to loop devices"),
    Tool("mount", "mount", "util-linux", "mount targets"),
    Tool("umount", "mount", "util-linux", "unmount targets"),
    Tool("wipefs", "util-linux", "util-linux", "device targets: list and erase signatures"),
    Tool("blkid", "util-linux", "util-linux", "device targets: probe signatures"),
    Tool("mkswap", "util-linux", "util-linux", "swap files for memory-limited runs"),
    Tool("swapon", "util-linux", "util-linux", "swap files for memory-limited runs"),
    Tool("swapoff", "util-linux", "util-linux", "swap files for memory-limited runs"),
    Tool("dumpe2fs", "e2fsprogs", "e2fsprogs", "read back ext journal settings"),
    Tool("xfs_info", "xfsprogs", "xfsprogs", "read back xfs log placement"),
    Tool("fio", "fio", "fio", "peer benchmark for randio and file creation"),
    Tool("bonnie++", "bonnie++", "bonnie", "peer benchmark for small-file metadata"),
    Tool("tar", "tar", "gnutar", "forest: tar x creation method"),
    Tool("unzip", "unzip", "unzip", "forest: unzip creation method"),
    Tool("zip", "zip", "zip", "forest: build the archive unzip extracts"),
    Tool("touch", "coreutils", "coreutils", "forest: touch creation methods"),
    Tool("nbdkit", "nbdkit", "nbdkit", "serve a modelled device's image through the device-model filter"),
    Tool("nbdfuse", "libnbd-bin", "libnbd", "expose a modelled device as a file for the loop device"),
    Tool("fusermount3", "fuse3", "fuse3", "unmount a modelled device's FUSE file"),
)


# A user's PATH often lacks the sbin directories that mkfs, losetup and swapon live in.
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"
BY_COMMAND = {t.command: t for t in TOOLS}


def find(command: str) -> str | None:
    """The full path of a command: on PATH, or in the sbin directories."""
    return shutil.which(command) or shutil.which(command, path=SBIN)


def missing(commands: list[str] | None = None) -> list[Tool]:
    """Tools (all, or those named) that are not on PATH or in sbin."""
    wanted = [t for t in TOOLS if commands is None or t.command in commands]
    return [t for t in wanted if find(t.command) is None]
