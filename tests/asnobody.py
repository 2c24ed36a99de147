"""Running Python code as user nobody (uid 65534), for the tests of what
boatload does without root: the tests themselves run as root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
NOBODY = 65534


def _as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def nobody_python() -> str:
    """A Python >= 3.11 that nobody may run (skips the test if there is none)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        try:
            r = subprocess.run([exe, "-c", "import sys; assert sys.version_info >= (3, 11)"],
                               preexec_fn=_as_nobody, cwd="/", capture_output=True, timeout=30)
        except OSError:
            continue
        if r.returncode == 0:
            return exe
    pytest.skip("no Python 3.11 that user nobody may run")


def run_as_nobody(code: str, *args: str) -> subprocess.CompletedProcess:
    """`python -c code args...` as nobody, with boatload's src on its path."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(SRC), "HOME": "/", "LC_ALL": "C"}
    return subprocess.run([nobody_python(), "-c", code, *args], preexec_fn=_as_nobody, cwd="/",
                          env=env, capture_output=True, text=True, timeout=60)
