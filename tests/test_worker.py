"""Tests of the native measuring worker (native/build/boatload-worker).

They run the real binary: JSON shape and types, counts on disk, reproducible
random order, exit codes, ENOSPC on a tiny ext4 image (root only), SIGINT.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NATIVE = REPO / "native"
WORKER = NATIVE / "build" / "boatload-worker"


@pytest.fixture(scope="session")
def worker() -> Path:
    if not WORKER.exists():
        subprocess.run(["make", "-C", str(NATIVE)], check=True, capture_output=True)
    assert WORKER.exists(), "native/build/boatload-worker was not built"
    return WORKER


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


def test_version(worker):
    r = run(worker, "--version")
    assert r.returncode == 0
    assert r.stdout == "boatload-worker 0.1.0\n"


def test_json_shape_and_types(worker, tmp_path):
    r = run(worker, "tree", "--dir", str(tmp_path), "--shape", "4x250", "--threads", "2",
            "--interval", "0.05")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert set(doc) >= {"worker", "workload", "params", "status", "error", "phases"}

    w = doc["worker"]
    assert w["name"] == "boatload-worker" and w["version"] == "0.1.0"
    assert isinstance(w["cc"], str) and w["cc"]
    assert isinstance(w["cflags"], str) and "-O2" in w["cflags"]

    assert doc["workload"] == "tree"
    p = doc["params"]
    assert p["dir"] == str(tmp_path)
    assert p["shape"] == [4, 250]
    assert p["files"] == 1000 and p["dirs"] == 4
    assert p["threads"] == 2 and p["order"] == "sequential" and p["seed"] == 1
    assert p["fsync"] == "none" and p["allow_existing"] is False
    for k in ("files", "dirs", "threads", "seed"):
        assert isinstance(p[k], int) and not isinstance(p[k], bool)

    assert doc["status"] == "ok"
    assert doc["error"] is None
    assert isinstance(doc["phases"], list) and len(doc["phases"]) == 1
    ph = doc["phases"][0]
    assert ph["name"] == "create"
    for k in ("ops", "dirs", "bytes"):
        assert isinstance(ph[k], int) and not isinstance(ph[k], bool)
    assert ph["ops"] == 1000 and ph["dirs"] == 4 and ph["bytes"] == 0
    for k in ("seconds", "ops_per_s", "mb_per_s", "cpu_user_s", "cpu_sys_s"):
        assert is_number(ph[k]), k
        assert ph[k] >= 0, k
    assert ph["seconds"] > 0 and ph["ops_per_s"] > 0
    assert ph["ops_per_s"] == pytest.approx(ph["ops"] / ph["seconds"], rel=1e-6)

    lat = ph["latency_us"]
    assert lat["count"] == ph["ops"]
    for k in ("mean", "stddev", "p50", "p90", "p99", "p99_9", "max", "min"):
        assert is_number(lat[k]), k
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
    assert lat["min"] <= lat["mean"] <= lat["max"]

    iv = ph["intervals"]
    assert isinstance(iv, list) and len(iv) >= 1
    for s in iv:
        assert set(s) == {"t_s", "ops", "ops_per_s"}
        assert is_number(s["t_s"]) and isinstance(s["ops"], int) and is_number(s["ops_per_s"])
    assert sum(s["ops"] for s in iv) == ph["ops"]
    assert [s["t_s"] for s in iv] == sorted(s["t_s"] for s in iv)
    assert iv[-1]["t_s"] == pytest.approx(ph["seconds"], abs=1e-6)


@pytest.mark.parametrize("shape", ["25", "3x40", "2x3x7", "12x5"])
@pytest.mark.parametrize("threads", [1, 3])
def test_counts_on_disk_match_params(worker, tmp_path, shape, threads):
    r = run(worker, "tree", "--dir", str(tmp_path), "--shape", shape, "--threads", str(threads))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    _, files, dirs = tree_listing(tmp_path)
    assert files == doc["params"]["files"] == doc["phases"][0]["ops"]
    assert dirs == doc["params"]["dirs"] == doc["phases"][0]["dirs"]
    assert doc["phases"][0]["ops_per_s"] > 0


def test_names_are_zero_padded(worker, tmp_path):
    r = run(worker, "tree", "--dir", str(tmp_path), "--shape", "2x3")
    assert r.returncode == 0, r.stderr
    entries, _, _ = tree_listing(tmp_path)
    assert entries == [
        "d000/", "d000/f000000", "d000/f000001", "d000/f000002",
        "d001/", "d001/f000000", "d001/f000001", "d001/f000002",
    ]


def test_random_order_same_seed_identical_trees(worker, tmp_path):
    listings = []
    for i, seed in enumerate(["42", "42", "7"]):
        d = tmp_path / f"run{i}"
        d.mkdir()
        r = run(worker, "tree", "--dir", str(d), "--shape", "5x9x13", "--order", "random",
                "--seed", seed, "--threads", "2")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["params"]["order"] == "random" and doc["params"]["seed"] == int(seed)
        listings.append(tree_listing(d))
    assert listings[0] == listings[1]
    # a different seed changes the order, never the set of names
    assert listings[0] == listings[2]
    assert listings[0][1] == 5 * 9 * 13


BAD_INPUTS = [
    (["tree", "--dir", "{d}", "--shape", "10x1000", "--threads", "x"], "--threads"),
    (["tree", "--dir", "{d}", "--shape", "10x1000", "--threads", "0"], "--threads"),
    (["tree", "--dir", "{d}", "--shape", "10x1000", "--threads", "257"], "--threads"),
    (["tree", "--dir", "{d}", "--shape", "10x"], "--shape"),
    (["tree", "--dir", "{d}", "--shape", "0"], "--shape"),
    (["tree", "--dir", "{d}", "--shape", "10x1000", "--order", "backwards"], "--order"),
    (["tree", "--dir", "{d}", "--shape", "10x1000", "--fsync", "always"], "--fsync"),
    (["tree", "--dir", "{d}", "--shape", "10x1000", "--seed", "-3"], "--seed"),
    (["tree", "--dir", "{d}", "--shape", "10x1000", "--interval", "0"], "--interval"),
    (["tree", "--dir", "{d}", "--shape", "10x1000", "--frobnicate"], "--frobnicate"),
    (["tree", "--dir", "{d}", "--shape"], "--shape"),
    (["tree", "--shape", "10"], "--dir"),
    (["tree", "--dir", "{d}"], "--shape"),
    (["tree", "--dir", "{d}/missing", "--shape", "10"], "--dir"),
    (["nosuchworkload", "--dir", "{d}"], "nosuchworkload"),
]


@pytest.mark.parametrize("args,named", BAD_INPUTS, ids=[" ".join(a[0][3:]) or a[0][0] for a in BAD_INPUTS])
def test_bad_input_exit_2_names_argument(worker, tmp_path, args, named):
    r = run(worker, *[a.format(d=tmp_path) for a in args])
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("boatload-worker: ")
    assert named in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_not_a_directory_and_not_empty_exit_2(worker, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    r = run(worker, "tree", "--dir", str(f), "--shape", "3")
    assert r.returncode == 2 and "--dir" in r.stderr and len(r.stderr.splitlines()) == 1
    r = run(worker, "tree", "--dir", str(tmp_path), "--shape", "3")
    assert r.returncode == 2 and "not empty" in r.stderr and len(r.stderr.splitlines()) == 1
    r = run(worker, "tree", "--dir", str(tmp_path), "--shape", "3", "--allow-existing")
    assert r.returncode == 0
    assert json.loads(r.stdout)["params"]["allow_existing"] is True


def test_out_file_written_atomically(worker, tmp_path):
    d = tmp_path / "tree"
    d.mkdir()
    out = tmp_path / "res" / "rep1.json"
    out.parent.mkdir()
    r = run(worker, "tree", "--dir", str(d), "--shape", "3x30", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    doc = json.loads(out.read_text())
    assert doc["status"] == "ok" and doc["phases"][0]["ops"] == 90
    assert [p.name for p in out.parent.iterdir()] == ["rep1.json"]


def test_progress_lines(worker, tmp_path):
    r = run(worker, "tree", "--dir", str(tmp_path), "--shape", "50x1000", "--progress",
            "--interval", "0.01")
    assert r.returncode == 0
    lines = r.stderr.splitlines()
    assert lines, "no progress output"
    assert all(l.startswith("boatload-worker: create: ") and "files/s" in l for l in lines)
    assert "50000/50000" in lines[-1]


def _sh(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True)


@pytest.mark.root
@pytest.mark.parametrize("shape,threads", [("200", "1"), ("8x40", "2")])
def test_enospc_inode_exhaustion(worker, tmp_path, shape, threads):
    if os.geteuid() != 0:
        pytest.skip("needs root to loop-mount an ext4 image")
    if shutil.which("mkfs.ext4") is None or shutil.which("mount") is None:
        pytest.skip("mkfs.ext4/mount not available")
    img = tmp_path / "img"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mk = _sh("mkfs.ext4", "-q", "-N", "64", "-F", str(img), "4M")
    assert mk.returncode == 0, mk.stderr
    m = _sh("mount", "-o", "loop", str(img), str(mnt))
    if m.returncode != 0:
        pytest.skip(f"cannot loop-mount an image here: {m.stderr.strip()}")
    try:
        target = mnt / "t"
        target.mkdir()
        r = run(worker, "tree", "--dir", str(target), "--shape", shape, "--threads", threads)
        assert r.returncode == 1, r.stderr
        doc = json.loads(r.stdout)
        assert doc["status"] == "error"
        err = doc["error"]
        assert err["code"] == "ENOSPC" and err["errno"] == 28
        assert err["phase"] == "create" and isinstance(err["message"], str) and err["where"]
        ph = doc["phases"][0]
        assert ph["ops"] > 0
        assert ph["ops"] < doc["params"]["files"]
        assert ph["ops"] == count_regular_files(target)
        assert ph["latency_us"]["count"] == ph["ops"]
    finally:
        u = _sh("umount", str(mnt))
        if u.returncode != 0:
            time.sleep(0.5)
            u = _sh("umount", str(mnt))
        assert u.returncode == 0, f"could not unmount {mnt}: {u.stderr}"
        assert not os.path.ismount(mnt)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_gives_partial_json_and_exit_130(worker, tmp_path, sig):
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="boatload-sig.", dir=base or tmp_path))
    try:
        p = subprocess.Popen(
            # 1000 directories: made in milliseconds, so the signal lands in the create phase
            [str(worker), "tree", "--dir", str(d), "--shape", "1000x1000000", "--threads", "2",
             "--interval", "0.1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        time.sleep(0.4)
        assert p.poll() is None, "worker finished a billion files?"
        t0 = time.monotonic()
        p.send_signal(sig)
        out, err = p.communicate(timeout=20)
        stopped_in = time.monotonic() - t0
        assert p.returncode == 130, err
        assert stopped_in < 2.0
        doc = json.loads(out)
        assert doc["status"] == "interrupted"
        assert doc["error"] is None
        ph = doc["phases"][0]
        assert 0 < ph["ops"] < doc["params"]["files"]
        assert ph["ops"] == count_regular_files(d)
        assert ph["intervals"] and sum(s["ops"] for s in ph["intervals"]) == ph["ops"]
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- meta, seqio, randio ----------------------------------------------------

SHM = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@pytest.fixture
def shm_dir(tmp_path):
    """A fresh directory on tmpfs (/dev/shm) when there is one, else under tmp_path."""
    d = Path(tempfile.mkdtemp(prefix="boatload-test.", dir=SHM or tmp_path))
    yield d
    shutil.rmtree(d, ignore_errors=True)


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


def test_meta_create_only_files_and_sizes_on_disk(worker, tmp_path):
    r = run(worker, "meta", "--dir", str(tmp_path), "--files", "500", "--dirs", "9",
            "--size", "10:3000", "--phases", "create:seq", "--threads", "2", "--seed", "3")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["workload"] == "meta" and doc["status"] == "ok" and doc["error"] is None
    p = doc["params"]
    assert p["files"] == 500 and p["dirs"] == 9 and p["size_min"] == 10 and p["size_max"] == 3000
    assert p["phases"] == [{"name": "create", "order": "sequential"}]
    [ph] = doc["phases"]
    assert ph["name"] == "create" and ph["order"] == "sequential"
    assert ph["ops"] == 500 and ph["dirs"] == 9
    check_phase_common(ph)
    sizes = file_sizes(tmp_path)
    assert len(sizes) == 500 == count_regular_files(tmp_path)
    assert all(10 <= s <= 3000 for s in sizes.values())
    assert sum(sizes.values()) == ph["bytes"]
    assert len(set(sizes.values())) > 100  # really spread, not one size
    # names as tree's: 500 files over 9 dirs -> d000..d008, 56 or 55 files each
    entries, _, dirs = tree_listing(tmp_path)
    assert dirs == 9 and "d000/f000055" in entries and "d008/f000054" in entries
    assert "d008/f000055" not in entries


def test_meta_all_phases_ops_and_delete_empties(worker, shm_dir):
    r = run(worker, "meta", "--dir", str(shm_dir), "--files", "2000", "--dirs", "10",
            "--size", "1K", "--threads", "2", "--interval", "0.05")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    names = [(ph["name"], ph["order"]) for ph in doc["phases"]]
    assert names == [("create", "sequential"), ("open", "random"), ("stat", "random"),
                     ("read", "random"), ("delete", "sequential")]
    by = {ph["name"]: ph for ph in doc["phases"]}
    for ph in doc["phases"]:
        check_phase_common(ph)
        assert ph["ops"] == 2000, ph["name"]
    assert by["create"]["bytes"] == by["read"]["bytes"] == 2000 * 1024
    assert by["open"]["bytes"] == by["stat"]["bytes"] == by["delete"]["bytes"] == 0
    assert by["create"]["dirs"] == 10 and by["delete"]["dirs"] == 10
    assert list(shm_dir.iterdir()) == []


def test_meta_same_seed_same_sizes(worker, tmp_path):
    runs = {}
    for name, seed, threads in [("a", "11", "1"), ("b", "11", "3"), ("c", "12", "1")]:
        d = tmp_path / name
        d.mkdir()
        r = run(worker, "meta", "--dir", str(d), "--files", "300", "--dirs", "4",
                "--size", "0:250000", "--phases", "create:rand", "--seed", seed, "--threads", threads)
        assert r.returncode == 0, r.stderr
        runs[name] = file_sizes(d)
    assert runs["a"] == runs["b"]  # same seed: same sizes, whatever the threads
    assert runs["a"].keys() == runs["c"].keys()
    assert runs["a"] != runs["c"]  # another seed: other sizes
    assert all(0 <= s <= 250000 for s in runs["c"].values())


def test_meta_phases_on_existing_tree(worker, shm_dir):
    r = run(worker, "meta", "--dir", str(shm_dir), "--files", "400", "--dirs", "0",
            "--size", "100:200", "--phases", "create")
    assert r.returncode == 0, r.stderr
    r = run(worker, "meta", "--dir", str(shm_dir), "--files", "400", "--dirs", "0", "--allow-existing",
            "--phases", "stat:rand,open:seq,read:rand,delete:rand", "--threads", "3")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [ph["ops"] for ph in doc["phases"]] == [400, 400, 400, 400]
    assert 400 * 100 <= doc["phases"][2]["bytes"] <= 400 * 200
    assert list(shm_dir.iterdir()) == []


def test_seqio_write_then_read_16mib(worker, shm_dir):
    size = 16 * 1024 * 1024
    r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "dd", "--size", "16M",
            "--block", "1M", "--mode", "write", "--runs", "2")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["workload"] == "seqio" and doc["status"] == "ok"
    p = doc["params"]
    assert p["size"] == size and p["block"] == 1 << 20 and p["fsync_end"] is True and p["direct"] is False
    assert [(ph["name"], ph["run"]) for ph in doc["phases"]] == [("write", 0), ("write", 1)]
    for ph in doc["phases"]:
        check_phase_common(ph)
        assert ph["bytes"] == size and ph["ops"] == 16 and ph["mb_per_s"] > 0
        assert ph["mb_per_s"] == pytest.approx(size / 1e6 / ph["seconds"], rel=1e-6)
    assert (shm_dir / "dd").stat().st_size == size
    r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "dd", "--block", "256K", "--mode", "read")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    [ph] = doc["phases"]
    assert ph["name"] == "read" and ph["run"] == 0 and ph["bytes"] == size and ph["ops"] == 64
    assert doc["params"]["fsync_end"] is False


@pytest.mark.parametrize("args,named", [
    (["--size", "16M", "--block", "1000", "--mode", "write", "--direct"], "--block"),
    (["--size", "16M", "--block", "4100", "--mode", "write", "--direct"], "--block"),
    (["--size", "1000", "--block", "4K", "--mode", "write", "--direct"], "--size"),
    (["--size", "16M", "--block", "1M", "--mode", "write", "--runs", "0"], "--runs"),
    (["--size", "16M", "--block", "3X", "--mode", "write"], "--block"),
    (["--block", "1M", "--mode", "write"], "--size"),
    (["--size", "1M", "--block", "1M", "--mode", "append"], "--mode"),
    (["--block", "1M", "--mode", "read"], "--file"),  # nothing to read
])
def test_seqio_bad_arguments_exit_2(worker, tmp_path, args, named):
    r = run(worker, "seqio", "--dir", str(tmp_path), "--file", "dd", *args)
    assert r.returncode == 2 and r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith("boatload-worker: ") and named in line
    assert list(tmp_path.iterdir()) == []


def _kernel_allows_odirect(d: Path) -> bool:
    p = d / ".odirect-probe"
    try:
        fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o644)
    except OSError:
        return False
    finally:
        if p.exists():
            p.unlink()
    os.close(fd)
    return True


@pytest.mark.skipif(SHM is None, reason="no tmpfs at /dev/shm")
def test_seqio_direct_on_tmpfs_works_or_exit_2(worker, shm_dir):
    """tmpfs has accepted O_DIRECT since Linux 6.6; before that open() fails with
    EINVAL and the worker says so on one line and exits 2, leaving no file."""
    r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "dd", "--size", "4M",
            "--block", "1M", "--mode", "write", "--direct")
    if _kernel_allows_odirect(shm_dir):
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["phases"][0]["bytes"] == 4 << 20
    else:
        assert r.returncode == 2 and r.stdout == ""
        assert "--direct" in r.stderr and "O_DIRECT" in r.stderr
        assert list(shm_dir.iterdir()) == []


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
            m = _sh("mount", "-t", "ramfs", "ramfs", str(self.mnt))
        else:
            if shutil.which(f"mkfs.{self.fstype}") is None:
                pytest.skip(f"mkfs.{self.fstype} not available")
            img = self.tmp / f"{self.fstype}.img"
            mk = _sh(f"mkfs.{self.fstype}", "-q", *self.mkfs, "-F", str(img), self.size)
            assert mk.returncode == 0, mk.stderr
            m = _sh("mount", "-o", "loop", str(img), str(self.mnt))
        if m.returncode != 0:
            pytest.skip(f"cannot mount {self.fstype} here: {m.stderr.strip()}")
        return self.mnt

    def __exit__(self, *exc) -> None:
        u = _sh("umount", str(self.mnt))
        if u.returncode != 0:
            time.sleep(0.5)
            u = _sh("umount", str(self.mnt))
        assert u.returncode == 0, f"could not unmount {self.mnt}: {u.stderr}"
        assert not os.path.ismount(self.mnt)


@pytest.mark.root
def test_seqio_and_randio_direct_on_ext4_loop(worker, tmp_path):
    size = 16 * 1024 * 1024
    with Mounted(tmp_path, "ext4", "64M") as mnt:
        r = run(worker, "seqio", "--dir", str(mnt), "--file", "dd", "--size", "16M",
                "--block", "1M", "--mode", "write", "--direct")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        p = doc["params"]
        assert p["direct"] is True and p["fsync_end"] is False and p["dio_align"] in (512, 1024, 2048, 4096)
        assert doc["phases"][0]["bytes"] == size
        assert (mnt / "dd").stat().st_size == size
        r = run(worker, "seqio", "--dir", str(mnt), "--file", "dd", "--block", "1M",
                "--mode", "read", "--direct")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["phases"][0]["bytes"] == size
        r = run(worker, "randio", "--dir", str(mnt), "--files", "2", "--file-size", "4M",
                "--xfer", "8K", "--read-pct", "70", "--duration", "0.3", "--threads", "4", "--direct")
        assert r.returncode == 0, r.stderr
        io = json.loads(r.stdout)["phases"][1]
        assert io["name"] == "io" and io["ops"] > 0 and io["ops"] == io["reads"]["ops"] + io["writes"]["ops"]


@pytest.mark.root
def test_direct_without_odirect_support_exit_2(worker, tmp_path):
    """ramfs never supports O_DIRECT: one line naming --direct, exit 2, no file left."""
    with Mounted(tmp_path, "ramfs") as mnt:
        r = run(worker, "seqio", "--dir", str(mnt), "--file", "dd", "--size", "4M",
                "--block", "1M", "--mode", "write", "--direct")
        assert r.returncode == 2 and r.stdout == ""
        [line] = r.stderr.splitlines()
        assert "--direct" in line and "does not support O_DIRECT" in line
        r = run(worker, "randio", "--dir", str(mnt), "--files", "2", "--file-size", "1M",
                "--xfer", "4K", "--read-pct", "50", "--duration", "0.1", "--direct")
        assert r.returncode == 2 and "--direct" in r.stderr
        assert list(mnt.iterdir()) == []


def _randio(worker, d: Path, *extra: str) -> dict:
    r = run(worker, "randio", "--dir", str(d), "--files", "4", "--file-size", "8M", "--xfer", "4K",
            *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_randio_read_share_counts_and_intervals(worker, shm_dir):
    threads = str(min(16, max(4, 4 * (os.cpu_count() or 1))))
    for duration in ("0.5", "1.5", "4"):
        doc = _randio(worker, shm_dir, "--read-pct", "70", "--duration", duration,
                      "--threads", threads, "--interval", "0.1", "--seed", "9")
        io = doc["phases"][1]
        if io["ops"] >= 100_000:
            break
    assert io["ops"] >= 100_000, "too slow to reach 100,000 ops"
    assert doc["workload"] == "randio" and doc["status"] == "ok"
    prep, io = doc["phases"]
    assert prep["name"] == "prepare" and io["name"] == "io"
    assert prep["ops"] + prep["existing"] == 4
    assert prep["latency_us"]["count"] == prep["ops"]
    rd, wr = io["reads"], io["writes"]
    assert io["ops"] == rd["ops"] + wr["ops"]
    assert io["bytes"] == rd["bytes"] + wr["bytes"] == io["ops"] * 4096
    assert rd["latency_us"]["count"] == rd["ops"] and wr["latency_us"]["count"] == wr["ops"]
    assert io["latency_us"]["count"] == io["ops"]
    share = rd["ops"] / io["ops"]
    assert abs(share / 0.70 - 1) <= 0.01, f"read share {share:.4f}"
    check_phase_common(io)
    iv = io["intervals"]
    assert len(iv) >= 4
    for s in iv:
        assert {"t_s", "ops", "ops_per_s", "bytes", "mb_per_s", "read_ops", "read_ops_per_s",
                "write_ops", "write_ops_per_s"} <= set(s)
        assert s["ops"] == s["read_ops"] + s["write_ops"]
    assert sum(s["read_ops"] for s in iv) == rd["ops"]
    assert float(doc["params"]["duration_s"]) <= io["seconds"] < float(doc["params"]["duration_s"]) + 1
    for f in range(4):
        assert (shm_dir / f"f{f:03d}").stat().st_size == 8 << 20


def test_randio_prepare_creates_extends_and_skips(worker, shm_dir):
    _randio(worker, shm_dir, "--prepare")  # f000..f003 of 8 MiB
    os.truncate(shm_dir / "f001", 1000)
    r = run(worker, "randio", "--dir", str(shm_dir), "--files", "6", "--file-size", "8M", "--prepare")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["params"]["prepare_only"] is True
    [prep] = doc["phases"]
    assert prep["name"] == "prepare"
    assert prep["ops"] == 3 and prep["existing"] == 3  # f001 extended, f004 f005 made
    assert prep["bytes"] == 2 * (8 << 20) + (8 << 20) - 1000
    check_phase_common(prep)
    assert sorted(p.name for p in shm_dir.iterdir()) == [f"f{i:03d}" for i in range(6)]
    assert all(p.stat().st_size == 8 << 20 for p in shm_dir.iterdir())
    with open(shm_dir / "f004", "rb") as f:
        assert 0 not in f.read(1 << 16)  # filled with non-zero bytes


def test_randio_pure_reads_and_writes(worker, shm_dir):
    for pct, want_reads in (("100", True), ("0", False)):
        io = _randio(worker, shm_dir, "--read-pct", pct, "--duration", "0.1", "--threads", "2")["phases"][1]
        assert io["ops"] > 0
        assert (io["reads"]["ops"] == io["ops"]) is want_reads
        assert (io["writes"]["ops"] == io["ops"]) is not want_reads


@pytest.mark.root
@pytest.mark.parametrize("what,mkfs,size", [("inodes", ("-N", "64"), "0"), ("blocks", (), "64K")])
def test_meta_enospc_exit_1(worker, tmp_path, what, mkfs, size):
    with Mounted(tmp_path, "ext4", "4M", mkfs) as mnt:
        target = mnt / "t"
        target.mkdir()
        r = run(worker, "meta", "--dir", str(target), "--files", "300", "--dirs", "3",
                "--size", size, "--threads", "2")
        assert r.returncode == 1, r.stderr
        doc = json.loads(r.stdout)
        assert doc["status"] == "error"
        err = doc["error"]
        assert err["code"] == "ENOSPC" and err["errno"] == 28 and err["phase"] == "create"
        assert err["where"].startswith("d00")
        [ph] = doc["phases"]  # later phases never ran
        assert 0 < ph["ops"] < 300
        assert ph["ops"] == count_regular_files(target)
        shutil.rmtree(target)


@pytest.mark.parametrize("argv", [
    ["meta", "--files", "5000000", "--dirs", "100", "--threads", "2"],
    ["randio", "--files", "2", "--file-size", "4M", "--xfer", "4K", "--read-pct", "50",
     "--duration", "100", "--threads", "2"],
    ["seqio", "--file", "x", "--size", "16G", "--block", "1M", "--mode", "write"],
], ids=["meta", "randio", "seqio"])
def test_new_workloads_sigint_partial_json_130(worker, shm_dir, argv):
    p = subprocess.Popen([str(worker), argv[0], "--dir", str(shm_dir), *argv[1:]],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    assert p.poll() is None
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    doc = json.loads(out)
    assert doc["status"] == "interrupted" and doc["error"] is None
    assert doc["phases"][-1]["ops"] > 0


NEW_BAD_INPUTS = [
    (["meta", "--dir", "{d}", "--files", "10"], "--dirs"),
    (["meta", "--dir", "{d}", "--files", "10", "--dirs", "20"], "--dirs"),
    (["meta", "--dir", "{d}", "--files", "x", "--dirs", "1"], "--files"),
    (["meta", "--dir", "{d}", "--files", "10", "--dirs", "1", "--size", "5:1"], "--size"),
    (["meta", "--dir", "{d}", "--files", "10", "--dirs", "1", "--phases", "open:sideways"], "--phases"),
    (["meta", "--dir", "{d}", "--files", "10", "--dirs", "1", "--content", "ones"], "--content"),
    (["randio", "--dir", "{d}", "--files", "1", "--file-size", "1M", "--xfer", "4K",
      "--read-pct", "70"], "--duration"),
    (["randio", "--dir", "{d}", "--files", "1", "--file-size", "1M", "--xfer", "4K",
      "--read-pct", "-1", "--duration", "1"], "--read-pct"),
    (["randio", "--dir", "{d}", "--files", "1", "--file-size", "1M", "--xfer", "4K",
      "--read-pct", "70", "--duration", "1", "--threads", "0"], "--threads"),
    (["randio", "--dir", "{d}", "--files", "1", "--file-size", "4K", "--xfer", "8K",
      "--read-pct", "70", "--duration", "1"], "--xfer"),
    (["randio", "--dir", "{d}", "--files", "1", "--file-size", "1M", "--xfer", "1000",
      "--read-pct", "70", "--duration", "1", "--direct"], "--xfer"),
]


@pytest.mark.parametrize("args,named", NEW_BAD_INPUTS, ids=[f"{a[0][0]}-{a[1]}-{i}" for i, a in enumerate(NEW_BAD_INPUTS)])
def test_new_workloads_bad_input_exit_2(worker, tmp_path, args, named):
    r = run(worker, *[a.format(d=tmp_path) for a in args])
    assert r.returncode == 2 and r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith("boatload-worker: ") and named in line
    assert list(tmp_path.iterdir()) == []


# ---- tree: random layout, file sizes and content ----------------------------

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


def _tree(worker, d: Path, *args: str) -> dict:
    r = run(worker, "tree", "--dir", str(d), *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_tree_random_layout_5000_files_sizes_and_bytes(worker, shm_dir):
    doc = _tree(worker, shm_dir, "--layout", "random", "--files", "5000", "--size", "0:6552",
                "--size-align", "8", "--content", "random", "--threads", "2", "--seed", "3",
                "--interval", "0.05")
    assert doc["workload"] == "tree" and doc["status"] == "ok" and doc["error"] is None
    p = doc["params"]
    assert p["layout"] == "random" and p["shape"] is None
    assert p["files"] == 5000 and p["max_depth"] == 4 and p["files_per_dir_max"] == 16383
    assert (p["size_min"], p["size_max"], p["size_align"], p["content"]) == (0, 6552, 8, "random")
    assert 1 <= p["depth"] <= 4 and 1 <= p["leaf_dirs"] <= p["dirs"]
    [ph] = doc["phases"]
    check_phase_common(ph)
    assert ph["ops"] == 5000 and ph["existing"] == 0
    listing = data_listing(shm_dir)
    files = [(f, s) for f, s in listing if s >= 0]
    dirs = [f for f, s in listing if s < 0]
    assert len(files) == 5000 == count_regular_files(shm_dir)
    assert len(dirs) == p["dirs"] == ph["dirs"]
    assert all(0 <= s <= 6552 and s % 8 == 0 for _, s in files)
    assert len({s for _, s in files}) > 500  # really spread over the 820 sizes
    assert sum(s for _, s in files) == ph["bytes"]
    assert ph["mb_per_s"] == pytest.approx(ph["bytes"] / 1e6 / ph["seconds"], rel=1e-6)
    assert max(f.count("/") for f, _ in files) <= 4  # files sit in directories of depth 1..4
    assert all(f.count("/") >= 1 for f, _ in files)  # none directly in DIR
    # mktemp-like directory names, tree-like file names
    assert all(len(Path(d).name) == 10 and Path(d).name.isalnum() for d in dirs)
    assert all(Path(f).name.startswith("f") and len(Path(f).name) == 7 for f, _ in files)


def test_tree_random_layout_same_seed_same_tree(worker, tmp_path):
    digests, listings = [], []
    for i, (seed, extra) in enumerate([("42", ["--threads", "1"]),
                                       ("42", ["--threads", "3", "--order", "random"]),
                                       ("43", ["--threads", "1"])]):
        d = tmp_path / f"run{i}"
        d.mkdir()
        doc = _tree(worker, d, "--layout", "random", "--files", "4000", "--files-per-dir-max", "400",
                    "--max-depth", "3", "--size", "0:6552", "--size-align", "8", "--content", "random",
                    "--seed", seed, *extra)
        assert doc["phases"][0]["ops"] == 4000 and doc["phases"][0]["existing"] == 0
        listings.append(data_listing(d))
        digests.append(listing_digest(d, content=True))
    assert listings[0] == listings[1] and digests[0] == digests[1]  # byte-identical trees
    assert listings[0] != listings[2] and digests[0] != digests[2]
    assert {f for f, _ in listings[0]} != {f for f, _ in listings[2]}  # other names too


def test_tree_content_random_and_zero(worker, shm_dir):
    rnd, zero = shm_dir / "rnd", shm_dir / "zero"
    rnd.mkdir()
    zero.mkdir()
    doc = _tree(worker, rnd, "--layout", "random", "--files", "200", "--size", "1K:8K",
                "--content", "random")
    total = 0
    for f, s in data_listing(rnd):
        if s > 0:
            data = (rnd / f).read_bytes()
            assert len(data) == s and data.count(0) < len(data) // 2, f
            total += s
    assert total == doc["phases"][0]["bytes"] > 0
    doc = _tree(worker, zero, "--shape", "4x25", "--size", "bonnie:6552:1", "--content", "zero")
    assert doc["params"]["layout"] == "fixed" and doc["params"]["shape"] == [4, 25]
    assert (doc["params"]["size_min"], doc["params"]["size_max"]) == (1, 6552)
    sizes = file_sizes(zero)
    assert len(sizes) == 100 and all(1 <= s <= 6552 for s in sizes.values())
    assert sum(sizes.values()) == doc["phases"][0]["bytes"]
    for f in sizes:
        assert not (zero / f).read_bytes().strip(b"\0"), f  # written, and all zeros


def test_tree_default_json_unchanged_plus_new_params(worker, tmp_path):
    doc = _tree(worker, tmp_path, "--shape", "2x10")
    p, ph = doc["params"], doc["phases"][0]
    assert p["layout"] == "fixed" and p["size_min"] == p["size_max"] == 0 and p["content"] == "zero"
    assert p["max_depth"] is None and p["files_per_dir_max"] is None and p["depth"] == 1
    assert ph["bytes"] == 0 and ph["mb_per_s"] == 0
    assert set(ph["intervals"][0]) == {"t_s", "ops", "ops_per_s"}  # no bytes for empty files
    assert all(s == 0 for s in file_sizes(tmp_path).values())


@pytest.mark.parametrize("shape,threads", [("7x13x11", "2"), ("3x1000", "4"), ("500", "3"), ("2x2x2x9", "1")])
def test_tree_fixed_random_order_visits_every_file_once(worker, tmp_path, shape, threads):
    seq, rnd = tmp_path / "seq", tmp_path / "rnd"
    seq.mkdir()
    rnd.mkdir()
    _tree(worker, seq, "--shape", shape)
    doc = _tree(worker, rnd, "--shape", shape, "--order", "random", "--seed", "1234",
                "--threads", threads)
    ph = doc["phases"][0]
    files = doc["params"]["files"]
    # each file created exactly once: no EEXIST (that would be exit 1), none skipped
    assert doc["status"] == "ok" and ph["ops"] == files and ph["existing"] == 0
    assert ph["latency_us"]["count"] == files
    assert tree_listing(rnd) == tree_listing(seq)
    assert tree_listing(rnd)[1] == files


TREE_NEW_BAD_INPUTS = [
    (["--layout", "random"], "--files"),
    (["--layout", "random", "--max-depth", "3"], "--files"),
    (["--layout", "random", "--files", "0"], "--files"),
    (["--layout", "random", "--files", "100", "--shape", "10"], "--shape"),
    (["--layout", "random", "--files", "100", "--max-depth", "17"], "--max-depth"),
    (["--layout", "random", "--files", "100", "--files-per-dir-max", "0"], "--files-per-dir-max"),
    (["--layout", "upside-down", "--files", "100"], "--layout"),
    (["--shape", "10", "--files", "100"], "--files"),
    (["--shape", "10", "--size", "5:1"], "--size"),
    (["--shape", "10", "--size", "2G"], "--size"),
    (["--shape", "10", "--size", "abc"], "--size"),
    (["--shape", "10", "--size", "1:2:3"], "--size"),
    (["--shape", "10", "--size", "bonnie"], "--size"),
    (["--layout", "random", "--files", "100", "--size", "-1"], "--size"),
    (["--shape", "10", "--size", "100", "--size-align", "8"], "--size-align"),
    (["--shape", "10", "--size-align", "x"], "--size-align"),
    (["--shape", "10", "--content", "urandom"], "--content"),
    (["--shape", "10", "--create-call", "creat"], "--create-call"),
    (["--shape", "10", "--create-call", "mknod", "--size", "1"], "--create-call"),
    (["--shape", "10", "--create-call", "mknod", "--fsync", "file"], "--create-call"),
]


@pytest.mark.parametrize("args,named", TREE_NEW_BAD_INPUTS,
                         ids=[f"{a[1]}-{i}" for i, a in enumerate(TREE_NEW_BAD_INPUTS)])
def test_tree_new_options_bad_input_exit_2(worker, tmp_path, args, named):
    r = run(worker, "tree", "--dir", str(tmp_path), *args)
    assert r.returncode == 2 and r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith("boatload-worker: ") and named in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args,size,call", [
    ((), "0", "mknod"),                          # empty files, no fsync: one mknodat each
    (("--create-call", "open"), "0", "open"),
    (("--size", "100"), "100", "open"),          # bytes need an fd
    (("--fsync", "file"), "0", "open"),
    (("--create-call", "mknod", "--threads", "3", "--order", "random"), "0", "mknod"),
])
def test_tree_create_call_makes_the_same_files(worker, tmp_path, args, size, call):
    ref, d = tmp_path / "ref", tmp_path / "d"
    ref.mkdir()
    d.mkdir()
    _tree(worker, ref, "--shape", "4x25", "--create-call", "open", "--size", size)
    doc = _tree(worker, d, "--shape", "4x25", *args)
    assert doc["params"]["create_call"] == call
    assert doc["phases"][0]["ops"] == 100 and doc["phases"][0]["latency_us"]["count"] == 100
    assert tree_listing(d) == tree_listing(ref)
    assert file_sizes(d) == file_sizes(ref)
    for f in (d / "d000").iterdir():
        st = f.lstat()
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644 & ~_umask()


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


@pytest.mark.parametrize("call", ["mknod", "open"])
def test_tree_planted_file_symlink_never_followed(worker, tmp_path, call):
    d, elsewhere = tmp_path / "d", tmp_path / "elsewhere"
    d.mkdir()
    elsewhere.mkdir()
    (d / "f000002").symlink_to(elsewhere / "victim")
    doc = _tree(worker, d, "--shape", "5", "--allow-existing", "--create-call", call)
    assert doc["phases"][0]["ops"] == 4 and doc["phases"][0]["existing"] == 1
    assert not (elsewhere / "victim").exists()
    r = run(worker, "tree", "--dir", str(d / "again"), "--shape", "1")  # missing dir: exit 2
    assert r.returncode == 2


def _limit_nofile(n: int):
    import resource
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


@pytest.mark.parametrize("nofile,fds", [(None, "per-thread"), (300, "shared")])
def test_randio_fds_per_thread_unless_the_limit_is_too_low(worker, shm_dir, nofile, fds):
    # 10 files x 64 threads = 640 fds: per thread normally, one shared set under a limit of 300
    r = subprocess.run([str(worker), "randio", "--dir", str(shm_dir), "--files", "10", "--file-size", "64K",
                        "--xfer", "4K", "--read-pct", "50", "--duration", "0.2", "--threads", "64"],
                       capture_output=True, text=True, timeout=60,
                       preexec_fn=_limit_nofile(nofile) if nofile else None)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["params"]["fds"] == fds
    io = doc["phases"][1]
    assert io["ops"] > 0 and io["ops"] == io["reads"]["ops"] + io["writes"]["ops"]


# ---- work split by directory, directory phases (issue 18) -------------------


def tree_indices(names: list[str]) -> list[tuple[int, ...]]:
    """The per-level indices of tree's file paths (d003/f000012 -> (3, 12))."""
    return [tuple(int(part[1:]) for part in n.split("/")) for n in names if not n.endswith("/")]


