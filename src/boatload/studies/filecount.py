"""The file-count study: random 8 KB I/O, 70 % reads, 64 threads over 1..k files.

The original (vdbench 5.01 on VxFS, 2009): `xfersize=8k, rdpct=70,
seekpct=100, forthreads=64, elapsed=10` over k files of 100 MB made with
`mkfile`, one more file per run; IOPS nearly doubled from one file to two,
and the author suspected a per-file (single-writer) lock.

Ours, one job per target x k files x mode x repetition (point `k03-direct`):
the worker's `randio --files k --file-size S --threads T --xfer X --read-pct
P --duration D [--direct]` on a freshly made target. Its `prepare` phase lays
the files out (non-zero pseudo-random bytes, fdatasync'ed) before, and outside
the timing of, its `io` phase, which is the measurement. With `peers: [fio]`
fio runs the same job in the same job, back to back with the worker on the
same target (boatload.studies.adjacent): each tool in a fresh subdirectory
after a sync, the previous tool's files deleted; fio's files laid out by
`randio --prepare`, then fio (boatload.measure.peers.fio: psync, one job of T threads
sharing the same k files). Which tool goes first alternates with the parity
of k + rep, so that a point's repetitions alternate and, run once, half the
points start with fio; the result records the order (`order`, and each
tool's `position`). Each tool's CPU time over its timed I/O (the worker's
io phase rusage, fio's usr_cpu/sys_cpu) is kept, per operation too.

Modes: `buffered` (the page cache in between, as vdbench on VxFS without
`openflags`) and `direct` (O_DIRECT: every I/O reaches the device). A loop
target's device is the loop driver over an image file on the host; with
`loop_direct_io` (default on) the loop device is switched to direct I/O
(`losetup --direct-io=on`), so that O_DIRECT goes on to the host's disk
rather than ending in the host's page cache. On tmpfs
(and any file system whose kernel name is tmpfs) the `direct` points are
recorded as skipped with the reason: since Linux 6.6 tmpfs accepts O_DIRECT
but serves it from the page cache, so it would repeat the buffered
measurement under another name. A file system that refuses O_DIRECT is
likewise skipped for that tool with the worker's (or fio's) own message.

Without root the job runs on a plain directory on the scratch file system;
the runner marks it substituted and its rows say so (status `skipped`), as
for the forest study.
"""

from __future__ import annotations

import os
from pathlib import Path

from boatload.base import dtypes

from boatload.provision import capacity
from boatload.base import system
from boatload.base.errors import ConfigError
from boatload.measure.peers import fio
from boatload.studies import adjacent
from boatload.measure.runner import run_job
from boatload.studies.record import (PEER_REPETITIONS, Original, PeerTable, ScaleGap, Study, base_job, base_row,
                            first_rounds, first_rounds_field, for_target, more_rounds, settings, settings_schema,
                            target_spec, with_peers)
from boatload.provision.targets import Provisioned, set_loop_direct_io
from boatload.measure.worker import WorkerError, failure, phase, run_worker

WORKER = "boatload-worker"
FIO = "fio"
TOOLS = {"worker": WORKER, "fio": FIO}


def point_id(files: int, mode: str) -> str:
    return f"k{files:02d}-{mode}"


MiB = 1 << 20
# O_DIRECT transfers must be aligned to the logical block size; 4096 covers
# every target here (loop devices take the 4 KiB block size of the image's fs).
DIRECT_ALIGN = 4096


def _check(config: dict, s: dict) -> None:
    """What the settings ask of the targets, before any run."""
    if "direct" in s["modes"] and s["xfer"] % DIRECT_ALIGN:
        raise ConfigError(f"config: studies.filecount.xfer: {s['xfer']} bytes is not a multiple of {DIRECT_ALIGN}, "
                          "which O_DIRECT (modes: direct) needs")
    if s["modes"] == ["direct"] and all(_direct_skipped(config, t) for t in s["targets"]):
        raise ConfigError("config: studies.filecount.modes: direct only, on tmpfs targets only, where every point "
                          "is skipped (tmpfs has no O_DIRECT of its own): nothing would be measured")
    for name in s["targets"]:
        most = max(s["files"])
        capacity.check(target_spec(config, name), study="filecount", files=most + 2,
                       data_bytes=int(most * s["file_size_mb"] * MiB * 1.03),
                       what=f"{most} files of {s['file_size_mb']} MiB",
                       lower="studies.filecount.file_size_mb or studies.filecount.files")


