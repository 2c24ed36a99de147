"""A block device's write cache (`/sys/block/<dev>/queue/write_cache`): set
for a run, the value found noted in the ledger, and put back on teardown.

With "write through" the block layer drops cache flushes (REQ_PREFLUSH/FUA)
before they reach the device, which stands in for XFS's removed `nobarrier`.
The kernel keeps a loop device's setting after it is detached, so what was
found is always restored, by teardown or by boatload.provision.cleanup."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from boatload.provision.blockdev import loop_backing_file
from boatload.provision.hostops import read_sys, write_sys
from boatload.base.signals import deferred_signals
from boatload.base.targetspec import TargetError


def write_cache_file(device: str) -> Path:
    return Path("/sys/block") / Path(device).name / "queue" / "write_cache"


def loop_write_cache(device: str) -> str | None:
    """A block device's write cache setting ("write back" or "write through"); None if unreadable."""
    return read_sys(write_cache_file(device))


def restore_write_cache(device: str, image: Path | None, value: str) -> None:
    """Put back the write cache setting found. For a loop device (`image`
    given) only if it is still backed by `image`: else it is not ours any more, or gone."""
    if image is not None and loop_backing_file(device) != str(image):
        return
    write_sys(write_cache_file(device), value)


def set_write_cache(
    field_: str, device: str, want: str | None, default: str | None, note: Callable[..., None], undo, restore: Callable[[str], None],
) -> str | None:
    """Set `device`'s write cache to `want` (else to `default`, if not None);
    returns the value read back. The previous value goes to `note(write_cache_before=...)`
    (the ledger) before the write, and `restore(before)` onto the undo stack.
    Errors name `field_` (targets.<name>.write_cache)."""
    sysfile = write_cache_file(device)
    before = loop_write_cache(device)
    target = want or default
    if before is None:
        if want:
            raise TargetError(f"{field_}: {sysfile} cannot be read; this kernel does not let boatload set the write cache of {device}")
        return None
    if target is not None and before != target:
        with deferred_signals():
            note(write_cache_before=before)
            try:
                write_sys(sysfile, target)
            except OSError as e:
                if want:
                    raise TargetError(f"{field_}: the kernel refused {target!r} for {device} ({e.strerror})") from None
                return before  # the default could not be set: report what it is
            undo.step(f"restore write cache of {device}", lambda: restore(before))
    after = loop_write_cache(device)
    if want and after != want:
        raise TargetError(f"{field_}: wrote {want!r} to {sysfile} but it reads back {after!r}")
    return after