def check_split(split: dict, ndirs: int, files_per_dir: list[int], threads: int) -> None:
    """The reported shares: whole, contiguous directories when ndirs >= threads (each thread at
    least one), else each thread inside one directory whose files its chunks share."""
    shares = split["threads"]
    assert len(shares) == threads
    assert sum(s["files"] for s in shares) == sum(files_per_dir)
    if ndirs >= threads:
        assert split["by"] == "dirs"
        nxt = 0
        for s in shares:
            assert s["first_dir"] == nxt and s["dirs"] >= 1
            assert s["files"] == sum(files_per_dir[s["first_dir"]:s["first_dir"] + s["dirs"]])
            nxt += s["dirs"]
        assert nxt == ndirs
    else:
        assert split["by"] == "files"
        assert all(s["dirs"] == 1 for s in shares)
        for d in range(ndirs):
            assert sum(s["files"] for s in shares if s["first_dir"] == d) == files_per_dir[d]


@pytest.mark.parametrize("order", ["sequential", "random"])
@pytest.mark.parametrize("shape,threads", [("4x50", 2), ("1x50", 2), ("3x2x7", 4), ("50", 3)],
                         ids=["4dirs-2threads", "1dir-2threads", "6dirs-4threads", "nodirs-3threads"])
def test_tree_split_by_directory_every_file_once(worker, shm_dir, shape, threads, order):
    fans = [int(x) for x in shape.split("x")]
    files, leaves = 1, 1
    for n in fans:
        files *= n
    for n in fans[:-1]:
        leaves *= n
    dirs = sum(math.prod(fans[:k + 1]) for k in range(len(fans) - 1))
    r = run(worker, "tree", "--dir", str(shm_dir), "--shape", shape, "--threads", str(threads),
            "--order", order)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    names, nfiles, ndirs = tree_listing(shm_dir)
    assert nfiles == files and ndirs == dirs
    got = tree_indices(names)
    assert len(got) == len(set(got)) == files
    assert set(got) == set(itertools.product(*(range(n) for n in fans)))
    [ph] = doc["phases"]
    assert ph["name"] == "create" and ph["ops"] == files and ph["dirs"] == dirs and ph["existing"] == 0
    assert len(ph["thread_ops"]) == threads and sum(ph["thread_ops"]) == files
    split = doc["params"]["split"]
    check_split(split, leaves, [fans[-1]] * leaves, threads)
    assert ph["thread_ops"] == [s["files"] for s in split["threads"]]
    if dirs:
        [dp] = doc["dir_phases"]
        assert dp["name"] == "mkdir" and dp["phase"] == 0 and dp["dirs"] == dirs and dp["existing"] == 0
        assert is_number(dp["seconds"]) and dp["seconds"] > 0 and dp["dirs_per_s"] > 0
    else:
        assert doc["dir_phases"] == []


