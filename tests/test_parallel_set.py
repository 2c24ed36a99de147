"""`make test` runs tests/conftest.py's PARALLEL_FILES and PAIRED_FILES on three
workers, then the ALONE_FILES one test at a time. Every file is in one set, and the sets follow the source:
an alone file shows a sign of measuring or timing something, a parallel file
shows none, and a paired file measures runs but watches nothing of the
machine and turns the interference monitor's redo off. (Each parallel or
paired test keeps its own scratch directory, loop devices, mounts, cgroups and
port; what they cannot each own, the kernel's swap space, is an xdist group in
SHARED_GROUPS.)"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    ALONE_FILES, LONGEST_FIRST, PAIRED_FILES, PAIRED_INTERFERENCE, PARALLEL_FILES, ROOT, SHARED_GROUPS, SHARED_TESTS,
    SLOW_CASES, SLOW_HALVES, case_halves, group_of, half_of_cases, half_of_test, scope_of,
)
from boatload.studies.config import schema

TESTS = Path(__file__).resolve().parent
# What makes a test file unsafe beside another (or another unsafe beside it), as it reads in the source.
SIGNS = {
    "times something": r"\bperf_counter\(|\bmonotonic\(\)\s*-\s*\w|\[\"seconds\"\]\s*<|\brun_timed\(",
    "watches the machine": r"\b(interference|machineload|shield)\.\w+\(|/proc/sys/vm/drop_caches",
    "measures a study or workflow": r"\bstudy_scratch\b|\brun_job\(|\.run\((job|j)\)|\bscale import\b.*\bmeasure\b"
                                    r"|\"make\", \"reproduce\"|\"reproduce\", \"--configfile\", (\w+|\"[^\"]+\")\)"
                                    r"|kill_storm|fresh-machine|\bsbatch\b",
    "brings up a modelled disk": r"\bnbdkit\b|\bstack_cost\b|devmodel\.calibrate|\bcounts_at_attach\b",
}
# A swap area takes any process's pages, whichever test turned it on: swapon, or a memory limit with a swap
# file (one of 0 MB makes none, and its cgroup may not swap at all).
SWAPS = r"\(\s*\[?\"swapon\"|\bmemory_limit\((?![^,()]*,\s*0\s*,)|\bsetup_swap\("
# ... and so does a run of the tmpfs study (its memory limit comes with a swap file): a config keeping it,
# or the studies a `make reproduce` is told to run (STUDIES=) naming it.
RUNS_TMPFS_STUDY = r"\bin \([^)]*\"tmpfs\"[^)]*\)|\bSTUDIES = .*\"tmpfs\""
# A paired file's configs: tests/conftest.py's PAIRED_INTERFERENCE, redo and shield off.
PAIRED_OFF = r"\bPAIRED_INTERFERENCE\b"
SELF = Path(__file__).name  # holds the signs it looks for


def signs(source: str) -> list[str]:
    return [why for why, pattern in SIGNS.items() if re.search(pattern, source)]


def turns_swap_on(source: str) -> bool:
    return bool(re.search(SWAPS, source) or re.search(RUNS_TMPFS_STUDY, source))


def swap_turning_tests(source: str) -> set[str]:
    """The test functions of a file that turn swap on in their own body or through a function or fixture of
    the file they name."""
    functions = {f.name: ast.get_source_segment(source, f) for f in ast.parse(source).body
                 if isinstance(f, ast.FunctionDef)}
    helpers = {name for name, code in functions.items() if turns_swap_on(code)}
    return {name for name, code in functions.items() if name.startswith("test_")
            and (name in helpers or any(re.search(rf"\b{h}\b", code) for h in helpers))}


def test_every_test_file_is_in_exactly_one_set():
    files = {p.name for p in TESTS.glob("test_*.py")}
    sets = [PARALLEL_FILES, set(PAIRED_FILES), set(ALONE_FILES)]
    assert sorted(files - set().union(*sets)) == []
    assert sorted(set().union(*sets) - files) == []
    assert sum(len(s) for s in sets) == len(set().union(*sets)), "a file in two sets"
    assert set(SHARED_GROUPS) <= PARALLEL_FILES | set(PAIRED_FILES)
    for test in SHARED_TESTS:  # a test of a paired file, by its name
        name, function = test.split("::")
        assert name in PAIRED_FILES and name not in SHARED_GROUPS, test
        assert re.search(rf"^def {function}\(", (TESTS / name).read_text(encoding="utf-8"), re.M), test


def test_the_groups_started_first_are_groups_of_the_shared_session():
    # a renamed file or group would otherwise drop out of the order without a word
    groups = {group_of(name) for name in PARALLEL_FILES | set(PAIRED_FILES)} | set(SHARED_TESTS.values())
    assert sorted(set(LONGEST_FIRST) - groups) == [] and len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_a_file_is_scheduled_whole_and_a_shared_group_together():
    assert scope_of("tests/test_slurm.py::test_a[x::y]") == scope_of("tests/test_slurm.py::test_b") == "test_slurm.py"
    assert scope_of("tests/test_memlimit.py::test_a") == scope_of("tests/test_device_guard.py::test_b[1]") == "swap"
    # only the tests of a file that SHARED_TESTS names join the shared group
    shared = next(iter(SHARED_TESTS))
    assert scope_of(f"tests/{shared}[x]") == SHARED_TESTS[shared]
    assert scope_of(f"tests/{shared.split('::')[0]}::test_another") == shared.split("::")[0]


@pytest.mark.parametrize("name", sorted(PARALLEL_FILES - {SELF}))
def test_a_parallel_file_measures_and_times_nothing(name):
    assert signs((TESTS / name).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("name", sorted(PARALLEL_FILES - {SELF}))
def test_a_parallel_file_that_turns_swap_on_is_in_the_swap_group(name):
    if re.search(SWAPS, (TESTS / name).read_text(encoding="utf-8")):
        assert SHARED_GROUPS.get(name) == "swap"


@pytest.mark.parametrize("name", sorted(PAIRED_FILES))
def test_a_paired_file_measures_watches_nothing_and_redoes_nothing(name):
    source = (TESTS / name).read_text(encoding="utf-8")
    assert "measures a study or workflow" in signs(source), f"{name}: {PAIRED_FILES[name]}: why not parallel?"
    assert "watches the machine" not in signs(source)
    assert re.search(PAIRED_OFF, source), f"{name}: a config without PAIRED_INTERFERENCE (redo and shield off)"


@pytest.mark.parametrize("name", sorted(PAIRED_FILES))
def test_a_paired_file_that_turns_swap_on_is_in_the_swap_group(name):
    """The whole file, or each of its tests that turns swap on (SHARED_TESTS)."""
    source = (TESTS / name).read_text(encoding="utf-8")
    if not turns_swap_on(source) or SHARED_GROUPS.get(name) == "swap":
        return
    turning = {f"{name}::{test}" for test in swap_turning_tests(source)}
    assert turning, f"{name} turns swap on outside its tests: the whole file goes into the swap group"
    assert turning <= {test for test, group in SHARED_TESTS.items() if group == "swap"}, turning


@pytest.mark.parametrize("name", sorted(ALONE_FILES))
def test_an_alone_file_measures_or_times_something(name):
    assert signs((TESTS / name).read_text(encoding="utf-8")) != [], f"{name}: {ALONE_FILES[name]}?"


def test_the_signs_are_caught():
    assert signs("t0 = time.perf_counter()\n") == ["times something"]
    assert signs("wall = time.monotonic() - start\n") == ["times something"]
    assert signs("deadline = time.monotonic() + 60\n") == []
    assert signs("def test_x(study_scratch):\n    pass\n") == ["measures a study or workflow"]
    assert signs('boatload(workdir, "reproduce", "--configfile", "config/settle.yaml")\n') == [
        "measures a study or workflow"]
    assert signs('run([exe, "reproduce", "--configfile", "config/ci.yaml", "--dry-run"])\n') == []
    assert signs("machineload.busiest(0.5)\n") == ["watches the machine"]
    assert signs("nbdkit = shutil.which('nbdkit')\n") == ["brings up a modelled disk"]
    assert signs("def test_x(tmp_path, worker):\n    assert 1\n") == []
    assert re.search(SWAPS, 'sh("swapon", dev)\n') and re.search(SWAPS, "with memory_limit(64, 128, scratch):\n")
    assert not re.search(SWAPS, 'tools = {"mkswap", "swapon"}\n')
    assert re.search(SWAPS, 'with memlimit.memory_limit(job["memory_limit_mb"], job["swap_mb"], scratch):\n')
    assert not re.search(SWAPS, 'with memlimit.memory_limit(job["memory_limit_mb"], 0, scratch_dir()) as limit:\n')
    assert re.search(RUNS_TMPFS_STUDY, 'config["studies"] = {n: s[n] for n in ("forest", "tmpfs")}\n')
    assert re.search(RUNS_TMPFS_STUDY, 'STUDIES = ("forest", "tmpfs") if FULL else ("tmpfs",)\n')
    assert not re.search(RUNS_TMPFS_STUDY, 'mount("-t", "tmpfs")\n')
    assert swap_turning_tests(
        'def small(config):\n    config["studies"] = {n: s[n] for n in ("forest", "tmpfs")}\n\n\n'
        'def test_a(workdir):\n    write(workdir, small)\n\n\n'
        'def test_b(workdir):\n    write(workdir, big)\n') == {"test_a"}
    assert re.search(PAIRED_OFF, 'config["interference"] = dict(PAIRED_INTERFERENCE)\n')
    assert not re.search(PAIRED_OFF, 'config["interference"] = {"redo": 0}\n')
    # what the paired files get: nothing measured again, nothing shielded, and a setting the schema knows
    assert PAIRED_INTERFERENCE == {"redo": 0, "shield": False}
    interference = schema()["$defs"]["interference"]["properties"]
    assert set(PAIRED_INTERFERENCE) <= set(interference)


def test_each_slow_half_names_tests_that_exist_and_both_halves_have_some():
    assert set(SLOW_HALVES.values()) == {0, 1}
    for key in SLOW_HALVES:
        name, _, test = key.partition("::")
        function, _, param = test.partition("[")
        source = (TESTS / name).read_text()
        assert re.search(rf"^def {function}\(", source, re.M), f"{key}: no such test"
        assert not param or f'"{param.rstrip("]")}"' in source, f"{key}: no such parameter id"


def collected(env: dict[str, str], files: list[str]) -> tuple[set[str], str]:
    """The tests ("file::test[param]") of `files` a session with `env` runs (`--collect-only`), and what it
    printed."""
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly",
                          "-o", "addopts=", *(str(TESTS / name) for name in files)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if not k.startswith("BOATLOAD_")} | env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return {Path(line.split("::", 1)[0]).name + "::" + line.split("::", 1)[1]
            for line in run.stdout.splitlines() if "::" in line}, run.stdout


def test_a_session_runs_one_slow_half_and_boatload_full_both():
    """Real collections of every file with a test in SLOW_HALVES: the half picked runs, the other is deselected
    (said in the count), the tests in no half run always, and BOATLOAD_FULL=1 runs all of them; each key
    names at least one collected test."""
    files = sorted({key.split("::", 1)[0] for key in SLOW_HALVES})
    full, _ = collected({"BOATLOAD_FULL": "1"}, files)
    halves = {test: half_of_test(test) for test in full if half_of_test(test) is not None}
    for key in SLOW_HALVES:
        assert any(test == key or test.split("[", 1)[0] == key for test in halves), f"{key}: collects nothing"
    for half in (0, 1):
        got, out = collected({"BOATLOAD_SLOW_HALF": str(half)}, files)
        assert got == full - {t for t, h in halves.items() if h != half}, sorted(full ^ got)
        assert f"{sum(h != half for h in halves.values())} deselected" in out, out[-400:]
        assert {t for t, h in halves.items() if h == half}, half


def test_each_slow_case_set_names_a_test_that_asks_for_it_by_its_key():
    """Every SLOW_CASES key is a test whose body calls half_of_cases with that key, and every call in the
    tests names a key of SLOW_CASES (half_of_cases also refuses another)."""
    called = set()
    for path in (p for p in TESTS.glob("test_*.py") if p.name != SELF):
        called |= {f"{path.name}::{m}" for m in re.findall(r"\bhalf_of_cases\(\s*\"[^\"]*::(\w+)\"",
                                                           path.read_text(encoding="utf-8"))}
        keys = re.findall(r"\bhalf_of_cases\(\s*\"([^\"]+)\"", path.read_text(encoding="utf-8"))
        assert all(k.startswith(f"{path.name}::") for k in keys), (path.name, keys)
    assert called == set(SLOW_CASES)
    for key in SLOW_CASES:
        name, _, function = key.partition("::")
        source = (TESTS / name).read_text(encoding="utf-8")
        body = re.search(rf"^def {function}\(.*?(?=^\S|\Z)", source, re.M | re.S)
        assert body and f'half_of_cases("{key}"' in re.sub(r"\(\s+", "(", body.group(0)), key


@pytest.mark.parametrize("n", range(2, 31))
def test_the_two_halves_of_a_tests_cases_are_all_of_them_once_and_neither_empty(n):
    for key in SLOW_CASES:
        zero, one = case_halves(key, n)
        assert zero and one and not zero & one and zero | one == set(range(n)), (key, n)
        assert abs(len(zero) - len(one)) <= 1 and case_halves(key, n) == (zero, one)  # the same every time


def cases_run(env: dict[str, str]) -> dict[str, list[int]]:
    """What half_of_cases gives each SLOW_CASES key, of 8 cases, in a fresh process with `env`."""
    code = ("import json, conftest; print(json.dumps({k: conftest.half_of_cases(k, list(range(8))) "
            "for k in conftest.SLOW_CASES}))")
    run = subprocess.run([sys.executable, "-c", code], cwd=TESTS, capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if not k.startswith("BOATLOAD_")} | env)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_a_session_runs_one_half_of_each_tests_cases_and_boatload_full_all():
    """In real processes: each half runs its own cases, in their order, the two halves all of them between
    them; BOATLOAD_FULL=1 every case; a key not in SLOW_CASES is refused."""
    zero, one, full = (cases_run(env) for env in ({"BOATLOAD_SLOW_HALF": "0"}, {"BOATLOAD_SLOW_HALF": "1"},
                                                  {"BOATLOAD_FULL": "1"}))
    assert set(zero) == set(one) == set(full) == set(SLOW_CASES)
    for key in SLOW_CASES:
        assert full[key] == list(range(8)) and zero[key] and one[key], key
        assert zero[key] == sorted(zero[key]) and sorted(zero[key] + one[key]) == list(range(8)), key
    with pytest.raises(KeyError):
        half_of_cases("test_x.py::test_y", [1, 2])
