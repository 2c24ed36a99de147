"""The host as provisioning and cleanup see it: running a tool, the mount
table, loop devices, small /proc and /sys files, file system types, the
names of what we create, removing it again, and `Teardown`, the stack that
undoes it. Used by boatload.provision.targets, boatload.provision.cgroups, boatload.provision.swapfiles,
boatload.provision.memlimit and boatload.provision.cleanup; it imports none of them."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from boatload.base.signals import deferred_signals, holding
from boatload.base.targetspec import MKFS, SHM, SWAP_DISK_FS, TargetError, TargetSpec
from boatload.base.tools import BY_COMMAND
from boatload.base.tools import find as find_tool

# --------------------------------------------------------------------------
# tools, processes, system tables

_ENV = dict(os.environ, LC_ALL="C")


def not_installed(command: str) -> str:
    """"mkfs.xfs is not installed (Debian package xfsprogs, nixpkgs xfsprogs)"."""
    t = BY_COMMAND.get(command)
    return f"{command} is not installed ({f'Debian package {t.debian}, nixpkgs {t.nix}' if t else 'unknown package'})"


def _required_tools(spec: TargetSpec) -> list[str]:
    modelled = ["nbdkit", "nbdfuse", "fusermount3"] if spec.model or spec.log_model else []
    if spec.kind == "tmpfs":  # modelled: its swap disk, an ext4 on a loop device
        swap_disk = [MKFS[SWAP_DISK_FS][0], "losetup", *modelled] if modelled else []
        return ["mount", "umount", *swap_disk]
    if spec.kind == "loop":
        return [MKFS[spec.fs][0], "losetup", "mount", "umount", *modelled]
    if spec.kind == "device":
        return [MKFS[spec.fs][0], "wipefs", "mount", "umount"]
    return []


def resolve_tools(spec: TargetSpec) -> dict[str, str]:
    """The full path of every program the target needs; TargetError naming the field and package if one is missing."""
    found: dict[str, str] = {}
    for cmd in _required_tools(spec):
        path = find_tool(cmd)
        if path is None:
            field_ = "fs" if cmd.startswith("mkfs.") else "model" if cmd in ("nbdkit", "nbdfuse", "fusermount3") else "kind"
            raise TargetError(
                f"targets.{spec.name}.{field_}: {not_installed(cmd)}; a {spec.kind} target of fs {spec.fs} needs it"
            )
        found[cmd] = path
    return found


def run(argv: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    """Run a tool to its end. In a step that holds signals back (creating a
    resource, tearing down) the tool gets a session of its own, so a Ctrl-C
    sent to the terminal's process group reaches boatload, which finishes the
    step, and does not kill the tool in the middle of it (a wipefs or umount
    cut short leaves the device as it was). Elsewhere a Ctrl-C stops the tool
    at once, as subprocess kills it on KeyboardInterrupt."""
    try:
        return subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=_ENV, timeout=timeout,
            start_new_session=holding(),
        )
    except subprocess.TimeoutExpired:
        raise TargetError(f"`{shlex.join(argv)}` did not finish within {timeout:.0f} s") from None
    except OSError as e:
        raise TargetError(f"`{shlex.join(argv)}` could not start: {e}") from None


def why(r: subprocess.CompletedProcess) -> str:
    text = (r.stderr or r.stdout or "").strip().splitlines()
    return f"exit {r.returncode}: {text[-1].strip()}" if text else f"exit {r.returncode}"


def check(r: subprocess.CompletedProcess, what: str, error: type[TargetError] = TargetError) -> str:
    """The output of a finished command; `error` naming `what`, the command and its last line if it failed."""
    if r.returncode != 0:
        raise error(f"{what}: `{shlex.join(r.args)}` failed ({why(r)})")
    return r.stdout


def unescape(field_: bytes | str) -> str:
    """A field of /proc/self/mountinfo or /proc/swaps with its octal escapes (\\040 for a space) undone."""
    raw = os.fsencode(field_) if isinstance(field_, str) else field_
    return os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), raw))


def read_sys(path: Path | str) -> str | None:
    """The text of a small /proc, /sys or cgroup file, stripped; None if it cannot be read."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def write_sys(path: Path | str, value: str) -> None:
    """Write one value to a /sys or cgroup file, as one write(2) (OSError as it comes)."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


@dataclass
class MountEntry:
    mount_point: str
    devno: str
    fstype: str
    source: str
    mount_options: str  # per-mount (field 6)
    super_options: str  # per-superblock (after the separator)
    root: str = "/"  # the directory of the file system shown at the mount point (field 4)

    @property
    def options(self) -> list[str]:
        """Options in effect: per-mount first, then per-superblock ones not already there."""
        out: list[str] = []
        for o in self.mount_options.split(",") + self.super_options.split(","):
            if o and o not in out:
                out.append(o)
        return out


def mountinfo() -> list[MountEntry]:
    entries = []
    for line in Path("/proc/self/mountinfo").read_bytes().splitlines():
        parts = line.split(b" ")
        try:
            sep = parts.index(b"-", 6)
            entries.append(
                MountEntry(
                    mount_point=unescape(parts[4]),
                    devno=parts[2].decode(),
                    fstype=unescape(parts[sep + 1]),
                    source=unescape(parts[sep + 2]),
                    mount_options=unescape(parts[5]),
                    super_options=unescape(parts[sep + 3]) if len(parts) > sep + 3 else "",
                    root=unescape(parts[3]),
                )
            )
        except (ValueError, IndexError):
            continue
    return entries


def mount_at(mp: Path | str) -> MountEntry | None:
    """The topmost mount on exactly this mount point, if any."""
    found = None
    for e in mountinfo():
        if e.mount_point == str(mp):
            found = e
    return found


def mount_containing(path: Path) -> MountEntry | None:
    """The mount that holds `path` (longest mount-point prefix; later wins)."""
    p = str(Path(path).resolve())
    best, best_len = None, -1
    for e in mountinfo():
        mp = e.mount_point
        if p == mp or p.startswith(mp.rstrip("/") + "/"):
            if len(mp) >= best_len:
                best, best_len = e, len(mp)
    return best


def loop_devices(losetup: str | None) -> list[dict]:
    """`losetup -J -l` as [{"name", "back-file" (without " (deleted)"), "back-ino", "back-dev"}]."""
    if losetup is None:
        return []
    r = run([losetup, "-J", "-l", "-O", "NAME,BACK-FILE,BACK-INO,BACK-MAJ:MIN"], timeout=60)
    if r.returncode != 0 or not r.stdout.strip():
        return []
    try:
        devs = json.loads(r.stdout).get("loopdevices", [])
    except ValueError:
        return []
    out = []
    for d in devs:
        back = d.get("back-file") or ""
        if back.endswith(" (deleted)"):
            back = back[: -len(" (deleted)")]
        out.append(
            {
                "name": d.get("name"),
                "back-file": back,
                "back-ino": int(d["back-ino"]) if str(d.get("back-ino", "")).strip().isdigit() else None,
                "back-dev": str(d.get("back-maj:min") or "").strip(),
            }
        )
    return out


# statfs(2) f_type magic numbers, named as stat(1) -f names them
FS_MAGIC = {
    0xEF53: "ext2/ext3",
    0x58465342: "xfs",
    0x9123683E: "btrfs",
    0x01021994: "tmpfs",
    0x858458F6: "ramfs",
    0x794C7630: "overlayfs",
    0x6969: "nfs",
    0x2FC12FC1: "zfs",
    0xF2F52010: "f2fs",
    0xCA451A4E: "bcachefs",
    0x65735546: "fuseblk",
    0x73717368: "squashfs",
    0x01021997: "v9fs",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
    0x00C36400: "ceph",
    0x4D44: "msdos",
    0x2011BAB0: "exfat",
    0x5346544E: "ntfs",
    0x0027E0EB: "cgroup",
    0x63677270: "cgroup2",
}


def statfs_type(path: Path) -> str | None:
    """The file system type of `path` as statfs(2) reports it ("ext2/ext3", "xfs", …)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(512)  # struct statfs is 120 bytes on 64-bit
        if libc.statfs(os.fsencode(str(path)), buf) != 0:
            return None
        magic = ctypes.c_ulong.from_buffer(buf).value & 0xFFFFFFFF
    except (OSError, AttributeError):
        return None
    return FS_MAGIC.get(magic, f"0x{magic:x}")