def test_tree_random_layout_split_by_directory(worker, shm_dir):
    r = run(worker, "tree", "--dir", str(shm_dir), "--layout", "random", "--files", "3000",
            "--files-per-dir-max", "100", "--threads", "2", "--order", "random")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    _names, nfiles, ndirs = tree_listing(shm_dir)
    [ph] = doc["phases"]
    assert nfiles == ph["ops"] == 3000 and ndirs == ph["dirs"] == doc["params"]["dirs"]
    assert doc["dir_phases"][0]["dirs"] == ndirs
    split = doc["params"]["split"]
    assert split["by"] == "dirs" and sum(s["dirs"] for s in split["threads"]) == ndirs
    assert ph["thread_ops"] == [s["files"] for s in split["threads"]]


META_PHASES_NO_DELETE = ["create", "stat", "read", "open"]


@pytest.mark.parametrize("order", ["seq", "rand"])
@pytest.mark.parametrize("files,dirs,threads", [(200, 4, 2), (200, 1, 2), (201, 3, 2), (200, 0, 2), (90, 2, 3)],
                         ids=["4dirs-2threads", "1dir-2threads", "3dirs-2threads", "nodirs-2threads",
                              "2dirs-3threads"])
def test_meta_split_by_directory_every_file_once(worker, shm_dir, files, dirs, threads, order):
    base = ["meta", "--dir", str(shm_dir), "--files", str(files), "--dirs", str(dirs),
            "--threads", str(threads), "--size", "1:64"]
    per = [files // dirs + (1 if d < files % dirs else 0) for d in range(dirs)] if dirs else [files]
    r = run(worker, *base, "--phases", ",".join(f"{p}:{order}" for p in META_PHASES_NO_DELETE))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "ok"
    # on disk: exactly the files of the layout, each once
    names, nfiles, ndirs = tree_listing(shm_dir)
    assert nfiles == files and ndirs == dirs
    got = tree_indices(names)
    assert len(got) == len(set(got)) == files
    if dirs:
        assert set(got) == {(d, i) for d in range(dirs) for i in range(per[d])}
    else:
        assert set(got) == {(i,) for i in range(files)}
    split = doc["params"]["split"]
    check_split(split, max(dirs, 1), per, threads)
    assert [ph["name"] for ph in doc["phases"]] == META_PHASES_NO_DELETE
    for ph in doc["phases"]:
        assert ph["ops"] == files and ph["existing"] == 0, ph["name"]
        assert ph["thread_ops"] == [s["files"] for s in split["threads"]], ph["name"]
        check_phase_common(ph)
    assert doc["phases"][0]["dirs"] == dirs and all(ph["dirs"] == 0 for ph in doc["phases"][1:])
    assert doc["phases"][2]["bytes"] == sum(file_sizes(shm_dir).values())  # read: every byte once
    if dirs:
        [dp] = doc["dir_phases"]
        assert (dp["name"], dp["phase"], dp["dirs"], dp["existing"]) == ("mkdir", 0, dirs, 0)
    else:
        assert doc["dir_phases"] == []

    # delete on the tree just made: every file once, then the directories in their own phase
    r = run(worker, *base, "--allow-existing", "--phases", f"delete:{order}")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    [ph] = doc["phases"]
    assert ph["ops"] == files and ph["dirs"] == dirs
    assert ph["thread_ops"] == [s["files"] for s in split["threads"]]
    assert list(shm_dir.iterdir()) == []
    if dirs:
        [dp] = doc["dir_phases"]
        assert (dp["name"], dp["phase"], dp["dirs"]) == ("rmdir", 0, dirs)
    else:
        assert doc["dir_phases"] == []


def test_meta_dir_phases_around_repeated_phases(worker, shm_dir):
    r = run(worker, "meta", "--dir", str(shm_dir), "--files", "300", "--dirs", "6", "--threads", "2",
            "--allow-existing", "--phases", "create,create:rand,stat,delete:rand,create,delete")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(p["name"], p["ops"], p["existing"], p["dirs"]) for p in doc["phases"]] == [
        ("create", 300, 0, 6), ("create", 0, 300, 0), ("stat", 300, 0, 0), ("delete", 300, 0, 6),
        ("create", 300, 0, 6), ("delete", 300, 0, 6)]
    assert [(p["name"], p["phase"], p["dirs"], p["existing"]) for p in doc["dir_phases"]] == [
        ("mkdir", 0, 6, 0), ("mkdir", 1, 0, 6), ("rmdir", 3, 6, 0), ("mkdir", 4, 6, 0), ("rmdir", 5, 6, 0)]
    for p in doc["dir_phases"]:
        assert set(p) == {"name", "phase", "dirs", "existing", "seconds", "dirs_per_s", "cpu_user_s",
                          "cpu_sys_s"}
    assert list(shm_dir.iterdir()) == []


