"""Swap files for memory-limited runs: made, filled, swapped on and off."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from boatload.provision.cgroups import MemoryLimitError, active_swaps
from boatload.provision.hostops import check, create_pinned, run, same_file, statfs_type, token, why
from boatload.base.signals import deferred_signals
from boatload.base.targetspec import MiB

# scratch file systems the kernel cannot swap to (swapon refuses, or it would be pointless)
NO_SWAP_FS = ("tmpfs", "ramfs", "overlayfs", "squashfs", "zfs", "v9fs", "fuseblk")
SWAP_PRIORITY = 10  # or one above the highest swap already active


# --------------------------------------------------------------------------
# swap


def _fill(fd: int, size: int, zeros: bool) -> str:
    """Give the swap file real blocks: fallocate, or zeros where that is not
    supported (or when asked); swapon refuses files with holes."""
    if not zeros:
        try:
            os.posix_fallocate(fd, 0, size)
            return "fallocate"
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
    chunk = bytes(MiB)
    os.lseek(fd, 0, os.SEEK_SET)
    left = size
    while left > 0:
        left -= os.write(fd, chunk[: min(left, len(chunk))])
    os.fsync(fd)
    return "zeros"


def _swap_priority() -> int:
    prios = [s["priority"] for s in active_swaps().values()]
    return min(32767, max([SWAP_PRIORITY] + [p + 1 for p in prios]))


def swap_off(path: Path, swapoff: str, tries: int = 5) -> bool:
    """swapoff, again for a bounded time if it fails (pages still coming back from a
    cgroup whose processes are dying, or a moment without the memory to take them)."""
    for attempt in range(tries):
        if str(path) not in active_swaps():
            return attempt > 0
        try:
            check(run([swapoff, str(path)]), "swapoff", MemoryLimitError)
            return True
        except MemoryLimitError:
            if str(path) not in active_swaps():
                return True
            if attempt == tries - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
    return True


def setup_swap(scratch: Path, size: int, ledger, undo, prov, tools) -> Path:
    swap_dir = scratch / "swap"
    fs = statfs_type(swap_dir)
    prov["swap_backing_fs"] = fs
    if fs in NO_SWAP_FS:
        raise MemoryLimitError(
            f"swap: the scratch directory {scratch} is on {fs}, where the kernel cannot swap to a file; "
            "put the scratch directory on a disk file system (ext4, xfs)"
        )
    path = swap_dir / f"swap-{token()}"
    try:
        rid, fd = create_pinned(ledger, undo, "swap", path, size_bytes=size)
    except OSError as e:
        raise MemoryLimitError(f"swap: cannot create {path} ({e.strerror}); refusing to use a file boatload did not create") from None

    mkswap, swapon, swapoff = tools["mkswap"], tools["swapon"], tools["swapoff"]
    prio = _swap_priority()
    how = None
    for zeros in (False, True):  # fallocated first; zeros if swapon refuses that (older kernels, some fs)
        try:
            how = _fill(fd, size, zeros)
        except OSError as e:
            raise MemoryLimitError(f"swap: cannot allocate {size // MiB} MB for {path} on {fs} ({e.strerror})") from None
        os.fchmod(fd, 0o600)
        if os.fstat(fd).st_blocks * 512 < size:
            raise MemoryLimitError(f"swap: {path} on {fs} is still sparse after {how}; swapon would refuse it")
        if not same_file(path, fd):
            raise MemoryLimitError(f"swap: {path} is no longer the file boatload created; refusing to use it")
        check(run([mkswap, str(path)], timeout=120), "swap", MemoryLimitError)
        with deferred_signals():
            ledger.note(rid, swapon_priority=prio)
            r = run([swapon, "--priority", str(prio), str(path)], timeout=120)
            if r.returncode == 0 or str(path) in active_swaps():
                undo.step(f"swapoff {path}", lambda: swap_off(path, swapoff))
                break
        if zeros or how == "zeros":
            raise MemoryLimitError(f"swap: `{' '.join(r.args)}` failed on {fs} ({why(r)})")
    if str(path) not in active_swaps():
        raise MemoryLimitError(f"swap: swapon reported success but {path} is not in /proc/swaps")
    prov.update(
        swap_file=str(path),
        swap_size_bytes=os.fstat(fd).st_size,
        swap_priority=prio,
        swap_fill=how,
        mkswap_command=[mkswap, str(path)],
        swapon_command=[swapon, "--priority", str(prio), str(path)],
    )
    return path
