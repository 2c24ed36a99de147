"""A run's reference for its random stat: the same pass over as many cached files on a tmpfs of its own.

A pass of random stat over cached files does no I/O, so what makes one run's passes slower than
another's is the host: a slow stretch of its processor, the hypervisor taking it. A pass over as
many cached files on a tmpfs, made right after each of the target's, is slowed by the same stretch.
The journal study's claims of no difference in random stat compare each run's fastest target pass
over its fastest reference pass: what the target's file system costs stays in that ratio, most of
the host's moment cancels (bench/README.md "A reference stat beside the target's"). The rates
themselves stay in the tables as measured.
"""

from __future__ import annotations

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


def stat_pass(root: Path, files: int, file_size: int, seed: int) -> dict:
    """One timed pass of random stat over the reference's files: the worker's phase record."""
    doc = run_worker("meta", meta_args(root, files, file_size, seed, "stat:rand"))
    if why := failure(doc):
        raise WorkerError(f"the stat reference's pass: {why}")
    return doc["phases"][0]


def interleaved(target_pass: Callable[[int], dict], root: Path, files: int, file_size: int, passes: int,
                seed: int) -> tuple[list[dict], list[dict]]:
    """`passes` times the target's stat pass (`target_pass(seed)`, a worker document), then the same pass
    (the same seed, so the same order) over the reference's files; stops after a target pass that failed.
    The target's documents, and the reference's pass records."""
    docs, refs = [], []
    for i in range(passes):
        docs.append(target_pass(seed + i))
        if failure(docs[-1]):
            break
        refs.append(stat_pass(root, files, file_size, seed + i))
    return docs, refs


def summary(passes: list[dict], files: int) -> dict:
    """The reference's passes as a run records them, its rate the fastest pass's (as the target's)."""
    rates = [p["ops_per_s"] for p in passes]
    return {"where": "tmpfs", "files": files, "passes": [{"seconds": p["seconds"], "ops_per_s": p["ops_per_s"]}
                                                         for p in passes],
            "ops_per_s": max(rates) if rates else None}
