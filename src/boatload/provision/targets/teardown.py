"""Undoing what a target's provisioning did, shared by every kind and by
boatload.provision.cleanup (killed runs): unmounting, detaching a loop device that is
still backed by our image (the write cache is put back by
boatload.provision.targets.writecache)."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from boatload.provision.blockdev import loop_backing_file
from boatload.provision.hostops import check, loop_devices, mount_at, run, why
from boatload.base.targetspec import TargetError


def unmount(mp: Path, umount: str, tries: int = 5) -> str | None:
    """Unmount everything on `mp`. Retries while busy, then detaches lazily.

    Returns None if nothing was mounted, else "unmounted" or "unmounted lazily"."""
    done = None
    for attempt in range(tries):
        if mount_at(mp) is None:
            return done
        r = run([umount, str(mp)], timeout=120)
        if r.returncode == 0:
            done = "unmounted"
            continue
        if mount_at(mp) is None:
            return done or "unmounted"
        if "busy" not in (r.stderr + r.stdout).lower():
            raise TargetError(f"`{shlex.join(r.args)}` failed ({why(r)})")
        time.sleep(0.1 * (attempt + 1))
    if mount_at(mp) is None:
        return done
    print(
        f"boatload: {mp} is still busy after {tries} tries; detaching it lazily (umount -l). "
        "The file system goes away once the last user lets go.",
        file=sys.stderr,
    )
    r = run([umount, "-l", str(mp)], timeout=120)
    if r.returncode != 0 and mount_at(mp) is not None:
        raise TargetError(f"`{shlex.join(r.args)}` failed ({why(r)})")
    return "unmounted lazily"


def detach(device: str, image: Path, losetup: str) -> bool:
    """Detach `device` if it is still backed by `image`; False if it was gone already.
    sysfs first: `losetup -l` can miss a device attached a moment ago (a signal
    right after losetup --find left one attached to a deleted image)."""
    back = loop_backing_file(device)
    if back is None:
        back = next((d["back-file"] for d in loop_devices(losetup) if d["name"] == device), None)
    if back is None:
        return False
    if back != str(image):
        raise TargetError(f"{device} is now backed by {back!r}, not {image}; leaving it")
    check(run([losetup, "-d", device], timeout=120), f"detach {device}")
    return True
