"""The worker's tree workload beyond its basics: random layout, file sizes
and content, the create call, symlinks never followed."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from workerlib import run, tree_listing, count_regular_files, file_sizes, check_phase_common, data_listing, listing_digest


# ---- tree: random layout, file sizes and content ----------------------------

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
