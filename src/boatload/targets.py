"""Targets: the file systems under test, provisioned for one run and torn down.

A target is a named spec in the config (`targets: {ext4: {kind: loop, fs: ext4,
size_mb: 1024, mkfs_options: [...], mount_options: [...]}}`):

* kind "tmpfs": `mount -t tmpfs -o size=<size_mb>m[,mount_options] boatload-tmpfs <mnt>`
* kind "loop":  a sparse image file we create (O_CREAT|O_EXCL) under
  `<scratch>/images/`, attached with `losetup --find --show`, formatted with
  mkfs (ext2, ext3, ext4, xfs, btrfs), mounted with `mount -t <fs>`
* kind "dir":   a fresh plain directory under `<scratch>/dirs/`; no root needed

Loop targets take two more options:

* `write_cache: "write back" | "write through"`, written to the loop device's
  `/sys/block/loopN/queue/write_cache` before mkfs. With "write through" the
  block layer drops cache flushes (REQ_PREFLUSH/FUA) before they reach the
  device, which stands in for XFS's removed `nobarrier`. The kernel keeps the
  setting on the loop device after it is detached, so teardown (and cleanup)
  put back the value found. Without the option the device is set to "write
  back", the loop driver's own default, so that a setting left behind by
  anyone else cannot leak into a run.
* `log: {size_mb: N}` (xfs and ext4 only): an external XFS log or ext4 journal
  on a second image in `/dev/shm/boatload-<hash of scratch>/` (a tmpfs: a fast
  device), attached to its own loop device. xfs: `mkfs.xfs -l
  logdev=<loop>,size=<N>m` and `mount -o logdev=<loop>`; ext4: `mkfs.ext4 -O
  journal_dev -b 4096 <loop>`, then `mkfs.ext4 -b 4096 -J device=<loop>`;
  ext4 finds its journal again by device number, so the mount needs no option.

`provision(spec, scratch)` is a context manager yielding a `Provisioned`
(the directory to run in, plus provenance). Teardown runs in reverse order on
success, exception, KeyboardInterrupt and SIGTERM/SIGHUP, and one failing step
does not skip the others.

Safety: every resource is recorded in `<scratch>/ledger.jsonl` before it is
created (see boatload.ledger); only paths we created under the scratch
directory are touched; an image is formatted only after checking that the loop
device is backed by the very inode we created with O_EXCL. `boatload.cleanup.cleanup(scratch)`
undoes leftovers of killed runs, from the ledger and from a scan of
/proc/self/mountinfo, `losetup` and the scratch directory.

Sizes are in MiB (`size_mb: 1024` is a 1 GiB image / tmpfs).
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from boatload.hostops import (
    Teardown, check, is_root, loop_devices, mount_at, mount_containing, not_installed, own_private_dir, read_sys,
    remove_dir, remove_file, resolve_tools, rmdir, rmdir_if_empty, run, same_file, shm_dir, statfs_type, subdir,
    token, why, write_sys,
)
from boatload.ledger import Ledger
from boatload.signals import deferred_signals, signals_as_exceptions
from boatload.targetspec import (
    EXT_JOURNAL_BLOCK_SIZE, MKFS, MKFS_VERSION_FLAG, SHM, MiB, NeedsRoot, TargetError, TargetSpec, needs_root,
    option_value, validated,
)
from boatload.tools import find as find_tool

__all__ = ["Provisioned", "provision", "set_loop_direct_io", "unmount", "loop_write_cache", "restore_write_cache"]


# --------------------------------------------------------------------------
# provisioning


@dataclass
class Provisioned:
    spec: TargetSpec
    path: Path  # the directory to run the workload in
    provenance: dict = field(default_factory=dict)

    def usage(self) -> dict:
        """Space and inodes in use on the file system holding `path` (os.statvfs).

        For kind "dir" these are the numbers of the whole host file system.
        Inodes are None where the file system does not count them (btrfs)."""
        st = os.statvfs(self.path)
        used_kb = (st.f_blocks - st.f_bfree) * st.f_frsize // 1024
        if st.f_files > 0:
            return {"blocks_used_kb": used_kb, "inodes_used": st.f_files - st.f_ffree, "inodes_total": st.f_files}
        return {"blocks_used_kb": used_kb, "inodes_used": None, "inodes_total": None}


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


def _backing_file(device: str) -> str | None:
    """The kernel's word on what backs a loop device (sysfs), None if it backs nothing."""
    try:
        back = (Path("/sys/block") / Path(device).name / "loop" / "backing_file").read_text().strip()
    except OSError:
        return None
    return back.removesuffix(" (deleted)")