def jobs(config: dict) -> list[dict]:
    """Every run at this config's scale: target x files x mode x repetition,
    each job measuring with the worker and every peer (`tools`, in run order)."""
    s = settings(config, STUDY)
    _check(config, s)
    out = []
    for target in s["targets"]:
        t = for_target(s, target)
        if target in (s.get("per_target") or {}):
            _check(config, {**t, "targets": [target]})
        tools = [WORKER] + [TOOLS[p] for p in t["peers"]]
        out += [
            base_job(
                config, "filecount", target, point_id(files, mode), rep,
                files=files, mode=mode, tools=adjacent.run_order(with_peers(tools, t, rep), files + rep),
                **{k: t[k] for k in ("file_size_mb", "threads", "xfer", "read_pct", "duration_s", "interval_s",
                                     "loop_direct_io")},
            )
            for files in t["files"]
            for mode in t["modes"]
            for rep in (claim_rounds(config, t, target, mode) if files in CLAIM_FILES
                        else first_rounds(s, "curve_repetitions"))
        ]
    return out


def claim_rounds(config: dict, t: dict, target: str, mode: str) -> range:
    """The rounds of a claim's point (1 or 2 files): the study's repetitions, or the mode's
    `mode_repetitions` where more; never more on a tmpfs's direct points, recorded as skipped."""
    more = (t.get("mode_repetitions") or {}).get(mode)
    return more_rounds(t, None if mode == "direct" and _direct_skipped(config, target) else more)


def _direct_skipped(config: dict, target: str) -> bool:
    """Whether the plan knows the target's direct points will be recorded as skipped (a tmpfs;
    `measure` also skips any file system whose kernel name turns out to be tmpfs)."""
    return config["targets"][target]["kind"] == "tmpfs"


#: the claim's points: IOPS with two files over one file
CLAIM_FILES = (1, 2)


def _skipped(reason: str, **extra) -> dict:
    return {"status": "skipped", "reason": reason, "iops": None, "read_iops": None, "write_iops": None,
            "read_pct_measured": None, "mb_per_s": None, "lat_mean_us": None, "lat_p99_us": None,
            "seconds": None, "ops": None, "prepare_seconds": None, "cpu_user_s": None, "cpu_sys_s": None,
            "cpu_us_per_op": None, "worker_result": None, "fio_result": None, **extra}


def cpu_us_per_op(user_s: float | None, sys_s: float | None, ops: int | None) -> float | None:
    """CPU microseconds per I/O: the tool's user + system time over its timed I/O, over the I/Os."""
    if user_s is None or sys_s is None or not ops:
        return None
    return (user_s + sys_s) / ops * 1e6


def _check_space(provisioned: Provisioned, job: dict) -> None:
    need = job["files"] * job["file_size_mb"] * 1024 * 1024
    st = os.statvfs(provisioned.path)
    free = st.f_bavail * st.f_frsize
    # ~3 % for metadata (extent trees, xfs's log and AG headers are already out of f_bavail)
    if free < need * 1.03 and provisioned.spec.kind != "dir":
        name = provisioned.spec.name
        raise ConfigError(
            f"config: targets.{name}.size_mb: {provisioned.spec.size_mb} MB is too small for the filecount study: "
            f"{job['files']} files of {job['file_size_mb']} MiB need {need / 2**20:.0f} MiB, the file system has "
            f"{free / 2**20:.0f} MiB free; raise targets.{name}.size_mb or lower studies.filecount.file_size_mb"
        )


def _randio_args(d: Path, job: dict) -> list[str]:
    return [
        "--dir", str(d), "--files", str(job["files"]), "--file-size", f"{job['file_size_mb']}M",
        "--threads", str(job["threads"]), "--seed", str(job["seed"]),
    ]


def _prepare_seconds(doc: dict) -> float | None:
    prep = next((p for p in doc["phases"] if p["name"] == "prepare"), None)
    return prep["seconds"] if prep else None


def interval_iops(io: dict, interval_s: float) -> list[float]:
    """The IOPS of each sampling interval of the io phase, in order, leaving
    out a last interval shorter than half the nominal one (the ops in flight
    at the deadline): vdbench's per-second lines, at our interval."""
    out, start = [], 0.0
    for s in io["intervals"]:
        if s["t_s"] - start >= interval_s / 2:
            out.append(float(s["ops_per_s"]))
        start = s["t_s"]
    return out


