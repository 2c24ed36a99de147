"""The degradation study: a big file's throughput as small files pile up beside it.

The original (a 1 GB RAM VM): a file of twice MemTotal, written five times
with `dd bs=12M oflag=direct` and read five times with a buffered `dd`
(512-byte blocks), on an empty file system, after 1,000,000 and after
2,000,000 more small files (0..6552 bytes, random bytes) in a random folder
tree. Writes fell from ~620 to ~370 MB/s, reads from ~147 to ~130 MB/s.

Ours, one job per target and repetition (point `stages`), because the stages
build on each other on one file system: provision once, then for the stages
0, N and 2N extra files:

1. add N small files (none before stage 0; see "the small files");
2. `runs` x `seqio --mode write --direct --block <block> --size 2M MiB`
   (dd `oflag=direct`; each run truncates the file first, as dd does);
3. `runs` x `seqio --mode read --block 512` (dd's default block, buffered).

**Memory.** The original's file was twice the VM's RAM, so a buffered read
could not be served from the page cache. We put every worker call of the job
(fill, writes, reads) in one cgroup memory limit of M MiB
(`memory_limit_mb`, boatload.provision.memlimit; no swap) and make the file 2 x M MiB:
the job sees an M-MiB machine, as the original's whole VM had 1 GB. With
`memory_limit_mb: null` there is no cgroup and M is the machine's MemTotal,
as in the original.

**The disk.** A loop target's image is a file on the host's file system. Read
or written through the host's page cache, it would stay in host memory,
outside the cgroup (the loop driver's I/O is not charged to it), and neither
the O_DIRECT writes nor the reads the limit pushes out of the target's cache
would reach a disk. With `loop_direct_io` (default on) the loop device is
switched to direct I/O (`losetup --direct-io=on`) first, so they go on to
the host's disk; where that fails the run goes on and the result says so
(`loop_direct_io` false, `loop_direct_io_note`).

**The small files.** The original's generator made a fresh `mktemp -d`
folder under /tmp/boatload per call, holding `$RANDOM/2` (0..16383) files of
`8 * ($RANDOM/40)` (0..6552) bytes from /dev/urandom, and was called until
1,000,000 files were made: about 122 flat folders of random size per
million. Each stage after the first adds N files with one call of the
worker's `tree --layout random --max-depth 1 --files N --files-per-dir-max
16383 --size 0:<file_size_max> --size-align 8 --content random` (a fresh
seed per stage) into `boatload/` on the target, which holds the folders of
both stages side by side, as /tmp/boatload did: folders with 10-character
random names, each with a uniform 1..16383 files (the last what is left),
sizes uniform over the multiples of 8 up to 6552. What remains different
(native/README.md): no folder is empty, `$RANDOM/40` was not quite
uniform, the bytes are the worker's seeded pseudo-random stream rather than
/dev/urandom, and one process makes all files rather than one `dd` per
file (the fill is not measured). The files on disk are counted after each
stage.

**Space.** The target must hold the big file and 2N small files. The job
checks this before anything runs (from `targets.<name>.size_mb` when the
jobs are made, from the mounted file system's free space and free inodes
when it runs) and fails with a ConfigError naming `targets.<name>.size_mb`.

**The image.** A loop target's image is a sparse file on the host; the first
write to a block of it makes the host file system allocate that block. So
that stage 0 does not pay for that and the later stages not, the job first
writes the target's free space once (O_DIRECT, untimed, kept in the result
as `precondition`) and deletes that file.

**The read's reference.** A buffered read of 512-byte blocks spends most of its
time in system calls and the page cache, so a slow stretch of this machine's
processor moves it from one stage to the next. With `read_reference` (a loop
target without a model) the job makes a second fresh file system like the
target's on the same disk, writes one file as large as the memory limit there once,
and every read of the big file goes in turns of 1 MiB with the same reads of
that file, each turn timed apart (worker `seqio --pair-file`,
boatload.measure.reference): the run's `vs_reference` is the big file's rate over
the reference's, which no stage touches, and the read claims compare it from
stage to stage. The rate shown is the big file's own (its bytes over its turns'
time). `read_runs` sets the reads per stage (default `runs`). With
`write_reference` each O_DIRECT write of the big file goes the same way in
turns of one block with writes over that file in place (which allocate
nothing), and the write claims compare the write's rate over the
reference's: a write of 512 MiB takes a quarter of a second here, as short
as the processor's slow stretches.

Without root (no loop device, no cgroup) the job is recorded as skipped with
the reason: a plain directory on the host file system says nothing about a
file system filling up.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess

from boatload.base import dtypes

from boatload.provision import capacity, memlimit
from boatload.base import system
from boatload.base.errors import ConfigError
from boatload.base.paths import scratch_dir
from boatload.measure import reference
from boatload.measure.runner import run_job
from boatload.measure.creators import count_files
from boatload.studies.record import (Original, ScaleGap, Study, base_job, base_row, for_target, settings, settings_schema,
                            target_spec)
from boatload.provision.targets import Provisioned, set_loop_direct_io
from boatload.measure.worker import WorkerError, failure, run_worker

BIG_FILE = "dd"
PRECONDITION_FILE = "precondition"
SMALL_ROOT = "boatload"
FOLDER_MAX = 16383  # bash $RANDOM/2
SIZE_ALIGN = 8  # dd bs=8 count=$RANDOM/40
READ_BLOCK = 512  # dd's default block size
OPS = ("write_odirect", "read")
SIZE_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# Per small file beyond its data blocks: directory entry, and for xfs the
# dynamically allocated inode (512 bytes); a rough upper bound for ext too.
PER_FILE_OVERHEAD = 544
# the settings that pair the big file's reads, its writes, with the one reference file
REFERENCE_KEYS = ("read_reference", "write_reference")


def parse_size(text: str | int) -> int:
    text = str(text).strip().upper()
    suffix = text[-1] if text[-1] in SIZE_SUFFIX and not text[-1].isdigit() else ""
    return int(text[: len(text) - len(suffix)]) * SIZE_SUFFIX[suffix]


def memory_mb(limit_mb: int | None) -> int:
    """M: the limit, or (null) the machine's MemTotal in MiB."""
    return limit_mb if limit_mb is not None else system.memory_bytes() // (1 << 20)