def _detach(device: str, image: Path, losetup: str) -> bool:
    """Detach `device` if it is still backed by `image`; False if it was gone already.
    sysfs first: `losetup -l` can miss a device attached a moment ago (a signal
    right after losetup --find left one attached to a deleted image)."""
    back = _backing_file(device)
    if back is None:
        back = next((d["back-file"] for d in loop_devices(losetup) if d["name"] == device), None)
    if back is None:
        return False
    if back != str(image):
        raise TargetError(f"{device} is now backed by {back!r}, not {image}; leaving it")
    check(run([losetup, "-d", device], timeout=120), f"detach {device}")
    return True


def _mkfs_version(mkfs: str) -> str | None:
    flag = MKFS_VERSION_FLAG.get(Path(mkfs).name, "-V")
    try:
        r = run([mkfs, flag], timeout=30)
    except TargetError:
        return None
    lines = (r.stdout + r.stderr).strip().splitlines()
    return lines[0].strip() if lines else None


def _needs_root_message(spec: TargetSpec) -> str:
    uid = os.geteuid()
    if spec.kind == "tmpfs":
        return f"tmpfs target '{spec.name}' needs root to mount (running as uid {uid})"
    return (
        f"loop target '{spec.name}' ({spec.fs}) needs root to attach a loop device and mount "
        f"(running as uid {uid}); kind 'dir' runs without root"
    )


@contextmanager
def provision(spec: TargetSpec, scratch: Path) -> Iterator[Provisioned]:
    """Create the target, yield it, tear it down whatever happens.

    Nothing is touched before the checks pass: spec valid, root if needed
    (else NeedsRoot), tools installed (else TargetError naming the Debian
    package). While the block runs, SIGTERM and SIGHUP raise
    boatload.signals.Terminated if they would otherwise kill the process, so
    teardown runs; signals arriving while a resource is being created or torn
    down are held until that step is done.
    """
    checked = validated(spec)
    if needs_root(checked) and not is_root():
        raise NeedsRoot(_needs_root_message(checked))
    tools = resolve_tools(checked)
    scratch = Path(scratch).resolve()

    with signals_as_exceptions(only_if_default=True), Teardown(f"target '{checked.name}'") as undo:
        with deferred_signals():
            sub = {"tmpfs": "mnt", "loop": "images", "dir": "dirs"}[checked.kind]
            subdir(scratch, sub)
            if checked.kind == "loop":
                subdir(scratch, "mnt")
            ledger = Ledger(scratch)
        prov = _base_provenance(checked, scratch)
        if checked.kind == "dir":
            path = _setup_dir(checked, scratch, ledger, undo, prov)
        else:
            path = _setup_mount(checked, scratch, ledger, undo, prov, tools)
        yield Provisioned(spec=spec, path=path, provenance=prov)


def _base_provenance(spec: TargetSpec, scratch: Path) -> dict:
    holder = mount_containing(scratch)
    return {
        "name": spec.name,
        "kind": spec.kind,
        "fs": spec.fs,
        "spec": spec.to_dict(),
        "size_mb": None if spec.kind == "dir" else spec.size_mb,
        "kernel": os.uname().release,
        "mkfs_command": None,
        "mkfs_version": None,
        "mount_command": None,
        "mount_options_requested": list(spec.mount_options),
        "mount_options": None,
        "mount_source": None,
        "kernel_fs": None,
        "loop_device": None,
        "loop_write_cache": None,
        "write_cache_requested": spec.write_cache,
        "log_device": None,
        "log_image": None,
        "log_size_bytes": None,
        "log_mkfs_command": None,
        "log_write_cache": None,
        "log_backing_fs": None,
        "image": None,
        "image_size_bytes": None,
        "backing_fs": statfs_type(scratch),
        "backing_fs_mount": holder.fstype if holder else None,
        "scratch": str(scratch),
        "path": None,
    }