def _measure_worker(d: Path, job: dict) -> dict:
    interval = job.get("interval_s", 1.0)
    args = _randio_args(d, job) + [
        "--xfer", str(job["xfer"]), "--read-pct", f"{job['read_pct']:g}", "--duration", f"{job['duration_s']:g}",
        "--interval", f"{interval:g}",
    ] + (["--direct"] if job["mode"] == "direct" else [])
    doc = run_worker("randio", args)
    if doc["status"] != "ok":
        return _skipped(failure(doc), status="error", worker_result=doc)
    io = phase(doc, "io")
    reads, writes = io["reads"]["ops"], io["writes"]["ops"]
    return {
        "status": "ok",
        "reason": None,
        "ops": io["ops"],
        "reads": reads,
        "writes": writes,
        "seconds": io["seconds"],
        "iops": io["ops_per_s"],
        "read_iops": io["reads"]["ops_per_s"],
        "write_iops": io["writes"]["ops_per_s"],
        "read_pct_measured": 100 * reads / io["ops"] if io["ops"] else None,
        "mb_per_s": io["mb_per_s"],
        "lat_mean_us": io["latency_us"]["mean"],
        "lat_p99_us": io["latency_us"]["p99"],
        "interval_s": interval,
        "interval_iops": interval_iops(io, interval),
        "cpu_user_s": io["cpu_user_s"],
        "cpu_sys_s": io["cpu_sys_s"],
        "cpu_us_per_op": cpu_us_per_op(io["cpu_user_s"], io["cpu_sys_s"], io["ops"]),
        "prepare_seconds": _prepare_seconds(doc),
        "worker_result": doc,
        "fio_result": None,
    }


def _measure_fio(d: Path, job: dict) -> dict:
    prep = run_worker("randio", _randio_args(d, job) + ["--prepare"])
    if prep["status"] != "ok":
        return _skipped(failure(prep), status="error", worker_result=prep)
    argv = fio.randrw_argv(
        d, job["files"], job["file_size_mb"] * 1024 * 1024, threads=job["threads"], xfer=job["xfer"],
        read_pct=job["read_pct"], duration_s=job["duration_s"], direct=job["mode"] == "direct", seed=job["seed"],
    )
    try:
        doc = fio.run(argv, timeout_s=job["duration_s"] + 120)
    except fio.FioError as exc:
        if job["mode"] == "direct" and "Invalid argument" in str(exc):
            return _skipped(f"the file system refuses O_DIRECT: {exc}", worker_result=prep, fio_command=argv)
        return _skipped(str(exc), status="error", worker_result=prep, fio_command=argv)
    parsed = fio.parse_randrw(doc)
    return {
        "status": "ok",
        "reason": None,
        "ops": parsed["ops"],
        "reads": parsed["reads"],
        "writes": parsed["writes"],
        "seconds": parsed["seconds"],
        "iops": parsed["iops"],
        "read_iops": parsed["read_iops"],
        "write_iops": parsed["write_iops"],
        "read_pct_measured": parsed["read_pct_measured"],
        "mb_per_s": parsed["mb_per_s"],
        "lat_mean_us": parsed["lat_mean_us"],
        "lat_p99_us": parsed["lat_p99_us"],
        "cpu_user_s": parsed["cpu_user_s"],
        "cpu_sys_s": parsed["cpu_sys_s"],
        "cpu_us_per_op": cpu_us_per_op(parsed["cpu_user_s"], parsed["cpu_sys_s"], parsed["ops"]),
        "prepare_seconds": _prepare_seconds(prep),
        "worker_result": prep,
        "fio_result": doc,
        "fio_command": argv,
        "fio_version": parsed["fio_version"],
    }


def _measure_tool(d: Path, job: dict, tool: str) -> dict:
    """One tool's run in its own fresh directory `d`; a file system refusing O_DIRECT skips it."""
    try:
        return _measure_worker(d, job) if tool == WORKER else _measure_fio(d, job)
    except WorkerError as exc:
        if job["mode"] == "direct" and "--direct" in str(exc):
            return _skipped(f"the file system refuses O_DIRECT: {exc}")
        raise


