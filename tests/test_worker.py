"""Tests of the native measuring worker (native/build/boatload-worker): the\ntree workload's basics.

They run the real binary: JSON shape and types, counts on disk, reproducible
random order, exit codes, ENOSPC on a tiny ext4 image (root only), SIGINT.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from workerlib import run, tree_listing, count_regular_files, is_number, sh


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
    mk = sh("mkfs.ext4", "-q", "-N", "64", "-F", str(img), "4M")
    assert mk.returncode == 0, mk.stderr
    m = sh("mount", "-o", "loop", str(img), str(mnt))
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
        u = sh("umount", str(mnt))
        if u.returncode != 0:
            time.sleep(0.5)
            u = sh("umount", str(mnt))
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