def _setup_dir(spec, scratch, ledger, undo, prov) -> Path:
    d = scratch / "dirs" / f"{spec.name}-{token()}"
    with deferred_signals():
        rid = ledger.record("dir", d)
        try:
            os.mkdir(d, 0o755)
        except FileExistsError:
            ledger.release(rid, by="never-created")
            raise TargetError(f"targets.{spec.name}: {d} already exists; refusing to use it") from None
        # an open fd pins the inode, so its number cannot be reused by another directory
        pin = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        undo.step(f"close {d}", lambda: os.close(pin))
        undo.step(f"remove {d}", lambda: remove_dir(d, pin), release=(ledger, rid))
        st = os.fstat(pin)
        ledger.note(rid, inode=st.st_ino, dev=st.st_dev)
    holder = mount_containing(d)
    prov.update(
        path=str(d),
        kernel_fs=holder.fstype if holder else None,
        mount_options=holder.options if holder else None,
        mount_source=holder.source if holder else None,
    )
    return d


@dataclass
class _Attached:
    """An image file we created (still open as `fd`) and the loop device backing it."""

    image: Path
    fd: int
    img_rid: str
    loop_rid: str
    device: str


def _attach(spec, image: Path, size: int, ledger, undo, losetup: str, what: str = "image") -> _Attached:
    """Create `image` (O_EXCL, sparse) and attach it to a free loop device,
    recording each in the ledger first and registering its teardown."""
    # 1. the image: recorded, then created with O_EXCL (never an existing file)
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
    _verify_image(spec, ledger, img_rid, image, fd)

    # 2. the loop device
    with deferred_signals():
        loop_rid = ledger.record("loop", image)
        r = run([losetup, "--find", "--show", str(image)], timeout=120)
        if r.returncode != 0:
            ledger.release(loop_rid, by="never-created")
            raise TargetError(f"targets.{spec.name}: `{shlex.join(r.args)}` failed ({why(r)})")
        device = r.stdout.strip()
        undo.step(f"detach {device}", lambda: _detach(device, image, losetup), release=(ledger, loop_rid))
        ledger.note(loop_rid, device=device)
    return _Attached(image, fd, img_rid, loop_rid, device)


def _verify_attached(spec, ledger, a: _Attached, losetup: str) -> None:
    _verify_loop(spec, ledger, a.img_rid, a.image, a.fd, a.device, losetup)


def _write_cache_file(device: str) -> Path:
    return Path("/sys/block") / Path(device).name / "queue" / "write_cache"


def loop_write_cache(device: str) -> str | None:
    """The loop device's write cache setting ("write back" or "write through"); None if unreadable."""
    return read_sys(_write_cache_file(device))


def restore_write_cache(device: str, image: Path, value: str) -> None:
    """Put back the write cache setting found (the kernel keeps it after detaching),
    if `device` is still backed by `image`."""
    back = read_sys(f"/sys/block/{Path(device).name}/loop/backing_file") or ""
    if back.removesuffix(" (deleted)") != str(image):
        return  # not ours any more (or gone): not ours to change
    write_sys(_write_cache_file(device), value)


def _set_write_cache(spec, ledger, undo, a: _Attached) -> str | None:
    """Set the loop device's write cache (spec.write_cache, default "write back");
    returns the value read back. The previous value is noted in the ledger and
    restored on teardown."""
    sysfile = _write_cache_file(a.device)
    field_ = f"targets.{spec.name}.write_cache"
    before = loop_write_cache(a.device)
    want = spec.write_cache or "write back"
    if before is None:
        if spec.write_cache:
            raise TargetError(f"{field_}: {sysfile} cannot be read; this kernel does not let boatload set the write cache of {a.device}")
        return None
    if before != want:
        with deferred_signals():
            ledger.note(a.loop_rid, write_cache_before=before)
            try:
                write_sys(sysfile, want)
            except OSError as e:
                if spec.write_cache:
                    raise TargetError(f"{field_}: the kernel refused {want!r} for {a.device} ({e.strerror})") from None
                return before  # the default could not be set: report what it is
            undo.step(
                f"restore write cache of {a.device}",
                lambda: restore_write_cache(a.device, a.image, before),
            )
    after = loop_write_cache(a.device)
    if spec.write_cache and after != want:
        raise TargetError(f"{field_}: wrote {want!r} to {sysfile} but it reads back {after!r}")
    return after


def _make_shm_dir(spec: TargetSpec, scratch: Path, undo) -> Path:
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


