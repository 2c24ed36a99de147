"""Kind "loop": a sparse image file we create (O_CREAT|O_EXCL) under
`<scratch>/images/`, attached with `losetup --find --show`, formatted with
mkfs (ext2, ext3, ext4, xfs, btrfs) and mounted.

* `write_cache: "write back" | "write through"` is written to the loop
  device's `queue/write_cache` before mkfs (boatload.provision.targets.writecache);
  without it the device is set to "write back", the loop driver's own
  default, so that a setting left behind by anyone else cannot leak into a run.
* `log: {size_mb: N}` (xfs and ext4): an external log or journal on a second
  image in `/dev/shm/boatload-<hash of scratch>/` (a tmpfs: a fast device),
  attached to its own loop device (boatload.provision.targets.mkfs).

Safety: an image is formatted only after checking that the loop device is
backed by the very inode we created with O_EXCL (`verify_attached`).

* `model: <preset>` (and `log: {model: ...}`): the image is served through
  the device model instead (boatload.provision.targets.modelled).

The attach step is `attach()`: an image path in, an `Attached` (the image,
its pinning fd, the loop device) out; `image_for()` says where the image
comes from."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from boatload.provision.hostops import (
    loop_devices, not_installed, own_private_dir, read_sys, rmdir_if_empty, run, same_file, shm_dir,
    statfs_type, token, why,
)
from boatload.provision.ledger import Ledger
from boatload.base.signals import deferred_signals
from boatload.provision.targets.base import Provisioned, mount_fs
from boatload.provision.targets.image import Attached, make_image
from boatload.provision.targets.modelled import attach_modelled, verify_modelled
from boatload.provision.targets.mkfs import make_fs, mkfs_version
from boatload.provision.targets.teardown import detach
from boatload.provision.targets.writecache import restore_write_cache, set_write_cache
from boatload.base.targetspec import SHM, MiB, TargetError, TargetSpec
from boatload.base.tools import find as find_tool


def image_for(spec: TargetSpec, scratch: Path) -> Path:
    """Where the data image of a run is made: `<scratch>/images/<name>-<token>.img`."""
    return scratch / "images" / f"{spec.name}-{token()}.img"


def attach(spec, image: Path, size: int, ledger, undo, losetup: str, what: str = "image") -> Attached:
    """Create `image` (O_EXCL, sparse, `size` bytes) and attach it to a free loop
    device, recording each in the ledger first and registering its teardown."""
    img_rid, fd = make_image(spec, image, size, ledger, undo, what)
    verify_image(spec, ledger, img_rid, image, fd)

    # 2. the loop device
    with deferred_signals():
        loop_rid = ledger.record("loop", image)
        r = run([losetup, "--find", "--show", str(image)], timeout=120)
        if r.returncode != 0:
            ledger.release(loop_rid, by="never-created")
            raise TargetError(f"targets.{spec.name}: `{shlex.join(r.args)}` failed ({why(r)})")
        device = r.stdout.strip()
        undo.step(f"detach {device}", lambda: detach(device, image, losetup), release=(ledger, loop_rid))
        ledger.note(loop_rid, device=device)
    return Attached(image, fd, img_rid, loop_rid, device)


def verify_attached(spec, ledger, a: Attached, losetup: str) -> None:
    if a.backing is not None:  # a modelled device: the loop device is on the stack's FUSE file
        verify_image(spec, ledger, a.img_rid, a.image, a.fd)
        verify_modelled(spec, a)
        return
    verify_loop(spec, ledger, a.img_rid, a.image, a.fd, a.device, losetup)


def _set_write_cache(spec, ledger, undo, a: Attached) -> str | None:
    """The loop device's write cache: spec.write_cache, default "write back"."""
    return set_write_cache(
        f"targets.{spec.name}.write_cache", a.device, spec.write_cache, "write back",
        lambda **facts: ledger.note(a.loop_rid, **facts), undo,
        lambda before: restore_write_cache(a.device, a.backing or a.image, before),
    )


def make_shm_dir(spec: TargetSpec, scratch: Path, undo) -> Path:
    """Create (or reuse) this scratch's private directory on /dev/shm."""
    field_ = f"targets.{spec.name}.log"
    if not SHM.is_dir():
        raise TargetError(f"{field_}: {SHM} does not exist; the external log lives on {SHM} (a tmpfs: a fast device)")
    d = shm_dir(scratch)
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise TargetError(f"{field_}: cannot create {d} ({e.strerror})") from None
    if not own_private_dir(d):
        raise TargetError(
            f"{field_}: {d} is not a private directory of uid {os.geteuid()} "
            "(a symlink, or made by someone else?); refusing to use it"
        )
    undo.step(f"remove {d}", lambda: rmdir_if_empty(d))
    st = os.statvfs(d)
    free_mb = st.f_bavail * st.f_frsize // MiB
    if free_mb < spec.log_size_mb:
        raise TargetError(f"{field_}.size_mb: {SHM} has {free_mb} MB free, the log needs {spec.log_size_mb} MB")
    return d