def mean_allocation(size_max: int, block: int = 4096) -> float:
    """Mean bytes allocated for a file of uniform size 0..size_max (whole blocks)."""
    # sizes 1..size_max take ceil(s / block) blocks each (size 0: none): `full` whole runs of `block`
    # sizes, the k-th taking k blocks, then `rest` sizes taking full + 1 (a sum, not a loop over the runs:
    # a config may ask for sizes of terabytes, and the preflight plans it before refusing it)
    full, rest = divmod(size_max, block)
    total = block * block * full * (full + 1) // 2 + rest * (full + 1) * block
    return total / (size_max + 1)


def space_needed(file_bytes: int, extra_files: int, size_max: int, block: int = 4096) -> int:
    """Bytes the big file and the 2N small files take, roughly (2 % slack)."""
    small = 2 * extra_files * (mean_allocation(size_max, block) + PER_FILE_OVERHEAD)
    return int((file_bytes + small) * 1.02)


def _too_small(name: str, what: str) -> ConfigError:
    return ConfigError(
        f"config: targets.{name}.size_mb: too small for the degradation study: {what}; raise "
        f"targets.{name}.size_mb, or lower studies.degradation.extra_files or studies.degradation.memory_limit_mb"
    )


def jobs(config: dict) -> list[dict]:
    """Every run at this config's scale: target x repetition, each all three stages."""
    s = settings(config, STUDY)
    out = []
    for target in s["targets"]:
        t = for_target(s, target)
        spec = config["targets"][target]
        capacity.refuse_mount(target_spec(config, target), study="degradation",
                              why="measures a fresh file system, then the same after the extra files")
        fields = {k: t[k] for k in ("extra_files", "memory_limit_mb", "file_size_max", "runs", "loop_direct_io")}
        fields["block"] = str(t["block"])
        fields["read_runs"] = t.get("read_runs") or t["runs"]
        for key in REFERENCE_KEYS:
            if not t.get(key):
                continue
            if not reference.has_file_reference(spec.get("kind"), spec.get("model")):
                raise ConfigError(f"config: studies.degradation.{key}: only for a loop target without "
                                  f"a model (a second image on the same disk), not {target}; turn it off in "
                                  f"per_target.{target}")
            fields[key] = True
        if spec.get("kind") != "dir" and spec.get("size_mb") is not None:
            file_bytes = 2 * memory_mb(fields["memory_limit_mb"]) << 20
            need = space_needed(file_bytes, fields["extra_files"], fields["file_size_max"])
            if need > spec["size_mb"] << 20:
                raise _too_small(target, f"{spec['size_mb']} MB cannot hold the {file_bytes >> 20} MiB file and "
                                         f"2 x {fields['extra_files']} small files (about {need >> 20} MiB)")
        out += [base_job(config, "degradation", target, "stages", rep, **fields) for rep in range(1, s["repetitions"] + 1)]
    return out


