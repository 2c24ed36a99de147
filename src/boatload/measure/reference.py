"""A run's reference for its random stat: as many cached files on a tmpfs of its own, statted file by
file beside the target's.

A pass of random stat over cached files does no I/O, so what makes one run's passes slower than
another's is the host: this machine's processor runs the same loop at speeds up to twice apart, in
stretches of tens to hundreds of milliseconds (bench/README.md "A reference stat beside the
target's"). After each pass of the target alone (its rate, as the tables show it) a paired pass
(the worker's `meta --pair-dir`) stats each file on the target and then on the reference, or the
other way round, timing the two apart: every stretch falls on both sums alike, and their ratio keeps
what the target's file system costs. The journal study's claims of no difference in random stat
compare each run's median of those ratios.
"""

from __future__ import annotations

import statistics

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from boatload.base.paths import scratch_dir
from boatload.base.targetspec import TargetSpec
from boatload.measure.worker import WorkerError, failure, run_worker
from boatload.provision.targets import provision

NAME = "stat-reference"
PAGE = 4096
# a tmpfs file's inode and dentry, about; the size only has to hold the files
PER_FILE_BYTES = 1024


def size_mb(files: int, file_size: int) -> int:
    """A tmpfs that holds `files` files of `file_size` bytes in whole pages, with room to spare."""
    pages = -(-max(file_size, 1) // PAGE)
    return 16 + -(-files * (pages * PAGE + PER_FILE_BYTES) // (1 << 20))


def meta_args(root: Path, files: int, file_size: int, seed: int, phases: str, existing: bool = True) -> list[str]:
    """The worker's meta options for `phases` over a flat directory of files; `existing`: going on with
    the files an earlier call made."""
    return ["--dir", str(root), "--files", str(files), "--dirs", "0", "--size", str(file_size),
            "--phases", phases, "--threads", "1", "--seed", str(seed), *(["--allow-existing"] if existing else [])]


@contextmanager
def reference_tree(files: int, file_size: int, seed: int) -> Iterator[Path]:
    """A fresh tmpfs holding `files` files of `file_size` bytes (made untimed), torn down after."""
    spec = TargetSpec(name=NAME, kind="tmpfs", fs="tmpfs", size_mb=size_mb(files, file_size))
    with provision(spec, scratch_dir()) as prov:
        root = prov.path / "reference"
        root.mkdir()
        doc = run_worker("meta", meta_args(root, files, file_size, seed, "create:seq", existing=False), setup=True)
        if why := failure(doc):
            raise WorkerError(f"the stat reference's files on a tmpfs: {why}")
        yield root


def paired(root: Path) -> list[str]:
    """The worker's meta options that pair each open, stat and read with the reference's files at `root`."""
    return ["--pair-dir", str(root)]


def interleaved(target_pass: Callable[[int, list[str]], dict], root: Path, passes: int,
                seed: int) -> tuple[list[dict], list[dict]]:
    """`passes` times the target's stat pass alone (`target_pass(seed, [])`, a worker document), then the
    same pass (the same seed, so the same order) paired with the reference's files at `root`
    (`target_pass(seed, paired(root))`); stops after a call that failed. The lone passes' documents, and
    the paired passes' stat records."""
    docs, pairs = [], []
    for i in range(passes):
        docs.append(target_pass(seed + i, []))
        if failure(docs[-1]):
            break
        doc = target_pass(seed + i, paired(root))
        if why := failure(doc):
            raise WorkerError(f"the stat paired with its reference: {why}")
        pairs.append(next(p for p in doc["phases"] if p["name"] == "stat"))
    return docs, pairs


def summary(pairs: list[dict], files: int) -> dict:
    """The paired passes as a run records them: each pass's sums, and the run's `stat_vs_reference`, the
    target's stat rate over the reference's (the reference's time over the target's), median over the
    passes."""
    ratios = [p["paired"]["pair_seconds"] / p["paired"]["seconds"] for p in pairs if p["paired"]["seconds"] > 0]
    return {"where": "tmpfs", "files": files,
            "passes": [{"seconds": p["paired"]["seconds"], "pair_seconds": p["paired"]["pair_seconds"]}
                       for p in pairs],
            "stat_vs_reference": statistics.median(ratios) if ratios else None}