def setup(spec: TargetSpec, scratch: Path, ledger: Ledger, undo, prov: dict, tools: dict) -> Path:
    losetup = tools["losetup"]
    if spec.model is not None:  # served by nbdkit through the device model (boatload.provision.targets.modelled)
        data = attach_modelled(spec, image_for(spec, scratch), spec.size_mb * MiB, ledger, undo, scratch,
                               spec.model, f"targets.{spec.name}.model", prov, "model")
    else:
        data = attach(spec, image_for(spec, scratch), spec.size_mb * MiB, ledger, undo, losetup)
    log = None
    if spec.log_size_mb:
        shm = make_shm_dir(spec, scratch, undo)
        log_image = shm / f"{spec.name}-log-{token()}.img"
        if spec.log_model is not None:
            log = attach_modelled(spec, log_image, spec.log_size_mb * MiB, ledger, undo, scratch, spec.log_model,
                                  f"targets.{spec.name}.log.model", prov, "log_model", what="log image")
        else:
            log = attach(spec, log_image, spec.log_size_mb * MiB, ledger, undo, losetup, what="log image")

    # the write cache, on devices proven ours, before mkfs issues its flushes
    verify_attached(spec, ledger, data, losetup)
    data_cache = _set_write_cache(spec, ledger, undo, data)
    log_cache = None
    if log:
        verify_attached(spec, ledger, log, losetup)
        log_cache = _set_write_cache(spec, ledger, undo, log)

    def verify():  # format only inodes we created, seen through the loop devices
        if log:
            verify_attached(spec, ledger, log, losetup)
        verify_attached(spec, ledger, data, losetup)

    made = make_fs(spec, tools, data.device, log.device if log else None, spec.log_size_mb, verify)
    prov.update(
        image=str(data.image),
        image_size_bytes=os.stat(data.image).st_size,
        loop_device=data.device,
        mkfs_command=made.mkfs_command,
        mkfs_version=mkfs_version(made.mkfs_command[0]),
        loop_write_cache=data_cache,
    )
    if log:
        prov.update(
            log_device=log.device,
            log_image=str(log.image),
            log_size_bytes=os.stat(log.image).st_size,
            log_mkfs_command=made.log_mkfs_command,
            log_write_cache=log_cache,
            log_backing_fs=statfs_type(log.image.parent),
        )
    return mount_fs(spec, scratch, ledger, undo, prov, tools, data.device, made.mount_options)


def verify_image(spec: TargetSpec, ledger: Ledger, rid: str, image: Path, fd: int) -> None:
    """The image path is the regular file we created (still open as `fd`), and
    its inode is the one the ledger recorded."""
    res = ledger.get(rid)
    mine = os.fstat(fd)
    try:
        st = os.lstat(image)
    except OSError as e:
        raise TargetError(f"targets.{spec.name}: image {image} vanished before formatting ({e.strerror}); refusing to format") from None
    if res is None or res.facts.get("inode") != mine.st_ino or res.facts.get("dev") != mine.st_dev:
        raise TargetError(f"targets.{spec.name}: the ledger does not record the inode of {image}; refusing to format it")
    if not stat.S_ISREG(st.st_mode) or not same_file(image, fd) or mine.st_nlink != 1:
        raise TargetError(
            f"targets.{spec.name}: {image} is not the regular file boatload created "
            f"(inode {st.st_ino}, expected {mine.st_ino}); refusing to format it"
        )


def verify_loop(spec, ledger, rid, image, fd, device, losetup) -> None:
    """Right before mkfs: the loop device is backed by the inode we created."""
    verify_image(spec, ledger, rid, image, fd)
    mine = os.fstat(fd)
    want_dev = f"{os.major(mine.st_dev)}:{os.minor(mine.st_dev)}"
    for d in loop_devices(losetup):
        if d["name"] == device:
            if d["back-ino"] == mine.st_ino and d["back-dev"] in (want_dev, ""):
                return
            raise TargetError(
                f"targets.{spec.name}: {device} is backed by inode {d['back-ino']} ({d['back-file']}), "
                f"not the image boatload created (inode {mine.st_ino}); refusing to format it"
            )
    raise TargetError(f"targets.{spec.name}: {device} is not attached any more; refusing to format it")


def set_loop_direct_io(provisioned: Provisioned) -> tuple[bool | None, str | None]:
    """Switch the target's loop device to direct I/O: (on?, why not); None for other targets.

    Then the image's I/O bypasses the host's page cache, so a memory limit
    around the measured process also holds for the device under it."""
    device = provisioned.provenance.get("loop_device")
    if not device:
        return None, None
    losetup = find_tool("losetup")
    if losetup is None:
        return False, not_installed("losetup")
    try:
        r = run([losetup, "--direct-io=on", device], timeout=120)
    except TargetError as e:
        return False, str(e)
    if read_sys(f"/sys/block/{Path(device).name}/loop/dio") == "1":
        return True, None
    return False, f"`losetup --direct-io=on {device}` did not take ({why(r) if r.returncode else 'dio still 0'})"
