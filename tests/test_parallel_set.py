"""The tests `make test` runs on two workers (tests/conftest.py's
PARALLEL_FILES) are only files that attach, mount, limit and time nothing:
none is marked root, e2e or slow, asks for a fixture that provisions targets,
or calls the clock, the interference monitor, memory limits or losetup. (A
workflow clone of its own, `workdir`, for a dry run, is safe: it lives under
the test's tmp_path.)"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import PARALLEL_FILES

TESTS = Path(__file__).resolve().parent
# What makes a test file unsafe beside another, as it reads in the source.
UNSAFE = {
    "marked root, e2e or slow": r"mark\.(root|e2e|slow)\b|pytestmark\s*=\s*root\b",
    "provisions targets": r"def test_\w+\([^)]*\b(study_scratch|scratch)\b",
    "needs root": r"\bIS_ROOT\b|geteuid\(\)\s*[!=]=\s*0",
    "times or watches the machine": r"\b(perf_counter|monotonic)\(|\b(interference|machineload|memlimit|cgroups)\.\w+\("
                                    r"|\blosetup\b",
}


def unsafe_reasons(source: str) -> list[str]:
    return [why for why, pattern in UNSAFE.items() if re.search(pattern, source)]


@pytest.mark.parametrize("name", sorted(PARALLEL_FILES))
def test_a_parallel_file_exists_and_is_safe_beside_another(name):
    path = TESTS / name
    assert path.is_file(), f"{name} is in PARALLEL_FILES but not in tests/"
    assert unsafe_reasons(path.read_text(encoding="utf-8")) == []


def test_an_unsafe_file_is_caught():
    assert unsafe_reasons("pytestmark = [pytest.mark.root]\n") == ["marked root, e2e or slow"]
    assert unsafe_reasons("def test_x(tmp_path, study_scratch):\n    pass\n") == ["provisions targets"]
    assert unsafe_reasons("t0 = time.perf_counter()\n") == ["times or watches the machine"]
    assert unsafe_reasons("def test_x(tmp_path, worker):\n    assert 1\n") == []
