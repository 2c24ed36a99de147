"""What the worker's tests share: running the binary, listing a tree, a
loop-mounted file system that is always unmounted, the checks every phase
of a JSON document must pass."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run(worker: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(worker), *args], capture_output=True, text=True, timeout=timeout
    )


def tree_listing(root: Path) -> tuple[list[str], int, int]:
    """Sorted relative paths (dirs end with '/'), number of files, of dirs."""
    entries: list[str] = []
    files = dirs = 0
    for cur, dnames, fnames in os.walk(root):
        rel = Path(cur).relative_to(root)
        for d in dnames:
            entries.append(f"{(rel / d).as_posix()}/")
            dirs += 1
        for f in fnames:
            entries.append((rel / f).as_posix())
            files += 1
    return sorted(entries), files, dirs


def count_regular_files(root: Path) -> int:
    n = 0
    for cur, _dnames, fnames in os.walk(root):
        for f in fnames:
            if os.path.isfile(os.path.join(cur, f)) and not os.path.islink(os.path.join(cur, f)):
                n += 1
    return n


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def sh(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True)


SHM = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def file_sizes(root: Path) -> dict[str, int]:
    out = {}
    for cur, _dnames, fnames in os.walk(root):
        for f in fnames:
            p = Path(cur) / f
            out[p.relative_to(root).as_posix()] = p.lstat().st_size
    return out


def check_phase_common(ph: dict, bytes_in_intervals: bool = True) -> None:
    for k in ("ops", "dirs", "bytes", "existing"):
        assert isinstance(ph[k], int) and not isinstance(ph[k], bool), k
    for k in ("seconds", "ops_per_s", "mb_per_s", "cpu_user_s", "cpu_sys_s"):
        assert is_number(ph[k]) and ph[k] >= 0, k
    assert ph["latency_us"]["count"] == ph["ops"]
    iv = ph["intervals"]
    assert iv and sum(s["ops"] for s in iv) == ph["ops"]
    assert iv[-1]["t_s"] == pytest.approx(ph["seconds"], abs=1e-6)
    if bytes_in_intervals:
        assert sum(s["bytes"] for s in iv) == ph["bytes"]
        assert all(is_number(s["mb_per_s"]) for s in iv)


class Mounted:
    """mkfs + loop mount (or a ramfs) under tmp_path, always unmounted again."""

    def __init__(self, tmp_path: Path, fstype: str, size: str = "", mkfs: tuple[str, ...] = ()):
        self.tmp, self.fstype, self.size, self.mkfs = tmp_path, fstype, size, mkfs
        self.mnt = tmp_path / f"mnt-{fstype}"

    def __enter__(self) -> Path:
        if os.geteuid() != 0:
            pytest.skip("needs root to mount")
        self.mnt.mkdir()
        if self.fstype == "ramfs":
            m = sh("mount", "-t", "ramfs", "ramfs", str(self.mnt))
        else:
            if shutil.which(f"mkfs.{self.fstype}") is None:
                pytest.skip(f"mkfs.{self.fstype} not available")
            img = self.tmp / f"{self.fstype}.img"
            mk = sh(f"mkfs.{self.fstype}", "-q", *self.mkfs, "-F", str(img), self.size)
            assert mk.returncode == 0, mk.stderr
            m = sh("mount", "-o", "loop", str(img), str(self.mnt))
        if m.returncode != 0:
            pytest.skip(f"cannot mount {self.fstype} here: {m.stderr.strip()}")
        return self.mnt

    def __exit__(self, *exc) -> None:
        u = sh("umount", str(self.mnt))
        if u.returncode != 0:
            time.sleep(0.5)
            u = sh("umount", str(self.mnt))
        assert u.returncode == 0, f"could not unmount {self.mnt}: {u.stderr}"
        assert not os.path.ismount(self.mnt)


def data_listing(root: Path) -> list[tuple[str, int]]:
    """Sorted (relative path, size) of every regular file; directories as (path/, -1)."""
    out = []
    for cur, dnames, fnames in os.walk(root):
        rel = Path(cur).relative_to(root)
        out += [(f"{(rel / d).as_posix()}/", -1) for d in dnames]
        for f in fnames:
            st = (Path(cur) / f).lstat()
            assert stat.S_ISREG(st.st_mode)
            out.append(((rel / f).as_posix(), st.st_size))
    return sorted(out)


def listing_digest(root: Path, content: bool = False) -> str:
    h = hashlib.sha256()
    for path, size in data_listing(root):
        h.update(f"{path}\t{size}\n".encode())
        if content and size >= 0:
            h.update((root / path).read_bytes())
    return h.hexdigest()