def _check_space(provisioned: Provisioned, job: dict, file_bytes: int, folders: int) -> dict:
    """Free space and inodes of the mounted target against what the job will put there."""
    st = os.statvfs(provisioned.path)
    name = provisioned.spec.name
    free = st.f_bavail * st.f_frsize
    need = space_needed(file_bytes, job["extra_files"], job["file_size_max"], st.f_bsize or 4096)
    check = {"free_bytes": free, "needed_bytes": need, "free_inodes": st.f_ffree if st.f_files else None,
             "needed_inodes": 2 * job["extra_files"] + folders + 2}
    if provisioned.spec.kind == "dir":
        return check
    if free < need:
        raise _too_small(name, f"the file system has {free >> 20} MiB free, the {file_bytes >> 20} MiB file and "
                               f"2 x {job['extra_files']} small files need about {need >> 20} MiB")
    if st.f_files and st.f_ffree < check["needed_inodes"]:
        raise _too_small(name, f"the file system has {st.f_ffree} free inodes, 2 x {job['extra_files']} small "
                               f"files and their folders need {check['needed_inodes']} (ext: one inode per "
                               f"16 KiB of image unless targets.{name}.mkfs_options sets -N)")
    return check


class _Plain:
    """No cgroup (memory_limit_mb: null): run the worker as it is."""

    provenance = {"cgroup": None, "limit_mb": None}

    def run(self, argv, **kwargs):
        return subprocess.run(argv, **kwargs)

    def stats(self) -> dict:
        return {}


@contextlib.contextmanager
def _limit(limit_mb: int | None):
    if limit_mb is None:
        yield _Plain()
        return
    with memlimit.memory_limit(limit_mb, 0, scratch_dir()) as lim:
        yield lim


