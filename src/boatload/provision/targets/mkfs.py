"""Making a file system on a block device of ours (a loop device on our
image, or the user's device behind the guard), with an external XFS log or
ext4 journal on a second one:

* xfs: `mkfs.xfs -l logdev=<log>,size=<N>m` and `mount -o logdev=<log>`;
* ext4: `mkfs.ext4 -O journal_dev -b 4096 <log>`, then `mkfs.ext4 -b 4096
  -J device=<log>`; ext4 finds its journal again by device number, so the
  mount needs no option.

`verify()` is called right before each mkfs: the caller's proof that the
devices are still the ones it vetted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from boatload.provision.hostops import check, run
from boatload.base.targetspec import EXT_JOURNAL_BLOCK_SIZE, MKFS, MKFS_VERSION_FLAG, TargetError, TargetSpec, option_value


@dataclass
class Formatted:
    mkfs_command: list[str]
    log_mkfs_command: list[str] | None
    mount_options: list[str]  # what mounting it needs, then the spec's


def make_fs(spec: TargetSpec, tools: dict, data: str, log: str | None, log_size_mb: int | None,
            verify: Callable[[], None]) -> Formatted:
    mkfs, flags = MKFS[spec.fs]
    opts = list(spec.mount_options)
    log_argv = None
    size = [f"size={log_size_mb}m"] if log_size_mb else []
    if log and spec.fs == "xfs":
        mkfs_argv = [tools[mkfs], *flags, "-l", ",".join([f"logdev={log}", *size]), *spec.mkfs_options, data]
        opts = [f"logdev={log}", *opts]
    elif log:  # ext4: the journal device first, same block size as the data
        bs = ["-b", EXT_JOURNAL_BLOCK_SIZE] if option_value(spec.mkfs_options, "-b") is None else []
        log_argv = [tools[mkfs], *flags, "-O", "journal_dev", "-b", EXT_JOURNAL_BLOCK_SIZE, log]
        verify()
        check(run(log_argv), f"targets.{spec.name}.log: formatting the external journal")
        mkfs_argv = [tools[mkfs], *flags, *bs, "-J", f"device={log}", *spec.mkfs_options, data]
    else:
        mkfs_argv = [tools[mkfs], *flags, *spec.mkfs_options, data]
    verify()
    check(run(mkfs_argv), f"targets.{spec.name}.mkfs_options: formatting {spec.fs}")
    return Formatted(mkfs_argv, log_argv, opts)


def mkfs_version(mkfs: str) -> str | None:
    flag = MKFS_VERSION_FLAG.get(Path(mkfs).name, "-V")
    try:
        r = run([mkfs, flag], timeout=30)
    except TargetError:
        return None
    lines = (r.stdout + r.stderr).strip().splitlines()
    return lines[0].strip() if lines else None