def _setup_mount(spec, scratch, ledger, undo, prov, tools) -> Path:
    mount, umount = tools["mount"], tools["umount"]
    if spec.kind == "loop":
        losetup = tools["losetup"]
        image = scratch / "images" / f"{spec.name}-{token()}.img"
        data = _attach(spec, image, spec.size_mb * MiB, ledger, undo, losetup)
        log = None
        if spec.log_size_mb:
            shm = _make_shm_dir(spec, scratch, undo)
            log_image = shm / f"{spec.name}-log-{token()}.img"
            log = _attach(spec, log_image, spec.log_size_mb * MiB, ledger, undo, losetup, what="log image")

        # 3. the write cache, on devices proven ours, before mkfs issues its flushes
        _verify_attached(spec, ledger, data, losetup)
        data_cache = _set_write_cache(spec, ledger, undo, data)
        log_cache = None
        if log:
            _verify_attached(spec, ledger, log, losetup)
            log_cache = _set_write_cache(spec, ledger, undo, log)

        # 4. format: only inodes we created, seen through the loop devices
        mkfs, flags = MKFS[spec.fs]
        opts = list(spec.mount_options)
        log_argv = None
        if log and spec.fs == "xfs":
            mkfs_argv = [
                tools[mkfs], *flags, "-l", f"logdev={log.device},size={spec.log_size_mb}m",
                *spec.mkfs_options, data.device,
            ]
            opts = [f"logdev={log.device}", *opts]
        elif log:  # ext4: the journal device first, same block size as the data
            bs = ["-b", EXT_JOURNAL_BLOCK_SIZE] if option_value(spec.mkfs_options, "-b") is None else []
            log_argv = [tools[mkfs], *flags, "-O", "journal_dev", "-b", EXT_JOURNAL_BLOCK_SIZE, log.device]
            _verify_attached(spec, ledger, log, losetup)
            check(run(log_argv), f"targets.{spec.name}.log: formatting the external journal")
            mkfs_argv = [tools[mkfs], *flags, *bs, "-J", f"device={log.device}", *spec.mkfs_options, data.device]
        else:
            mkfs_argv = [tools[mkfs], *flags, *spec.mkfs_options, data.device]
        if log:
            _verify_attached(spec, ledger, log, losetup)
        _verify_attached(spec, ledger, data, losetup)
        check(run(mkfs_argv), f"targets.{spec.name}.mkfs_options: formatting {spec.fs}")
        prov.update(
            image=str(data.image),
            image_size_bytes=os.stat(data.image).st_size,
            loop_device=data.device,
            mkfs_command=mkfs_argv,
            mkfs_version=_mkfs_version(tools[mkfs]),
            loop_write_cache=data_cache,
        )
        if log:
            prov.update(
                log_device=log.device,
                log_image=str(log.image),
                log_size_bytes=os.stat(log.image).st_size,
                log_mkfs_command=log_argv,
                log_write_cache=log_cache,
                log_backing_fs=statfs_type(log.image.parent),
            )
        source = data.device
    else:
        opts = [f"size={spec.size_mb}m", *spec.mount_options]
        source = "boatload-tmpfs"

    # 5. the mount point and the mount
    mp = scratch / "mnt" / f"boatload-{spec.name}-{token()}"
    with deferred_signals():
        mnt_rid = ledger.record("mount", mp, fs=spec.fs, source=source)
        try:
            os.mkdir(mp, 0o755)
        except FileExistsError:
            ledger.release(mnt_rid, by="never-created")
            raise TargetError(f"targets.{spec.name}: mount point {mp} already exists; refusing to use it") from None

        def unmount_and_rmdir():
            unmount(mp, umount)
            rmdir(mp)

        undo.step(f"unmount {mp}", unmount_and_rmdir, release=(ledger, mnt_rid))
        argv = [mount, "-t", spec.fs, *(["-o", ",".join(opts)] if opts else []), source, str(mp)]
        check(run(argv, timeout=300), f"targets.{spec.name}.mount_options: mounting {spec.fs}")

    entry = mount_at(mp)
    if entry is None:
        raise TargetError(f"targets.{spec.name}: mount reported success but {mp} is not in /proc/self/mountinfo")
    if entry.fstype != spec.fs:
        raise TargetError(f"targets.{spec.name}.fs: asked for {spec.fs} but the kernel mounted {entry.fstype}")
    prov.update(
        path=str(mp),
        mount_command=argv,
        mount_options=entry.options,
        mount_source=entry.source,
        kernel_fs=entry.fstype,
    )
    return mp


def _verify_image(spec: TargetSpec, ledger: Ledger, rid: str, image: Path, fd: int) -> None:
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


def _verify_loop(spec, ledger, rid, image, fd, device, losetup) -> None:
    """Right before mkfs: the loop device is backed by the inode we created."""
    _verify_image(spec, ledger, rid, image, fd)
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


# --------------------------------------------------------------------------
# after provisioning


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
