"""An image file we create for a loop target (O_CREAT|O_EXCL, sparse),
recorded in the ledger first, kept open until teardown, and what attaching
it gave (`Attached`): shared by plain loop targets (boatload.provision.targets.loop)
and modelled ones (boatload.provision.targets.modelled)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from boatload.provision.hostops import remove_file
from boatload.base.signals import deferred_signals
from boatload.base.targetspec import TargetError


@dataclass
class Attached:
    """An image file we created (still open as `fd`) and the loop device backing it."""

    image: Path
    fd: int
    img_rid: str
    loop_rid: str
    device: str
    backing: Path | None = None  # a modelled device: the loop device's file (the stack's FUSE file)


def make_image(spec, image: Path, size: int, ledger, undo, what: str = "image") -> tuple[str, int]:
    """Create `image` (never an existing file), sparse, `size` bytes; its
    ledger id and the fd that pins it."""
    with deferred_signals():
        img_rid = ledger.record("image", image, size_bytes=size)
        try:
            fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            ledger.release(img_rid, by="never-created")
            raise TargetError(
                f"targets.{spec.name}: {what} {image} already exists; "
                "refusing to format a file boatload did not create"
            ) from None
        except OSError as e:
            ledger.release(img_rid, by="never-created")
            raise TargetError(f"targets.{spec.name}: cannot create {what} {image} ({e.strerror})") from None
        # fd stays open until teardown: it pins the inode, so no other file can
        # take its number, and "same inode number" then means "our file"
        undo.step(f"close {image}", lambda: os.close(fd))
        undo.step(f"delete {image}", lambda: remove_file(image, fd), release=(ledger, img_rid))
        st = os.fstat(fd)
        ledger.note(img_rid, inode=st.st_ino, dev=st.st_dev)
        os.ftruncate(fd, size)  # sparse
    return img_rid, fd
