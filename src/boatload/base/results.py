"""Raw results on disk: written atomically, and never lost to a rerun.

Every result is also kept in an append-only archive beside the runs, under a
name that is never reused, so a rerun that replaces `rep1.json` (Snakemake
removes a job's outputs before it reruns it) still leaves every earlier
measurement on disk.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def write_atomic_with(path: Path, write: Callable[[Path], object], mode: int = 0o644) -> None:
    """Let `write(tmp)` write a file beside `path`, then put it in place with
    `mode` (a temporary file is made 0600; 0644 is what a plain open() gives
    under the usual umask): readers see the old file or the new one, never half.
    The one way boatload writes a file in place (results, tables, summaries,
    figures, archives, the paper)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` (text as UTF-8, or bytes) to `path` atomically (write_atomic_with)."""
    if isinstance(data, bytes):
        write_atomic_with(path, lambda tmp: tmp.write_bytes(data))
    else:
        write_atomic_with(path, lambda tmp: tmp.write_text(data, encoding="utf-8"))


def archive_path(runs_dir: Path, relative: Path) -> Path:
    """A name under runs_dir/archive for `relative` (its place under `runs_dir`) that no file has yet."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    stem = runs_dir / "archive" / relative.with_suffix("")
    for n in range(1, 10_000):
        candidate = Path(f"{stem}-{stamp}-{n}.json")
        if not candidate.exists():
            return candidate
    raise FileExistsError(f"no free archive name for {stem} at {stamp}")


def save_result(result: dict, out: Path, runs_dir: Path) -> Path:
    """Keep `result` in the archive (exclusive create), then publish it at `out`.

    Returns the archive copy's path.
    """
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    try:
        relative = out.resolve().relative_to(runs_dir.resolve())
    except ValueError:
        relative = Path(out.name)
    keep = archive_path(runs_dir, relative)
    keep.parent.mkdir(parents=True, exist_ok=True)
    with open(keep, "x") as f:  # "x": an existing archive entry is never replaced
        f.write(text)
    if out.exists():
        print(f"boatload: replacing {out} (the earlier result is in {runs_dir / 'archive'})", file=sys.stderr)
    write_atomic(out, text)
    return keep
