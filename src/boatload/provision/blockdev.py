"""Block devices as the kernel shows them, read only: sysfs (size, queue,
model, holders, partitions, a loop device's backing file), /dev/disk/by-id,
/proc/self/mountinfo and /proc/swaps. Nothing here opens a device.

The identity of a device is what a config's `wipe` must name before boatload
formats it: its `/dev/disk/by-id/` name where udev made one, else its model,
serial (as a short hash) and size from sysfs, else (a loop device) its
backing file and size. A config copied to another machine then names no disk
there."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from boatload.provision.hostops import mountinfo, read_sys, unescape

SYS_DEV = Path("/sys/dev/block")
SYS_CLASS = Path("/sys/class/block")
BY_ID = Path("/dev/disk/by-id")
SECTOR = 512


@dataclass(frozen=True)
class BlockDev:
    name: str  # the kernel's name: sda, sda1, nvme0n1p3, loop3
    devno: str  # "major:minor"
    sysdir: Path  # its directory in /sys/devices
    disk: str  # the whole disk's name (its own for a disk): the queue lives there

    @property
    def path(self) -> str:
        return f"/dev/{self.name}"

    def attr(self, rel: str) -> str | None:
        return read_sys(self.sysdir / rel)

    def queue(self, key: str) -> str | None:
        return read_sys(Path("/sys/block") / self.disk / "queue" / key)

    @property
    def size_bytes(self) -> int:
        size = self.attr("size")
        return int(size) * SECTOR if size and size.isdigit() else 0

    @property
    def read_only(self) -> bool:
        return self.attr("ro") == "1"

    @property
    def backing_file(self) -> str | None:
        """A loop device's backing file (None for other devices, or a loop device with none)."""
        return (loop_backing_file(self.disk) or None) if self.name == self.disk else None


def loop_backing_file(device: str) -> str | None:
    """The kernel's word on what backs a loop device (`loop3` or `/dev/loop3`;
    sysfs, " (deleted)" taken off), None if it backs nothing."""
    back = read_sys(Path("/sys/block") / Path(device).name / "loop" / "backing_file")
    return None if back is None else back.removesuffix(" (deleted)")


def from_sysdir(sysdir: Path) -> BlockDev:
    sysdir = sysdir.resolve()
    disk = sysdir.parent.name if (sysdir / "partition").exists() else sysdir.name
    return BlockDev(sysdir.name, (read_sys(sysdir / "dev") or "").strip(), sysdir, disk)


