"""`make env` compiles boatload's own modules: a `boatload run` process (one a run) then loads them from
bytecode, also where PYTHONDONTWRITEBYTECODE keeps Python from writing any at import."""

from __future__ import annotations

import importlib.util
import struct
import subprocess
from pathlib import Path

from conftest import ROOT

SRC = ROOT / "src" / "boatload"


def bytecode_matches(source: Path) -> bool:
    """Whether the module's cached bytecode exists and records this source's modification time and size
    (the check import makes before it uses a timestamp-based .pyc)."""
    cached = Path(importlib.util.cache_from_source(str(source)))
    if not cached.is_file():
        return False
    header = cached.read_bytes()[:16]
    if header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags, mtime, size = struct.unpack("<III", header[4:16])
    stat = source.stat()
    return flags == 0 and mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF


def test_make_env_leaves_every_module_of_the_package_compiled():
    # the Makefile names its targets by absolute path (VENV := $(CURDIR)/.venv)
    subprocess.run(["make", "-s", "-C", str(ROOT), str(ROOT / ".venv" / ".compiled")], check=True, capture_output=True,
                   text=True)
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 50
    stale = [str(m.relative_to(ROOT)) for m in modules if not bytecode_matches(m)]
    assert not stale, f"no current bytecode after make env: {stale[:5]}"
