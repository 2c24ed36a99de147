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
every point has a twin (`k03-direct-fio`) on its own freshly made target:
the same files laid out by `randio --prepare`, then fio running the same job
(boatload.peers.fio: psync, one job of T threads sharing the same k files).

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
likewise skipped with the worker's (or fio's) own message.

Without root the job runs on a plain directory on the scratch file system;
the runner marks it substituted and its rows say so (status `skipped`), as
for the forest study.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from boatload import system
from boatload.config import ConfigError
from boatload.peers import fio
from boatload.runner import run_job
from boatload.targets import Provisioned, set_loop_direct_io
from boatload.worker import WorkerError, phase, run_worker

WORKER = "boatload-worker"
FIO = "fio"
TOOLS = {"worker": WORKER, "fio": FIO}


def _settings(config: dict) -> dict:
    study = config["studies"]["filecount"]
    return {
        "file_size_mb": study.get("file_size_mb", 32),
        "threads": study.get("threads", 64),
        "xfer": study.get("xfer", 8192),
        "read_pct": study.get("read_pct", 70),
        "duration_s": study.get("duration_s", 5),
        "interval_s": study.get("interval_s", 1.0),
        "modes": study.get("modes", ["buffered", "direct"]),
        "peers": study.get("peers", []),
        "loop_direct_io": study.get("loop_direct_io", True),
        "reps": study.get("repetitions", config["repetitions"]),
    }


def point_id(files: int, mode: str, tool: str) -> str:
    base = f"k{files:02d}-{mode}"
    return base if tool == WORKER else f"{base}-{tool}"


def jobs(config: dict) -> list[dict]:
    """Every run at this config's scale: target x files x mode x (worker, peers) x repetition."""
    study = config["studies"]["filecount"]
    s = _settings(config)
    tools = [WORKER] + [TOOLS[p] for p in s["peers"]]
    return [
        {
            "study": "filecount",
            "scale": config["scale"],
            "target": {"name": target, **config["targets"][target]},
            "point": point_id(files, mode, tool),
            "rep": rep,
            "files": files,
            "mode": mode,
            "tool": tool,
            "file_size_mb": s["file_size_mb"],
            "threads": s["threads"],
            "xfer": s["xfer"],
            "read_pct": s["read_pct"],
            "duration_s": s["duration_s"],
            "interval_s": s["interval_s"],
            "loop_direct_io": s["loop_direct_io"],
            "seed": config["seed"] + rep,
        }
        for target in study["targets"]
        for files in study["files"]
        for mode in s["modes"]
        for tool in tools
        for rep in range(1, s["reps"] + 1)
    ]


def _skipped(reason: str, **extra) -> dict:
    return {"status": "skipped", "reason": reason, "iops": None, "read_iops": None, "write_iops": None,
            "read_pct_measured": None, "mb_per_s": None, "lat_mean_us": None, "lat_p99_us": None,
            "seconds": None, "ops": None, "prepare_seconds": None, "worker_result": None, "fio_result": None, **extra}


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
        return _skipped(None, status="error", reason=(doc.get("error") or {}).get("message", doc["status"]),
                        worker_result=doc)
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
        "prepare_seconds": _prepare_seconds(doc),
        "worker_result": doc,
        "fio_result": None,
    }


def _measure_fio(d: Path, job: dict) -> dict:
    prep = run_worker("randio", _randio_args(d, job) + ["--prepare"])
    if prep["status"] != "ok":
        return _skipped(None, status="error", reason=(prep.get("error") or {}).get("message", prep["status"]),
                        worker_result=prep)
    argv = fio.randrw_argv(
        d, job["files"], job["file_size_mb"] * 1024 * 1024, threads=job["threads"], xfer=job["xfer"],
        read_pct=job["read_pct"], duration_s=job["duration_s"], direct=job["mode"] == "direct", seed=job["seed"],
    )
    try:
        doc = fio.run(argv, timeout_s=job["duration_s"] + 120)
    except fio.FioError as exc:
        if job["mode"] == "direct" and "Invalid argument" in str(exc):
            return _skipped(f"the file system refuses O_DIRECT: {exc}", worker_result=prep, fio_command=argv)
        return _skipped(None, status="error", reason=str(exc), worker_result=prep, fio_command=argv)
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
        "prepare_seconds": _prepare_seconds(prep),
        "worker_result": prep,
        "fio_result": doc,
        "fio_command": argv,
        "fio_version": parsed["fio_version"],
    }