def _precondition(provisioned: Provisioned, block: int) -> dict | None:
    """Write the free space of a loop target once, untimed, and delete the file.

    A loop target's image is a sparse file: the first write to any of its
    blocks makes the host file system allocate it, later writes overwrite.
    Without this, the stage-0 writes would pay for that allocation and the
    later stages not, which looks like the opposite of a degradation. The
    target's file systems are mounted without `discard`, so deleting the
    file leaves the image's blocks allocated on the host."""
    if provisioned.spec.kind != "loop":
        return None
    st = os.statvfs(provisioned.path)
    free = st.f_bavail * st.f_frsize
    size = (free - max(free // 50, 64 << 20)) // (1 << 20) * (1 << 20)
    if size <= 0:
        return None
    doc = run_worker("seqio", [
        "--dir", str(provisioned.path), "--file", PRECONDITION_FILE, "--mode", "write", "--direct",
        "--block", str(block), "--size", str(size),
    ], setup=True)
    (provisioned.path / PRECONDITION_FILE).unlink(missing_ok=True)
    return doc


def measure(provisioned: Provisioned, job: dict) -> dict:
    """The three stages on one file system: fill, write the big file, read it."""
    limit_mb = job["memory_limit_mb"]
    m = memory_mb(limit_mb)
    file_bytes = 2 * m << 20
    block = parse_size(job["block"])
    n = job["extra_files"]
    folders = 2 * (n // (FOLDER_MAX // 2) + 2)  # about one per 8192 files
    space = _check_space(provisioned, job, file_bytes, folders)
    loop_dio, loop_dio_note = set_loop_direct_io(provisioned) if job.get("loop_direct_io", True) else (None, None)
    precondition = _precondition(provisioned, block)
    if precondition and (why := failure(precondition)):
        return {"status": "error", "reason": f"preconditioning the image: {why}", "precondition": precondition}
    small_root = provisioned.path / SMALL_ROOT
    small_root.mkdir()
    with contextlib.ExitStack() as stack:
        try:
            # as large as the memory limit: read in turns with the big file (twice the limit) and wrapping
            # around, none of it is still cached when it comes round again
            pair = (stack.enter_context(reference.file_reference(provisioned.spec, file_bytes // 2, block,
                                                                 job["seed"]))
                    if _referenced(job) else None)
        except WorkerError as exc:
            return {"status": "error", "reason": str(exc), "precondition": precondition}
        return _stages(provisioned, job, small_root, pair, {
            "memory_limit_mb": m, "memory_limit": "cgroup" if limit_mb is not None else "machine",
            "file_bytes": file_bytes, "block": block, "space": space, "loop_direct_io": loop_dio,
            "loop_direct_io_note": loop_dio_note, "precondition": precondition})


def _referenced(job: dict) -> bool:
    """Whether the job pairs its reads or its writes with a reference file (one file serves both)."""
    return any(job.get(key) for key in REFERENCE_KEYS)


def _stages(provisioned: Provisioned, job: dict, small_root, pair, setup: dict) -> dict:
    """The three stages inside the memory limit: fill, writes, reads (each paired with `pair` when the job
    says so)."""
    limit_mb, n, block, file_bytes = job["memory_limit_mb"], job["extra_files"], setup["block"], setup["file_bytes"]
    stages: list[dict] = []
    result = {
        "status": "ok",
        "reason": None,
        **setup,
        "read_block": READ_BLOCK,
        "runs": job["runs"],
        "read_runs": job.get("read_runs", job["runs"]),
        "read_reference": reference.READ_NAME if pair and job.get("read_reference") else None,
        "write_reference": reference.READ_NAME if pair and job.get("write_reference") else None,
        "stages": stages,
        "worker_result": None,
        "memlimit": None,
    }
    with _limit(limit_mb) as lim:
        result["memlimit"] = lim.provenance
        for stage in range(3):
            extra = stage * n
            fill = None
            why = None
            if stage > 0:
                fill = run_worker("tree", [
                    "--dir", str(small_root), "--allow-existing", "--layout", "random", "--max-depth", "1",
                    "--files", str(n), "--files-per-dir-max", str(FOLDER_MAX),
                    "--size", f"0:{job['file_size_max']}", "--size-align", str(SIZE_ALIGN), "--content", "random",
                    "--seed", str(job["seed"] * 1000 + stage),
                ], limit=lim, setup=True)
                why = failure(fill)
            files_on_disk, dirs_on_disk = count_files(small_root)
            record = {
                "stage": stage,
                "extra_files": extra,
                "files_on_disk": files_on_disk,
                "folders_on_disk": dirs_on_disk,
                "fill_seconds": fill["phases"][0]["seconds"] if fill else 0.0,
                "fill": fill,
                "usage": provisioned.usage(),
                "write": None,
                "read": None,
                "memory": None,
            }
            stages.append(record)
            if why:
                result.update(status="error", reason=f"stage {stage}, adding small files: {why}")
                break
            common = ["--dir", str(provisioned.path), "--file", BIG_FILE]
            record["write"] = run_worker("seqio", [
                *common, "--runs", str(job["runs"]), "--mode", "write", "--direct", "--block", str(block),
                "--size", str(file_bytes), "--seed", str(job["seed"]),
                *(["--pair-file", str(pair)] if result["write_reference"] else []),
            ], limit=lim)
            result["worker_result"] = result["worker_result"] or record["write"]
            if (why := failure(record["write"])):
                result.update(status="error", reason=f"stage {stage}, O_DIRECT write: {why}")
                break
            record["read"] = run_worker("seqio", [
                *common, "--runs", str(result["read_runs"]), "--mode", "read", "--block", str(READ_BLOCK),
                *(["--pair-file", str(pair)] if result["read_reference"] else []),
            ], limit=lim)
            record["memory"] = lim.stats()
            if (why := failure(record["read"])):
                result.update(status="error", reason=f"stage {stage}, buffered read: {why}")
                break
        big = provisioned.path / BIG_FILE
        result["big_file_bytes"] = big.stat().st_size if big.exists() else None
    result["memory_final"] = lim.stats()  # after teardown: the numbers taken at the end
    return result


# Rough rates for the plan's time estimate only: the big file written with
# O_DIRECT and read back, and the small files made between the stages.
ESTIMATE_WRITE_MB_PER_S = 400
ESTIMATE_READ_MB_PER_S = 800
ESTIMATE_S_PER_SMALL_FILE = 100e-6
# the read reference's file system made and mounted
ESTIMATE_REFERENCE_MKFS_S = 2.0


def tools(job: dict) -> set[str]:
    return set()


def estimate_s(job: dict) -> float:
    """Three stages of `runs` writes and reads of the big file, and the 2N small files between them."""
    file_mb = 2 * memory_mb(job["memory_limit_mb"])
    reads = job.get("read_runs", job["runs"]) * (2 if job.get("read_reference") else 1)
    writes = job["runs"] * (2 if job.get("write_reference") else 1)
    per_stage = file_mb * (writes / ESTIMATE_WRITE_MB_PER_S + reads / ESTIMATE_READ_MB_PER_S)
    reference_s = file_mb / 2 / ESTIMATE_WRITE_MB_PER_S + ESTIMATE_REFERENCE_MKFS_S if _referenced(job) else 0.0
    return 3 * per_stage + 2 * job["extra_files"] * ESTIMATE_S_PER_SMALL_FILE + reference_s

def run(job: dict) -> dict:
    """Provision the job's target, run the three stages, tear down; the raw result."""
    return run_job("degradation", job, measure, fallback_without_root=STUDY.measures_without_root)


def _seconds(phase: dict) -> float:
    """A run's own time: paired with the reference, its turns of the big file only."""
    return phase["paired"]["seconds"] if phase.get("paired") else phase["seconds"]


def _mb_per_s(phase: dict) -> float:
    """A run's rate: the worker's, or a paired run's own (its bytes over its turns' time)."""
    if not phase.get("paired"):
        return phase["mb_per_s"]
    seconds = phase["paired"]["seconds"]
    return phase["bytes"] / 1e6 / seconds if seconds > 0 else 0.0


def _median_rate(stage: dict, op: str) -> float | None:
    doc = stage.get("write" if op == "write_odirect" else "read")
    if not doc:
        return None
    return statistics.median(_mb_per_s(p) for p in doc["phases"])


def summary(doc: dict) -> str:
    """One line for the log: median MB/s per op at 0, N and 2N extra files."""
    r = doc["result"]
    if r["status"] != "ok":
        return f"{doc['job']['target']['name']}: {r['status']} ({r['reason']})"
    parts = []
    for op in OPS:
        rates = [_median_rate(s, op) for s in r["stages"]]
        parts.append(f"{op} " + " -> ".join("-" if x is None else f"{x:.0f}" for x in rates) + " MB/s")
    extras = "/".join(str(s["extra_files"]) for s in r["stages"])
    return (f"{doc['job']['target']['name']}: {r['file_bytes'] >> 20} MiB file, limit {r['memory_limit_mb']} MiB; "
            + ", ".join(parts) + f" at {extras} extra files")


COLUMNS = {
    "rep": dtypes.Int64,
    "stage": dtypes.Int64,
    "extra_files": dtypes.Int64,
    "files_on_disk": dtypes.Int64,
    "op": dtypes.String,
    "run": dtypes.Int64,
    "block": dtypes.Int64,
    "bytes": dtypes.Int64,
    "seconds": dtypes.Float64,
    "mb_per_s": dtypes.Float64,
    # a run paired with the reference (read_reference, write_reference): its rate over the reference's in
    # the same run
    "vs_reference": dtypes.Float64,
    "memory_limit_mb": dtypes.Int64,
    "file_bytes": dtypes.Int64,
    "loop_direct_io": dtypes.Boolean,
}


def rows(doc: dict) -> list[dict]:
    """One row per (stage, op, run); a skipped job is one row saying why."""
    result, job = doc["result"], doc["job"]
    base = {
        **base_row(doc, result["status"], result.get("reason")),
        "rep": job["rep"],
        "memory_limit_mb": result.get("memory_limit_mb"),
        "file_bytes": result.get("file_bytes"),
        "loop_direct_io": result.get("loop_direct_io"),
    }
    out = []
    for stage in result.get("stages", []):
        for op, key, block in (("write_odirect", "write", result["block"]), ("read", "read", result["read_block"])):
            for p in (stage.get(key) or {}).get("phases", []):
                out.append({
                    **base,
                    "stage": stage["stage"],
                    "extra_files": stage["extra_files"],
                    "files_on_disk": stage["files_on_disk"],
                    "op": op,
                    "run": p["run"] + 1,
                    "block": block,
                    "bytes": p["bytes"],
                    "seconds": _seconds(p),
                    "mb_per_s": _mb_per_s(p),
                    "vs_reference": reference.vs_reference(p),
                })
    if not out:
        out.append({**base, "stage": None, "extra_files": None, "files_on_disk": None, "op": None, "run": None,
                    "block": None, "bytes": None, "seconds": None, "mb_per_s": None, "vs_reference": None})
    return out


# Cold or warm (boatload.measure.interference records it per phase; the paper states it).
CACHE = {
    "ours": "cold where it matters: every run on a file system made for it; the O_DIRECT write bypasses the "
            "page cache, and the buffered read is of a file twice the memory limit, so most of it comes from "
            "the device; no cache is dropped between stages",
    "original": "not stated; the file was twice the machine's RAM, so its reads could not come from the cache",
}


STUDY = Study(
    name="degradation",
    order=10,
    title="Degradation",
    question="Does O_DIRECT write (and buffered read) speed fall as small files pile up?",
    settings=settings_schema(
        "dd-like O_DIRECT writes and buffered reads of a file twice the memory, "
        "at 0, N and 2N extra small files",
        ["extra_files", "memory_limit_mb"],
        extra_files={"type": "integer", "minimum": 1, "description": "N: the stages are 0, N and 2N extra files"},
        file_size_max={"type": "integer", "minimum": 0, "default": 6552,
                       "description": "small files are 0..file_size_max bytes, in steps of 8 (the original's "
                                      "dd bs=8 count=$RANDOM/40)"},
        memory_limit_mb={"type": ["integer", "null"], "minimum": 64,
                         "description": "cgroup limit; the big file is twice it (null: the machine's RAM)"},
        block={"type": "string", "pattern": "^[0-9]+[KMG]?$", "default": "12M",
               "description": "the big file's write block (dd bs=)"},
        runs={"type": "integer", "minimum": 1, "default": 5, "description": "writes and reads per stage"},
        read_runs={"type": "integer", "minimum": 1,
                   "description": "reads per stage, if not `runs` (a paired read's ratio moves little)"},
        read_reference={"type": "boolean", "default": False,
                        "description": "read the big file in turns with a file as large as the memory limit on "
                                       "a second fresh file system like the target's on the same disk, each turn timed apart; the "
                                       "read claims compare each run's rate over the reference's, which cancels "
                                       "what a slow moment of the host adds (loop targets without a model; "
                                       "boatload.measure.reference)"},
        write_reference={"type": "boolean", "default": False,
                         "description": "write the big file (O_DIRECT) in turns of one block with writes over "
                                        "the same reference file in place, each turn timed apart; the write "
                                        "claims compare each run's rate over the reference's (loop targets "
                                        "without a model)"},
        loop_direct_io={"type": "boolean", "default": True,
                        "description": "switch a loop target to direct I/O, so that O_DIRECT writes and reads "
                                       "the limit pushes out of the cache reach the host's disk, not the "
                                       "host's page cache"},
    ),
    jobs=jobs,
    run=run,
    summary=summary,
    columns=COLUMNS,
    rows=rows,
    sort=("target", "rep", "extra_files", "op", "run"),
    tools=tools,
    estimate_s=estimate_s,
    figures=("throughput", "ratios"),
    original=Original(
        citation="seed-degradation",
        hardware="a {original[memory]} virtual machine",
        rate=("mb_per_s", "MB/s"),
        scale=(
            ScaleGap("extra files per stage", ("setup", "extra_files_per_stage"), ("original", "extra_files_per_stage")),
            ScaleGap("big file", ("setup", "file_bytes"), ("original", "file_bytes"), "bytes"),
        ),
    ),
    memory_limit=("setup", "memory_limit_mb"),
    original_memory="{original[memory]}",
    not_measured_unit=("job", "jobs"),
    repetition_note=("a degradation repetition is several dd runs on one file system, "
                     "which its table counts apart"),
    baseline="no extra files",
    cache=CACHE,
)