def is_root() -> bool:
    return os.geteuid() == 0


# --------------------------------------------------------------------------
# naming

IMAGE_RE = re.compile(r"(?P<name>.+)-(?P<pid>\d+)-(?P<rand>[0-9a-z]+)\.img\Z")
MOUNT_RE = re.compile(r"boatload-(?P<name>.+)-(?P<pid>\d+)-(?P<rand>[0-9a-z]+)\Z")
DIR_RE = re.compile(r"(?P<name>.+)-(?P<pid>\d+)-(?P<rand>[0-9a-z]+)\Z")


def token() -> str:
    """`<pid>-<random>`: the unique part of every path we create (tests replace it)."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def plain_dir(d: Path, error: type[Exception] = TargetError) -> Path:
    """`d`, created if needed, and a real directory (not a symlink); else `error`, naming it."""
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o755)
        st = os.lstat(d)
    except OSError as e:
        raise error(f"scratch directory {d}: {e.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise error(f"scratch directory {d} is not a plain directory (a symlink?); refusing to use it")
    return d


def subdir(scratch: Path, name: str) -> Path:
    """`<scratch>/<name>`, created if needed, and a real directory (not a symlink)."""
    return plain_dir(scratch / name)


# --------------------------------------------------------------------------
# files and directories we made


def existing_ancestor(path: Path | str) -> Path:
    """The path, or its nearest existing parent (a scratch directory may not exist yet)."""
    path = Path(path).resolve()
    while not path.exists():
        path = path.parent
    return path


def same_file(path: Path, fd: int) -> bool:
    """Is `path` (not followed) the very file open as `fd`? The open fd keeps the
    inode allocated, so equal (device, inode) numbers cannot be a reused number."""
    try:
        a, b = os.lstat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) and stat.S_IFMT(a.st_mode) == stat.S_IFMT(b.st_mode)


def remove_file(path: Path, fd: int) -> bool:
    """Delete `path` if it is still the file open as `fd` (an image, a swap file); False if it was gone."""
    if not os.path.lexists(path):
        return False
    if not same_file(path, fd):
        raise TargetError(f"{path} is no longer the file we created; leaving it")
    os.unlink(path)
    return True


def remove_dir(d: Path, fd: int) -> bool:
    if not os.path.lexists(d):
        return False
    if not same_file(d, fd):
        raise TargetError(f"{d} is no longer the directory we created; leaving it")
    shutil.rmtree(d)  # does not follow symlinks (fd-based on Linux)
    return True


def create_pinned(ledger, undo: Teardown, kind: str, path: Path, directory: bool = False, **facts) -> tuple[str, int]:
    """Record `path` in the ledger (kind `kind`), create it where nothing was
    (mkdir, or O_EXCL for a file) and keep an fd open on it until teardown,
    which closes it and removes `path` if it is still that inode; returns the
    ledger id and the fd. The fd pins the inode, so its number cannot be taken
    by another file, and "same inode" then means "ours". When creating fails,
    the record is released as never created and the OSError (FileExistsError
    when `path` exists) raised for the caller to word."""
    with deferred_signals():
        rid = ledger.record(kind, path, **facts)
        try:
            if directory:
                os.mkdir(path, 0o755)
            else:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            ledger.release(rid, by="never-created")
            raise
        if directory:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        undo.step(f"close {path}", lambda: os.close(fd))
        remove = remove_dir if directory else remove_file
        undo.step(f"{'remove' if directory else 'delete'} {path}", lambda: remove(path, fd), release=(ledger, rid))
        st = os.fstat(fd)
        ledger.note(rid, inode=st.st_ino, dev=st.st_dev)
    return rid, fd


def rmdir(d: Path) -> None:
    try:
        os.rmdir(d)
    except FileNotFoundError:
        pass


def scratch_hash(scratch: Path, digits: int) -> str:
    """The first `digits` hex digits of the SHA-256 of the scratch directory's path: names what belongs to one
    scratch directory outside it (log images in /dev/shm, cgroups)."""
    return hashlib.sha256(os.fsencode(str(scratch))).hexdigest()[:digits]


def shm_dir(scratch: Path) -> Path:
    """`/dev/shm/boatload-<hash of the scratch path>`: where this scratch's log images live."""
    return SHM / f"boatload-{scratch_hash(scratch, 16)}"