def measure(provisioned: Provisioned, job: dict) -> dict:
    """Lay out k files on the target and run the random-I/O job on them, with
    each tool of the job in turn (boatload.studies.adjacent)."""
    root = provisioned.path / "filecount"
    root.mkdir()
    kernel_fs = system.fs_type(root)
    tools = job["tools"]
    if job["mode"] == "direct" and kernel_fs == "tmpfs":
        return {**_skipped(
            "tmpfs serves O_DIRECT from the page cache (Linux >= 6.6): the direct point would repeat the "
            "buffered one, so it is not measured"), "kernel_fs": kernel_fs, "order": tools, "tools": {}}
    _check_space(provisioned, job)
    loop_dio, loop_dio_note = set_loop_direct_io(provisioned) if job.get("loop_direct_io", True) else (None, None)
    results = {}
    for position, tool, result in adjacent.one_by_one(root, tools, lambda d, tool: _measure_tool(d, job, tool)):
        results[tool] = {**result, "tool": tool, "position": position}
    failed = next((r for r in results.values() if r["status"] != "ok"), None)
    return {
        "status": failed["status"] if failed else "ok",
        "reason": failed["reason"] if failed else None,
        "order": tools,
        "tools": results,
        "kernel_fs": kernel_fs,
        "loop_direct_io": loop_dio,
        "loop_direct_io_note": loop_dio_note,
    }


# Rough rate of laying out the files, for the plan's time estimate only.
ESTIMATE_LAYOUT_MB_PER_S = 1000


def tools(job: dict) -> set[str]:
    return {FIO} if "fio" in job["tools"] else set()


def estimate_s(job: dict) -> float:
    """Each tool lays out its files and runs for the duration."""
    layout = job["files"] * job["file_size_mb"] / ESTIMATE_LAYOUT_MB_PER_S
    return len(job["tools"]) * (layout + job["duration_s"])

def run(job: dict) -> dict:
    """Provision the job's target, measure, tear down; the raw result with provenance."""
    return run_job("filecount", job, measure, fallback_without_root=STUDY.measures_without_root)


def summary(doc: dict) -> str:
    """One line for the log: each tool in the order it ran."""
    job = doc["job"]
    where = f"{job['target']['name']} k={job['files']} {job['mode']} rep {job['rep']}"
    return adjacent.summary_line(where, doc["result"], _describe)


def _describe(tool: str, t: dict) -> str:
    if t["status"] != "ok":
        return f"{tool} {t['status']} ({t['reason']})"
    cpu = f", {t['cpu_us_per_op']:.2f} us CPU/I/O" if t.get("cpu_us_per_op") is not None else ""
    return (f"{tool} {t['iops']:,.0f} IOPS ({t['read_pct_measured']:.1f} % reads, "
            f"latency mean {t['lat_mean_us']:.1f} us{cpu})")


COLUMNS = {
    "files": dtypes.Int64,
    "mode": dtypes.String,
    "tool": dtypes.String,
    "rep": dtypes.Int64,
    "position": dtypes.Int64,
    "first_tool": dtypes.String,
    "threads": dtypes.Int64,
    "xfer": dtypes.Int64,
    "read_pct": dtypes.Float64,
    "file_size_mb": dtypes.Int64,
    "seconds": dtypes.Float64,
    "ops": dtypes.Int64,
    "iops": dtypes.Float64,
    "read_iops": dtypes.Float64,
    "write_iops": dtypes.Float64,
    "read_pct_measured": dtypes.Float64,
    "mb_per_s": dtypes.Float64,
    "lat_mean_us": dtypes.Float64,
    "lat_p99_us": dtypes.Float64,
    "cpu_user_s": dtypes.Float64,
    "cpu_sys_s": dtypes.Float64,
    "cpu_us_per_op": dtypes.Float64,
    "interval_s": dtypes.Float64,
    "interval_iops": dtypes.List(dtypes.Float64),
    "loop_direct_io": dtypes.Boolean,
}


def rows(doc: dict) -> list[dict]:
    """One row per tool of the job, in the order they ran; a job that measured
    nothing (skipped, or not root) gives each tool a row with its reason."""
    result, job = doc["result"], doc["job"]
    order = result.get("order") or job["tools"]
    done = result.get("tools") or {}
    out = []
    for position, tool in enumerate(order, start=1):
        r = done.get(tool, result)
        out.append({
            **base_row(doc, r["status"], r.get("reason")),
            "files": job["files"],
            "mode": job["mode"],
            "tool": tool,
            "rep": job["rep"],
            # 1: this tool ran first in the job, on the target just made
            "position": position,
            "first_tool": order[0],
            "threads": job["threads"],
            "xfer": job["xfer"],
            "read_pct": float(job["read_pct"]),
            "file_size_mb": job["file_size_mb"],
            "seconds": r.get("seconds"),
            "ops": r.get("ops"),
            "iops": r.get("iops"),
            "read_iops": r.get("read_iops"),
            "write_iops": r.get("write_iops"),
            "read_pct_measured": r.get("read_pct_measured"),
            "mb_per_s": r.get("mb_per_s"),
            "lat_mean_us": r.get("lat_mean_us"),
            "lat_p99_us": r.get("lat_p99_us"),
            "cpu_user_s": r.get("cpu_user_s"),
            "cpu_sys_s": r.get("cpu_sys_s"),
            "cpu_us_per_op": r.get("cpu_us_per_op"),
            # per-interval IOPS of the worker's io phase (fio: none); the notebook's samples at one repetition
            "interval_s": r.get("interval_s"),
            "interval_iops": r.get("interval_iops"),
            "loop_direct_io": result.get("loop_direct_io"),
        })
    return out


