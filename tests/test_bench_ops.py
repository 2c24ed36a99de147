"""bench/ops.py and bench/scale.py on a small real tree: every peer does the
operation it is compared on, on every file of the tree, and nothing else;
the scale benchmark's run reports its phases and the worker's max RSS."""

import argparse
import shutil
import sys
from types import SimpleNamespace

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import benchlib as bl  # noqa: E402
from ops import OPS, PEERS, Ops, halves  # noqa: E402
from scale import PHASES, measure  # noqa: E402

DIRS, PER_DIR = 4, 50


def test_halves_cover_every_directory_once():
    dirs = [f"d{i:03d}" for i in range(7)]
    for parts in (1, 2, 3, 7):
        shares = halves(dirs, parts)
        assert len(shares) == parts
        assert [d for s in shares for d in s] == dirs
        assert max(map(len, shares)) - min(map(len, shares)) <= 1


@pytest.fixture
def ops(tmp_path, worker):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = argparse.Namespace(files=DIRS * PER_DIR, per_dir=PER_DIR, bonnie_k=1, threads=[1, 2])
    return Ops(args, scratch, {"boatload-worker": SimpleNamespace(path=worker)})


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.skipif(not shutil.which("fio"), reason="fio is not installed")
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("threads", [1, 2])
def test_every_peer_does_its_op_on_every_file(ops, tmp_path, op, threads):
    peers = ["worker"] + [p for p, (its_ops, _, _) in PEERS.items() if op in its_ops and p != "bonnie"]
    for tool in peers:
        method = f"{op}/{threads}t/{tool}"
        d = tmp_path / f"run-{op}-{threads}-{tool}"
        d.mkdir()
        ops.prepare(method, d, sync=False)
        before = _files(d)
        sample = ops.run(method, d)
        assert bl.count_tree(d) == ops.expect(method), method
        assert sample.ops == DIRS * PER_DIR
        clock = "inner" if tool == "worker" else PEERS[tool][1]
        assert sample.rate_of(clock) and sample.rate_of(clock) > 0, method
        if op == "stat" and tool != "fio":  # stat changed nothing (fio lays its files out in the same run)
            assert _files(d) == before, method
        if op == "create" and tool != "fio":  # the tree's own names (fio names its files itself)
            assert _files(d) == sorted(f"{dd}/{n}" for dd in ops.dirs for n in ops.names), method


def test_the_scale_run_reports_phases_and_max_rss(tmp_path, worker):
    d = tmp_path / "tree"
    d.mkdir()
    doc = measure(worker, d, 2000, 1000, 2, tmp_path / "meta.json")
    assert [p["name"] for p in doc["phases"]] == list(PHASES)
    assert all(p["ops"] == 2000 for p in doc["phases"])
    assert {p["name"] for p in doc["dir_phases"]} == {"mkdir", "rmdir"}
    assert 100 < doc["max_rss_kib"] < 1 << 20  # KiB: a real process, not a whole machine
    assert bl.count_tree(d) == (0, 0)
    with pytest.raises(bl.RunError, match="--files 2000"):
        measure(worker, d / "missing", 2000, 1000, 2, tmp_path / "meta2.json")


def test_names_reads_the_directory_scan_share_from_perf():
    from names import scan_share

    report = """# Samples: 10K of event 'cpu-clock:pppH'
    30.00%  [k] ext4_search_dir
    10.00%  [k] ext4_find_dest_de
     5.00%  [k] dx_probe
     4.00%  [k] jbd2_journal_get_write_access
    20.00%  [k] _raw_spin_lock
     1.00%  [.] __libc_start_main
"""
    assert scan_share(report) == (40.0, 49.0)


def test_bare_create_makes_names_of_the_length_asked(tmp_path):
    import subprocess

    subprocess.run(["make", "-s", "-C", str(ROOT / "native"), "bench"], check=True, capture_output=True)
    bare = ROOT / "native" / "build" / "bare-create"
    for call, length in (("mknod", 20), ("open", 7)):
        d = tmp_path / f"{call}-{length}"
        d.mkdir()
        out = subprocess.run([bare, d, "2", "30", call, str(length)], capture_output=True, text=True, check=True)
        assert "files/s" in out.stdout
        names = sorted(p.name for p in d.rglob("f*"))
        assert len(names) == 60 and {len(n) for n in names} == {length}
        assert names[0] == "f" + "0" * (length - 1)
        assert all(p.stat().st_size == 0 for p in d.rglob("f*"))
    bad = subprocess.run([bare, tmp_path, "1", "1", "mknod", "6"], capture_output=True, text=True)
    assert bad.returncode == 2 and "NAMELEN is 7..200" in bad.stderr