def own_private_dir(d: Path) -> bool:
    try:
        st = os.lstat(d)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def rmdir_if_empty(d: Path) -> bool:
    try:
        os.rmdir(d)
        return True
    except FileNotFoundError:
        return False
    except OSError as e:
        if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return False  # another run of this scratch still uses it
        raise


# --------------------------------------------------------------------------
# teardown


class Teardown(ExitStack):
    """The undo stack of what a run creates: contextlib.ExitStack, its steps
    run in reverse order on success, error, KeyboardInterrupt and Terminated,
    with signals held back (deferred_signals) while they run.

    Not ExitStack alone, because here a failing step is collected instead of
    raised: in ExitStack it would become the exception every later step and
    the caller see, replacing the KeyboardInterrupt or error that started the
    teardown; and a failed teardown names every step that failed. On the error
    path the failures are printed; on success they raise `error`."""

    def __init__(self, what: str, error: type[TargetError] = TargetError):
        super().__init__()
        self.what, self.error, self.errors = what, error, []

    def step(self, what: str, fn: Callable[[], object], release: tuple | None = None) -> None:
        """Undo with `fn`; then, if given a (ledger, id), mark that resource released in the ledger."""

        def run_step() -> None:
            try:
                fn()
                if release is not None:
                    ledger, rid = release
                    ledger.release(rid)
            except Exception as e:  # noqa: BLE001 - one failing step must not skip or replace the others
                self.errors.append(f"{what}: {e}")

        self.callback(run_step)

    def __exit__(self, *exc_info) -> bool:
        with deferred_signals():
            super().__exit__(*exc_info)  # the steps never raise
            if exc_info[0] is not None:
                for err in self.errors:
                    print(f"boatload: teardown of {self.what}: {err}", file=sys.stderr)
        if exc_info[0] is None and self.errors:
            raise self.error(f"teardown of {self.what} failed: " + "; ".join(self.errors))
        return False