# Cold or warm (boatload.measure.interference records it per phase; the paper states it).
CACHE = {
    "ours": "warm: each tool's files are laid out (written and synced) right before it runs, on a file system "
            "made for the job, so buffered I/O finds them in the page cache; O_DIRECT bypasses the cache",
    "original": "not stated; the files were made with mkfile before the runs",
}


def claim_points(claim: dict, jobs: list[dict]) -> set[tuple[str, str]]:
    """A claim compares k files with one, in one mode, on its target."""
    wanted = {(claim.get("target"), point_id(k, claim.get("mode", ""))) for k in (1, claim.get("files") or 1)}
    return {(j["target"]["name"], j["point"]) for j in jobs} & wanted


STUDY = Study(
    name="filecount",
    order=40,
    title="File count",
    question="Do IOPS grow with the number of files (a per-file lock)?",
    settings=settings_schema(
        "randio 8 KB, 70 % reads, 64 threads over 1..k files",
        ["files"],
        files={"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "integer", "minimum": 1},
               "description": "the numbers of files the threads spread their I/O over, one point each"},
        curve_repetitions=first_rounds_field("each point of the curve beside the claim's 1 and 2 files"),
        mode_repetitions={"description": "rounds the claim's points (1 and 2 files) of a mode are measured in, "
                                         "where more than the study's repetitions (mode: rounds): a mode whose "
                                         "runs spread so widely that 4 unpaired runs a side leave its claim "
                                         "open rests on more pairs from the start, and gets no look",
                          "type": "object", "default": {}, "propertyNames": {"enum": ["buffered", "direct"]},
                          "additionalProperties": {"type": "integer", "minimum": 1}},
        file_size_mb={"type": "integer", "minimum": 1, "default": 32, "description": "MiB per file"},
        threads={"type": "integer", "minimum": 1, "maximum": 256, "default": 64},
        xfer={"type": "integer", "minimum": 512, "default": 8192, "description": "bytes per I/O"},
        read_pct={"type": "integer", "minimum": 0, "maximum": 100, "default": 70},
        duration_s={"type": "number", "exclusiveMinimum": 0, "default": 5},
        interval_s={"type": "number", "minimum": 0.05, "default": 1.0,
                    "description": "the worker's sampling interval: the IOPS of each interval are the samples "
                                   "of a point's bootstrap when it has one repetition (vdbench printed one "
                                   "line per second)"},
        modes={"type": "array", "minItems": 1, "uniqueItems": True,
               "items": {"enum": ["buffered", "direct"]}, "default": ["buffered", "direct"],
               "description": "direct on tmpfs is recorded as skipped: tmpfs serves O_DIRECT from the page cache"},
        peers={"type": "array", "uniqueItems": True, "items": {"enum": ["fio"]}, "default": [],
               "description": "tools measured beside the worker at every point"},
        peer_repetitions=PEER_REPETITIONS,
        loop_direct_io={"type": "boolean", "default": True,
                        "description": "switch a loop target to direct I/O, so that O_DIRECT reaches the "
                                       "host's disk, not its page cache"},
    ),
    jobs=jobs,
    run=run,
    summary=summary,
    claim_points=claim_points,
    columns=COLUMNS,
    rows=rows,
    sort=("target", "mode", "files", "rep", "tool"),
    tools=tools,
    estimate_s=estimate_s,
    measures_without_root=True,
    figures=("iops", "ratios"),
    original=Original(
        citation="seed-filecount",
        hardware="{original[filesystem]} under {original[tool]}",
        rate=("iops", "IOPS"),
        scale=(
            ScaleGap("file size", ("setup", "file_size_mb"), ("original", "file_size_mb"), "MB"),
            ScaleGap("threads", ("setup", "threads"), ("original", "threads")),
        ),
    ),
    peers=PeerTable(peer="fio", table="filecount-peers.csv", column="worker_over_fio",
                    role="fio in the place of the original's vdbench"),
    not_measured_unit=("tool's run", "tools' runs"),
    baseline="one file",
    cache=CACHE,
)
