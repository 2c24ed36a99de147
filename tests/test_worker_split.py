"""The worker's work split by directory (issue 18): every file visited once
per phase with whole-directory shares and with fewer directories than
threads, and the directory phases reported apart."""

from __future__ import annotations

import itertools
import json
import math
import signal
import subprocess
import time

import pytest

from workerlib import run, tree_listing, count_regular_files, is_number, file_sizes, check_phase_common


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
