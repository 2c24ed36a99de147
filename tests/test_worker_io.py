"""The worker's meta, seqio and randio workloads, on the real binary: files
and sizes on disk, phases, O_DIRECT on tmpfs, ext4 and ramfs, ENOSPC,
SIGINT, bad input."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workerlib import run, tree_listing, count_regular_files, SHM, file_sizes, check_phase_common, Mounted


# ---- meta, seqio, randio ----------------------------------------------------

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


def test_meta_pair_dir_times_each_op_beside_the_pairs(worker, shm_dir):
    """--pair-dir: open, stat and read each file on the target and on the pair in turn, timed apart. A pair
    whose files are 64 times as large reads far slower, and the paired sums say so; create and delete do
    not pair; a file missing from the pair fails naming it; the pair may not be --dir itself."""
    target, pair = shm_dir / "target", shm_dir / "pair"
    target.mkdir()
    pair.mkdir()
    # 3,000 files: each side's sum some milliseconds, so that the scheduler taking the thread away for a
    # slice or two (three test workers on two cores) hits both sides about alike, as it did not over 300
    # (the target's sum under a millisecond: one slice on its side made its read as slow as the pair's)
    common = ["--files", "3000", "--dirs", "3"]
    for d, size in ((target, "1024"), (pair, "65536")):
        r = run(worker, "meta", "--dir", str(d), *common, "--size", size, "--phases", "create")
        assert r.returncode == 0, r.stderr
    r = run(worker, "meta", "--dir", str(target), *common, "--allow-existing", "--pair-dir", str(pair),
            "--phases", "open:rand,stat:rand,read:rand")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["params"]["pair_dir"] == str(pair)
    for ph in doc["phases"]:
        paired = ph["paired"]
        assert ph["ops"] == 3000 == ph["latency_us"]["count"]  # the target's ops alone
        assert paired["pair"] == str(pair) and paired["seconds"] > 0 and paired["pair_seconds"] > 0
        assert paired["seconds"] + paired["pair_seconds"] <= ph["seconds"]
        assert paired["ratio"] == pytest.approx(paired["seconds"] / paired["pair_seconds"], rel=1e-6)
    read = doc["phases"][2]
    assert read["bytes"] == 3000 * 1024  # the pair's bytes are not the target's
    assert read["paired"]["ratio"] < 0.5  # 64 KiB files take longer to read than 1 KiB ones
    r = run(worker, "meta", "--dir", str(target), *common, "--allow-existing", "--pair-dir", str(pair),
            "--phases", "create,delete:rand")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and all("paired" not in ph for ph in doc["phases"])
    assert len(list(pair.rglob("f*"))) == 3000  # the pair untouched by create and delete
    r = run(worker, "meta", "--dir", str(target), *common, "--size", "1024", "--phases", "create")
    assert r.returncode == 0, r.stderr
    victim = sorted(pair.rglob("f*"))[7]
    victim.unlink()
    r = run(worker, "meta", "--dir", str(target), *common, "--allow-existing", "--pair-dir", str(pair),
            "--phases", "stat:seq")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and doc["error"]["where"] == f"pair:{victim.parent.name}/{victim.name}"
    assert doc["error"]["code"] == "ENOENT"
    for bad, why in ((target, "is --dir itself"), (shm_dir / "none", "cannot open")):
        r = run(worker, "meta", "--dir", str(target), *common, "--allow-existing", "--pair-dir", str(bad),
                "--phases", "stat")
        assert r.returncode == 2 and r.stderr.startswith("boatload-worker: --pair-dir: ") and why in r.stderr


def test_seqio_pair_file_reads_in_turns_timed_apart(worker, shm_dir):
    """--pair-file: the target read whole in turns with the pair (which wraps around when shorter), each
    side's time summed apart inside the run's; the bytes, ops and latencies are the target's alone; the
    pair is refused for a write, for the target itself, and when shorter than a block."""
    # two files of 256 MiB, each larger than the processor's caches: each side's sum some tens of
    # milliseconds over 256 turns, so that the scheduler taking the thread away for a slice or two (three
    # test workers and two busy loops on two cores) cannot make one side's sum several times the other's,
    # as it did over 8 MiB and, 2 times in 20, over 64 MiB (a few milliseconds a side), and a shorter pair
    # read round again is not served from the cache
    for name, size in (("big", "256M"), ("ref", "256M")):
        r = run(worker, "seqio", "--dir", str(shm_dir), "--file", name, "--mode", "write", "--size", size,
                "--block", "1M")
        assert r.returncode == 0, r.stderr
    pair = str(shm_dir / "ref")
    r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "big", "--mode", "read", "--block", "1M",
            "--runs", "2", "--pair-file", pair)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["params"]["pair_file"] == pair
    for ph in doc["phases"]:
        check_phase_common(ph)
        assert ph["bytes"] == 256 << 20 and ph["ops"] == 256 == ph["latency_us"]["count"]
        paired = ph["paired"]
        assert paired["pair"] == pair and paired["seconds"] > 0 and paired["pair_seconds"] > 0
        assert paired["seconds"] + paired["pair_seconds"] <= ph["seconds"]
        # the same bytes from the page cache of one tmpfs: neither side far from the other
        assert 0.25 < paired["ratio"] < 4
    # a shorter pair is read round again: the target still read whole, both sides timed
    r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "big", "--mode", "read", "--block", "1M",
            "--size", "40M", "--pair-file", str(shm_dir / "short"))
    assert r.returncode == 2  # no such file yet
    r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "short", "--mode", "write", "--size", "3M",
            "--block", "1M")
    assert r.returncode == 0, r.stderr
    r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "big", "--mode", "read", "--block", "1M",
            "--size", "40M", "--pair-file", str(shm_dir / "short"))
    [ph] = json.loads(r.stdout)["phases"]
    assert r.returncode == 0 and ph["bytes"] == 40 << 20 and ph["paired"]["pair_seconds"] > 0
    for args, why in ((["--mode", "write", "--size", "1M"], "a write is paired only with --direct"),
                      (["--mode", "write", "--size", "1M", "--direct", "--fsync-end", "on"], "--fsync-end off"),
                      (["--mode", "read", "--pair-file", str(shm_dir / "big")], "is --file itself"),
                      (["--mode", "read", "--block", "512M", "--pair-file", pair], "shorter than one --block"),
                      (["--mode", "read", "--pair-file", str(shm_dir / "none")], "No such file")):
        extra = [] if "--pair-file" in args else ["--pair-file", pair]
        block = [] if "--block" in args else ["--block", "1M"]
        r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "big", *block, *args, *extra)
        assert r.returncode == 2 and r.stderr.startswith("boatload-worker: --pair-file: ") and why in r.stderr, r.stderr


def test_seqio_pair_file_overwrites_a_write_pair_in_place(worker, shm_dir):
    """--pair-file with an O_DIRECT write: the pair is overwritten in place in turns with the target's
    writes, wrapping around at its last whole block: never grown, truncated or written past it; the
    target's file is written whole and its bytes and ops are the target's alone. A refused pair leaves
    no target file behind."""
    pair = shm_dir / "ref"
    pair.write_bytes(bytes(3 * (1 << 20) + 512 * 1024))  # 3.5 MiB of zeros: three whole blocks and a tail
    r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "big", "--mode", "write", "--direct",
            "--size", "8M", "--block", "1M", "--content", "random", "--runs", "2", "--pair-file", str(pair))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["params"]["pair_file"] == str(pair) and doc["params"]["fsync_end"] is False
    for ph in doc["phases"]:
        check_phase_common(ph)
        assert ph["bytes"] == 8 << 20 and ph["ops"] == 8 == ph["latency_us"]["count"]
        paired = ph["paired"]
        assert paired["seconds"] > 0 and paired["pair_seconds"] > 0
        assert paired["seconds"] + paired["pair_seconds"] <= ph["seconds"]
    data = pair.read_bytes()
    assert len(data) == 3 * (1 << 20) + 512 * 1024  # not grown, not truncated
    block = (shm_dir / "big").read_bytes()[: 1 << 20]
    assert data[: 3 << 20] == block * 3  # the whole blocks overwritten with the target's data
    assert data[3 << 20:] == bytes(512 * 1024)  # the tail past the last whole block untouched
    assert (shm_dir / "big").stat().st_size == 8 << 20
    r = run(worker, "seqio", "--dir", str(shm_dir), "--file", "fresh", "--mode", "write", "--direct",
            "--size", "1M", "--block", "1M", "--pair-file", str(shm_dir / "none"))
    assert r.returncode == 2 and "--pair-file: " in r.stderr and not (shm_dir / "fresh").exists()


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


# ---- the worker's own memory (max_rss_kib) ----------------------------------

def _peak_kib(worker, d: Path, *args: str) -> int:
    r = run(worker, *args[:1], "--dir", str(d), *args[1:])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert isinstance(doc["max_rss_kib"], int) and doc["max_rss_kib"] > 0
    return doc["max_rss_kib"]


@pytest.mark.parametrize("small,big", [
    (("meta", "--files", "2000", "--dirs", "2", "--phases", "create:seq,stat:rand,delete:seq"),
     ("meta", "--files", "200000", "--dirs", "200", "--phases", "create:seq,stat:rand,delete:seq")),
    (("tree", "--shape", "2x1000"), ("tree", "--shape", "200x1000", "--order", "random")),
], ids=["meta", "tree"])
def test_peak_memory_does_not_grow_with_the_files(worker, shm_dir, small, big):
    """No per-file state: 100 times the files (and directories) cost the
    worker less than 1 MiB more at its peak; 8 bytes a file would be 1.5 MiB."""
    (shm_dir / "s").mkdir()
    (shm_dir / "b").mkdir()
    a = _peak_kib(worker, shm_dir / "s", *small, "--threads", "2")
    b = _peak_kib(worker, shm_dir / "b", *big, "--threads", "2")
    assert b - a < 1024, (a, b)


def test_peak_memory_is_the_workers_not_its_parents(worker, shm_dir):
    """max_rss_kib is the worker's own address space: a parent holding 96 MiB
    (which getrusage's ru_maxrss of the child would carry over the fork)
    does not show in it."""
    code = ("import subprocess, sys\n"
            "ballast = bytearray(96 << 20)\n"
            "ballast[::4096] = b'x' * len(ballast[::4096])\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
            "sys.stdout.buffer.write(r.stdout)\n")
    r = subprocess.run([sys.executable, "-c", code, str(worker), "meta", "--dir", str(shm_dir), "--files", "100",
                        "--dirs", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert 0 < json.loads(r.stdout)["max_rss_kib"] < 32 << 10