def lookup(path: str) -> BlockDev | str:
    """The block device at `path` (symlinks followed), or why it is not one."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"{path} does not exist ({e.strerror})" if isinstance(e, FileNotFoundError) else f"{path}: {e.strerror}"
    if not stat.S_ISBLK(st.st_mode):
        return f"{path} is not a block device"
    devno = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    sysdir = SYS_DEV / devno
    if not sysdir.exists():
        return f"{path} (block device {devno}) is not in sysfs"
    return from_sysdir(sysdir)


def all_devices() -> list[BlockDev]:
    """Every block device and partition the kernel has, by name."""
    try:
        names = sorted(os.listdir(SYS_CLASS))
    except OSError:
        return []
    return [from_sysdir(SYS_CLASS / n) for n in names]


def partitions(dev: BlockDev) -> list[BlockDev]:
    try:
        kids = sorted(os.listdir(dev.sysdir))
    except OSError:
        return []
    return [from_sysdir(dev.sysdir / k) for k in kids if (dev.sysdir / k / "partition").exists()]


def holders(dev: BlockDev) -> list[BlockDev]:
    """What the kernel stacked on it (device-mapper, md, bcache), recursively."""
    out, todo = [], [dev]
    while todo:
        d = todo.pop()
        try:
            names = sorted(os.listdir(d.sysdir / "holders"))
        except OSError:
            continue
        for n in names:
            h = from_sysdir(SYS_CLASS / n)
            if h.name not in {o.name for o in out}:
                out.append(h)
                todo.append(h)
    return out


def loops_on(devs: list[BlockDev]) -> list[BlockDev]:
    """Loop devices whose backing file is one of `devs` (a loop device on a block device)."""
    paths = {d.path for d in devs}
    return [d for d in all_devices() if d.name.startswith("loop") and d.backing_file in paths]


def family(dev: BlockDev) -> list[BlockDev]:
    """The device, its partitions, and everything stacked on any of them."""
    base = [dev, *partitions(dev)]
    stacked = []
    for d in base:
        stacked += holders(d)
    stacked += loops_on(base + stacked)
    return base + stacked


def mounts_of(devs: list[BlockDev]) -> list[tuple[str, str]]:
    """(mount point, device name) of every mount whose device is one of `devs`,
    by device number or by source path (btrfs shows an anonymous number)."""
    by_devno = {d.devno: d.name for d in devs}
    by_path = {d.path: d.name for d in devs}
    out = []
    for e in mountinfo():
        name = by_devno.get(e.devno)
        if name is None and e.source.startswith("/dev/"):
            name = by_path.get(os.path.realpath(e.source))
        if name is not None:
            out.append((e.mount_point, name))
    return out


def swaps_on(devs: list[BlockDev]) -> list[str]:
    """Active swap areas that are one of `devs`."""
    paths = {d.path for d in devs}
    try:
        lines = Path("/proc/swaps").read_bytes().splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        name = unescape(line.split()[0]) if line.split() else ""
        if os.path.realpath(name) in paths:
            found.append(name)
    return found


def devno_of_path(path: Path) -> str:
    st = os.stat(path)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def by_id_names() -> dict[str, list[str]]:
    """/dev/<name> -> its /dev/disk/by-id/ names (where udev made them)."""
    out: dict[str, list[str]] = {}
    try:
        links = sorted(os.listdir(BY_ID))
    except OSError:
        return out
    for link in links:
        out.setdefault(os.path.realpath(BY_ID / link), []).append(str(BY_ID / link))
    return out


def serial_hash(dev: BlockDev) -> str | None:
    """The first 12 hex digits of the serial's sha256: enough to tell disks apart, not to name one."""
    serial = dev.attr("serial") or read_sys(Path("/sys/block") / dev.disk / "device" / "serial")
    if not serial:
        return None
    return "sha256:" + hashlib.sha256(serial.encode()).hexdigest()[:12]


def model(dev: BlockDev) -> str | None:
    return read_sys(Path("/sys/block") / dev.disk / "device" / "model")


def identity(dev: BlockDev) -> str:
    """by-id name, else "model <m> serial <hash> size <bytes>", else "loop <backing file> size <bytes>"."""
    ids = by_id_names().get(dev.path)
    if ids:
        return sorted(ids, key=lambda s: (Path(s).name.startswith("wwn-"), s))[0]
    back = dev.backing_file
    if back:
        return f"loop {back} size {dev.size_bytes}"
    parts = [f"model {model(dev) or '-'}", f"serial {serial_hash(dev) or '-'}"]
    if dev.name != dev.disk:
        parts.append(f"partition {dev.attr('partition')}")
    return " ".join([*parts, f"size {dev.size_bytes}"])


def facts(dev: BlockDev) -> dict:
    """The device's hardware as sysfs has it, for the provenance (serial only as a hash)."""

    def num(v):
        return int(v) if v and v.lstrip("-").isdigit() else v

    disk = Path("/sys/block") / dev.disk
    discard = num(dev.queue("discard_max_bytes"))
    return {
        "name": dev.name,
        "identity": identity(dev),
        "model": model(dev),
        "vendor": read_sys(disk / "device" / "vendor"),
        "firmware_rev": read_sys(disk / "device" / "rev") or read_sys(disk / "device" / "firmware_rev"),
        "serial_hash": serial_hash(dev),
        "size_bytes": dev.size_bytes,
        "logical_block_size": num(dev.queue("logical_block_size")),
        "physical_block_size": num(dev.queue("physical_block_size")),
        "rotational": dev.queue("rotational") == "1" if dev.queue("rotational") is not None else None,
        "scheduler": _chosen(dev.queue("scheduler")),
        "queue_depth": num(read_sys(disk / "device" / "queue_depth")),
        "nr_requests": num(dev.queue("nr_requests")),
        "write_cache": dev.queue("write_cache"),
        "discard": (discard > 0) if isinstance(discard, int) else None,
        "backing_file": dev.backing_file,
    }


def _chosen(scheduler: str | None) -> str | None:
    """"none [mq-deadline] kyber" -> "mq-deadline"."""
    if not scheduler:
        return None
    for word in scheduler.split():
        if word.startswith("["):
            return word.strip("[]")
    return scheduler
