"""Block devices for the device-target tests: loop devices attached to sparse
images in the test's own tmp directory (a loop device is a block device to
mkfs, mount, blkid, wipefs and sysfs), detached again by the test that
attached them, and only those; plus a read of a device's first and last MiB,
to show a refusal wrote nothing."""

from __future__ import annotations

import os
import subprocess
from contextlib import ExitStack, contextmanager
from pathlib import Path

from boatload.base.tools import find

MiB = 1 << 20


def sh(*argv: str) -> str:
    """Run a system tool (found in the sbin directories too); its output."""
    return subprocess.run([find(argv[0]) or argv[0], *argv[1:]], check=True, capture_output=True, text=True).stdout


def write_dos_label(image: Path, start_mb: int = 1) -> None:
    """An MBR partition table with one Linux partition from `start_mb` to the end, written into the image file."""
    size = image.stat().st_size
    first, count = start_mb * MiB // 512, (size - start_mb * MiB) // 512
    entry = bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + first.to_bytes(4, "little") + count.to_bytes(4, "little")
    with open(image, "r+b") as f:
        f.seek(446)
        f.write(entry + bytes(48) + b"\x55\xaa")


@contextmanager
def loop_device(tmp: Path, size_mb: int, name: str = "disk", partscan: bool = False):
    """A loop device on a new sparse image `tmp/<name>.img` (with a DOS partition
    table and the kernel's partitions if `partscan`); detached after, if still on that image."""
    image = tmp / f"{name}.img"
    with open(image, "xb") as f:
        f.truncate(size_mb * MiB)
    if partscan:
        write_dos_label(image)
    dev = sh("losetup", "--find", "--show", *(["--partscan"] if partscan else []), str(image)).strip()
    try:
        yield dev
    finally:
        back = Path(f"/sys/block/{Path(dev).name}/loop/backing_file")
        if back.exists() and back.read_text().strip().removesuffix(" (deleted)") == str(image):
            subprocess.run(["losetup", "-d", dev], check=True)
        image.unlink()


@contextmanager
def loop_devices(tmp: Path, *sizes_mb: int):
    with ExitStack() as stack:
        yield [stack.enter_context(loop_device(tmp, s, f"disk{i}")) for i, s in enumerate(sizes_mb)]


def edges(dev: str) -> tuple[bytes, bytes]:
    """The device's first and last MiB (read only)."""
    fd = os.open(dev, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        return os.pread(fd, MiB, 0), os.pread(fd, MiB, size - MiB)
    finally:
        os.close(fd)


def identity(dev: str) -> str:
    """What the docs say a loop device's identity is: its backing file and size, read here from sysfs."""
    name = Path(dev).name
    back = Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()
    size = int(Path(f"/sys/block/{name}/size").read_text()) * 512
    return f"loop {back} size {size}"


def signatures(dev: str) -> str:
    """What wipefs finds on the device ("" if nothing)."""
    return subprocess.run([find("wipefs"), "--no-act", dev], capture_output=True, text=True).stdout.strip()
