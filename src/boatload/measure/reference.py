"""A run's references, measured beside the target so that the host's moment falls on both: for the
journal's random stat as many cached files on a tmpfs of its own, statted file by file beside the
target's; for the degradation study's buffered read a file on a second fresh file system of the
target's kind on the same disk, read in turns with the target's big file.

A pass of random stat over cached files does no I/O, so what makes one run's passes slower than
another's is the host: this machine's processor runs the same loop at speeds up to twice apart, in
stretches of tens to hundreds of milliseconds (bench/README.md "A reference stat beside the
target's"). After each pass of the target alone (its rate, as the tables show it) a paired pass
(the worker's `meta --pair-dir`) stats each file on the target and then on the reference, or the
other way round, timing the two apart: every stretch falls on both sums alike, and their ratio keeps
what the target's file system costs. The journal study's claims of no difference in random stat
compare each run's median of those ratios.

The degradation study's reads of its big file (512-byte buffered reads, most of their time system
calls and page cache) move with the same stretches; `file_reference` makes a file (as large as the memory
limit) on a second file system like the target's, which no stage touches, and the worker's
`seqio --pair-file` reads the two in turns of 1 MiB, each turn timed apart (bench/README.md "The
degradation read paired with a reference"). Its O_DIRECT writes (a quarter of a second for 512 MiB)
go the same way, in turns of one block with writes over that file in place.
"""

from __future__ import annotations

import statistics

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from boatload.base.paths import scratch_dir
from boatload.base.targetspec import MIN_SIZE_MB, TargetSpec
from boatload.measure.worker import WorkerError, failure, run_worker
from boatload.provision.targets import provision, set_loop_direct_io

NAME = "stat-reference"
READ_NAME = "read-reference"
READ_FILE = "reference"
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
    ratios = [r for r in map(vs_reference, pairs) if r is not None]
    return {"where": "tmpfs", "files": files,
            "passes": [{"seconds": p["paired"]["seconds"], "pair_seconds": p["paired"]["pair_seconds"]}
                       for p in pairs],
            "stat_vs_reference": statistics.median(ratios) if ratios else None}


def has_file_reference(kind: str | None, model) -> bool:
    """Whether a target can have a file reference for its reads and writes: a loop target without a model
    (another image on the same disk; a modelled disk's reads and writes are its own seeks)."""
    return kind == "loop" and model is None


def file_reference_spec(target: TargetSpec, file_bytes: int) -> TargetSpec:
    """The file reference's file system: the target's kind, file system and mkfs options, large enough for
    the file."""
    if not has_file_reference(target.kind, target.model):
        raise ValueError(f"a read reference is made beside a loop target without a model, not {target.name}")
    size = max(MIN_SIZE_MB.get(target.fs, 8), -(-file_bytes * 5 // 4 // (1 << 20)) + 64)
    return TargetSpec(name=READ_NAME, kind="loop", fs=target.fs, size_mb=size, mkfs_options=target.mkfs_options)


@contextmanager
def file_reference(target: TargetSpec, file_bytes: int, block: int, seed: int) -> Iterator[Path]:
    """A fresh file system like the target's, its loop device on direct I/O as the target's, holding one
    file of `file_bytes` written once with O_DIRECT (untimed); torn down after."""
    with provision(file_reference_spec(target, file_bytes), scratch_dir()) as prov:
        on, why = set_loop_direct_io(prov)
        if not on:
            raise WorkerError(f"the read reference's loop device stays buffered: {why}")
        doc = run_worker("seqio", ["--dir", str(prov.path), "--file", READ_FILE, "--mode", "write", "--direct",
                                   "--block", str(block), "--size", str(file_bytes), "--seed", str(seed)],
                         setup=True)
        if why := failure(doc):
            raise WorkerError(f"the read reference's file: {why}")
        yield prov.path / READ_FILE


def vs_reference(phase: dict) -> float | None:
    """A paired phase's target rate over its reference's (the reference's time over the target's)."""
    paired = phase.get("paired")
    return paired["pair_seconds"] / paired["seconds"] if paired and paired["seconds"] > 0 else None