def test_meta_mkdir_failure_reported_in_its_phase(worker, shm_dir):
    (shm_dir / "d001").write_text("in the way")
    r = run(worker, "meta", "--dir", str(shm_dir), "--files", "40", "--dirs", "4", "--allow-existing",
            "--phases", "create,stat")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "error"
    assert doc["error"]["phase"] == "mkdir" and doc["error"]["code"] == "ENOTDIR"
    assert doc["error"]["where"] == "d001"
    # the create phase did not start: it is there, empty, with the error
    [ph] = doc["phases"]
    assert ph["name"] == "create" and ph["ops"] == 0
    assert [p["name"] for p in doc["dir_phases"]] == ["mkdir"]
    assert count_regular_files(shm_dir) == 1


def test_tree_signal_during_mkdir_phase(worker, shm_dir):
    p = subprocess.Popen(
        [str(worker), "tree", "--dir", str(shm_dir), "--shape", "1000x1000x1000", "--threads", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    time.sleep(0.2)
    assert p.poll() is None, "worker made a million directories in 0.2 s?"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    doc = json.loads(out)
    assert doc["status"] == "interrupted" and doc["error"] is None
    [dp] = doc["dir_phases"]
    _names, nfiles, ndirs = tree_listing(shm_dir)
    assert dp["name"] == "mkdir" and 0 < dp["dirs"] == ndirs < doc["params"]["dirs"]
    [ph] = doc["phases"]
    assert ph["name"] == "create" and ph["ops"] == 0 and nfiles == 0
