"""Peers adjacent: the worker and its peer tools measure one point and
repetition in the same job, back to back on the same freshly made target.

Each tool starts from the same state: the file system synced, then a fresh
subdirectory of its own in which it lays out its files; after it, that
subdirectory is deleted and the file system synced again before the next
tool starts. The order alternates (see `run_order`), so that whatever the
second place costs or gains falls on each tool equally often.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path


def run_order(tools: list[str], key: int) -> list[str]:
    """The tools in the order they run: as given for an even key, reversed for
    an odd one. With key = files + rep (filecount) or rep (tmpfs), a point's
    repetitions alternate, and so do neighbouring points run once each."""
    return list(tools) if key % 2 == 0 else list(reversed(tools))


def settle() -> None:
    """Write back everything dirty (the target, and a loop image's host file)
    so that no tool's write-back runs into the next tool's measurement."""
    os.sync()


def fresh_dir(parent: Path, name: str) -> Path:
    d = parent / name
    d.mkdir()
    return d


def one_by_one(parent: Path, tools: list[str], measure: Callable[[Path, str], dict]) -> Iterator[tuple[int, str, dict]]:
    """Run `measure(directory, tool)` for each tool in turn, each in a fresh
    subdirectory of `parent` after a sync; delete it afterwards. Yields
    (position from 1, tool, result), the result with the file system's free
    space when the tool started (`free_mb_at_start`: the same for every tool
    when each found the previous one's files gone)."""
    for position, tool in enumerate(tools, start=1):
        settle()
        d = fresh_dir(parent, tool)
        free_mb = free_mb_of(d)
        try:
            result = measure(d, tool)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        yield position, tool, {**result, "free_mb_at_start": free_mb}
    settle()


def free_mb_of(path: Path) -> float:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize / 2**20


def summary_line(where: str, result: dict, describe: Callable[[str, dict], str]) -> str:
    """The log line of a paired job: `where`, then `describe(tool, its result)` per tool in run order."""
    done = result.get("tools") or {}
    if not done:
        return f"{where}: {result['status']} ({result['reason']})"
    return f"{where}: " + "; then ".join(describe(tool, done[tool]) for tool in result["order"])