def measure(provisioned: Provisioned, job: dict) -> dict:
    """Lay out k files on the target and run the random-I/O job on them (worker or fio)."""
    d = provisioned.path / "filecount"
    d.mkdir()
    kernel_fs = system.fs_type(d)
    if job["mode"] == "direct" and kernel_fs == "tmpfs":
        return _skipped(
            "tmpfs serves O_DIRECT from the page cache (Linux >= 6.6): the direct point would repeat the "
            "buffered one, so it is not measured", kernel_fs=kernel_fs)
    _check_space(provisioned, job)
    loop_dio, loop_dio_note = set_loop_direct_io(provisioned) if job.get("loop_direct_io", True) else (None, None)
    try:
        result = _measure_worker(d, job) if job["tool"] == WORKER else _measure_fio(d, job)
    except WorkerError as exc:
        if job["mode"] == "direct" and "--direct" in str(exc):
            return _skipped(f"the file system refuses O_DIRECT: {exc}", kernel_fs=kernel_fs)
        raise
    result.update(kernel_fs=kernel_fs, loop_direct_io=loop_dio, loop_direct_io_note=loop_dio_note)
    return result


def run(job: dict) -> dict:
    """Provision the job's target, measure, tear down; the raw result with provenance."""
    return run_job("filecount", job, measure, fallback_without_root=True)


def summary(doc: dict) -> str:
    """One line for the log."""
    r, job = doc["result"], doc["job"]
    where = f"{job['target']['name']} k={job['files']} {job['mode']} {job['tool']}"
    if r["status"] != "ok":
        return f"{where}: {r['status']} ({r['reason']})"
    return (f"{where}: {r['iops']:,.0f} IOPS, {r['read_pct_measured']:.1f} % reads, {r['mb_per_s']:.1f} MB/s, "
            f"latency mean {r['lat_mean_us']:.1f} us, p99 {r['lat_p99_us']:.1f} us")


SCHEMA = {
    "host": pl.String,
    "study": pl.String,
    "target": pl.String,
    "filesystem": pl.String,
    "files": pl.Int64,
    "mode": pl.String,
    "tool": pl.String,
    "rep": pl.Int64,
    "threads": pl.Int64,
    "xfer": pl.Int64,
    "read_pct": pl.Float64,
    "file_size_mb": pl.Int64,
    "seconds": pl.Float64,
    "ops": pl.Int64,
    "iops": pl.Float64,
    "read_iops": pl.Float64,
    "write_iops": pl.Float64,
    "read_pct_measured": pl.Float64,
    "mb_per_s": pl.Float64,
    "lat_mean_us": pl.Float64,
    "lat_p99_us": pl.Float64,
    "interval_s": pl.Float64,
    "interval_iops": pl.List(pl.Float64),
    "loop_direct_io": pl.Boolean,
    "status": pl.String,
    "reason": pl.String,
    "worker_version": pl.String,
    "kernel": pl.String,
    "started_at": pl.String,
}

SORT = ["target", "mode", "files", "tool", "rep"]


def rows(doc: dict) -> list[dict]:
    """One row per run."""
    result, target, job = doc["result"], doc["target"], doc["job"]
    substituted = target.get("substituted")
    return [{
        "host": doc["machine"]["host"],
        "study": doc["study"],
        "target": job["target"]["name"],
        "filesystem": target["fs"],
        "files": job["files"],
        "mode": job["mode"],
        "tool": job["tool"],
        "rep": job["rep"],
        "threads": job["threads"],
        "xfer": job["xfer"],
        "read_pct": float(job["read_pct"]),
        "file_size_mb": job["file_size_mb"],
        "seconds": result.get("seconds"),
        "ops": result.get("ops"),
        "iops": result.get("iops"),
        "read_iops": result.get("read_iops"),
        "write_iops": result.get("write_iops"),
        "read_pct_measured": result.get("read_pct_measured"),
        "mb_per_s": result.get("mb_per_s"),
        "lat_mean_us": result.get("lat_mean_us"),
        "lat_p99_us": result.get("lat_p99_us"),
        # per-interval IOPS of the worker's io phase (fio: none); the notebook's samples at one repetition
        "interval_s": result.get("interval_s"),
        "interval_iops": result.get("interval_iops"),
        "loop_direct_io": result.get("loop_direct_io"),
        # A run on a stand-in directory is not a measurement of the target it stands for.
        "status": "skipped" if substituted and result["status"] == "ok" else result["status"],
        "reason": substituted or result.get("reason"),
        "worker_version": doc["worker"]["version"],
        "kernel": doc["machine"]["kernel"],
        "started_at": doc["started_at"],
    }]
