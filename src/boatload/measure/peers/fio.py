"""fio as a peer of the worker's `randio`: the same random-I/O job, fio's numbers.

The job is vdbench's `rdpct=70, xfersize=8k, seekpct=100, forthreads=64` over
k files, as the worker runs it:

    fio --name=filecount --directory=DIR --filename=f000:f001:... --filesize=S
        --ioengine=psync --thread --numjobs=T --rw=randrw --rwmixread=P --bs=X
        --direct=0|1 --time_based --runtime=D --file_service_type=random
        --norandommap --randrepeat=0 --randseed=SEED --invalidate=0
        --fadvise_hint=0 --allow_file_create=0 --disable_lat=1 --clat_percentiles=1
        --disable_bw_measurement=1 --iomem_align=4096 --scramble_buffers=0
        --group_reporting --unified_rw_reporting=both --output-format=json

- `--filename` lists the k files by name (the worker's names, `f000`...), so
  all T jobs (threads) open the SAME k files, not T x k files of their own;
  `--file_service_type=random` picks a file at random for every I/O, as the
  worker does; `--norandommap` draws offsets with replacement, like the worker.
- The files are laid out beforehand by the worker's `randio --prepare` (the
  same content, fdatasync'ed), so fio neither creates nor extends anything
  (`--allow_file_create=0`) and the buffered run starts with the page cache
  as warm as the worker's own run (`--invalidate=0`: fio would otherwise drop
  the files' cached pages before starting).
- `--fadvise_hint=0`: by default fio tells the kernel POSIX_FADV_RANDOM for a
  random job, which turns read-ahead off; the worker (like vdbench) gives no
  hint. On a cold ext4 file that alone made fio's buffered IOPS 25-35 % lower
  here (bench/randio.py).
- psync is one pread/pwrite per I/O per thread, the worker's loop.
- `--disable_lat=1 --clat_percentiles=1`: fio measures each I/O once, as the
  worker does: its completion latency (with psync the time of the
  pread/pwrite), with percentiles. By default fio also keeps a second
  statistic of the same I/O, the total latency, which with psync repeats the
  completion latency. (Dropping it did not measurably change fio's IOPS,
  even on buffered tmpfs where both tools are CPU-bound: bench/README.md.)
- `--disable_bw_measurement=1`: fio counts throughput as the worker does,
  from its totals (IOPS = I/Os over the run time); by default every thread
  also adds a bandwidth and an IOPS sample after each I/O, its own
  bookkeeping, which the worker leaves to one sampling thread. It changes
  nothing in the I/O fio does; where both tools are CPU-bound it was fio's
  extra CPU per I/O (bench/README.md, "fio's per-I/O bookkeeping").
  `default_latency=True` puts both back (fio's default statistics), for the
  bench's control row.
- `--iomem_align=4096 --scramble_buffers=0`: fio's I/O buffers as the
  worker's, page-aligned (fio aligns them only for O_DIRECT by default, and
  the kernel's copy into and out of an unaligned buffer costs more system
  time per I/O), each thread writing its one buffer as it is (by default fio
  changes a few bytes of the buffer before every write, to defeat
  deduplication). The I/O, offsets and sizes are the same either way.
- `--group_reporting` sums the T jobs; `--unified_rw_reporting=both` adds a
  "mixed" section with the latency of reads and writes together.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from boatload.measure import interference


class FioError(RuntimeError):
    """fio is missing, failed, or printed no usable JSON."""


def version() -> str | None:
    exe = shutil.which("fio")
    if exe is None:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True)
    return out.stdout.strip() or None


def file_names(k: int) -> list[str]:
    """The worker's randio names: f000..f<k-1>, padded to max(3, digits(k-1))."""
    width = max(3, len(str(k - 1)))
    return [f"f{i:0{width}d}" for i in range(k)]


def randrw_argv(
    directory: Path, files: int, file_size: int, *, threads: int, xfer: int, read_pct: float,
    duration_s: float, direct: bool, seed: int, default_latency: bool = False,
) -> list[str]:
    """The fio command line of the filecount job (fio's default latency
    statistics too with `default_latency`)."""
    exe = shutil.which("fio")
    if exe is None:
        raise FioError("fio is not installed (Debian package fio)")
    runtime_ms = max(1, round(duration_s * 1000))
    return [
        exe, "--name=filecount", f"--directory={directory}",
        "--filename=" + ":".join(file_names(files)), f"--filesize={file_size}",
        "--ioengine=psync", "--thread", f"--numjobs={threads}",
        "--rw=randrw", f"--rwmixread={read_pct:g}", f"--bs={xfer}", f"--direct={int(direct)}",
        "--time_based", f"--runtime={runtime_ms}ms", "--file_service_type=random",
        "--norandommap", "--randrepeat=0", f"--randseed={seed}", "--invalidate=0", "--fadvise_hint=0",
        "--allow_file_create=0", "--iomem_align=4096", "--scramble_buffers=0",
        *([] if default_latency else ["--disable_lat=1", "--clat_percentiles=1", "--disable_bw_measurement=1"]),
        "--group_reporting", "--unified_rw_reporting=both", "--output-format=json",
    ]


def json_doc(text: str) -> dict:
    """The JSON document in fio's stdout (it may print lines before it)."""
    start = text.find("{")
    if start < 0:
        raise FioError(f"fio printed no JSON: {text[:300]!r}")
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise FioError(f"fio's JSON does not parse ({exc}): {text[start:start + 300]!r}") from None


def run(argv: list[str], timeout_s: float) -> dict:
    """Run fio; its JSON document. With an active interference monitor, the run is one timed phase."""
    with interference.tool_phase("fio"):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip())[-600:]
        raise FioError(f"fio exited {proc.returncode}: {said}")
    return json_doc(proc.stdout)


def _p99_us(section: dict) -> float | None:
    value = ((section.get("clat_ns") or {}).get("percentile") or {}).get("99.000000")
    return value / 1000 if value is not None else None


def parse_randrw(doc: dict) -> dict:
    """Totals of the (group-reported) job: IOPS, read share, bandwidth, latency.

    IOPS are fio's own (I/Os over each direction's runtime); latency is fio's
    completion latency (`clat_ns`: with psync the time of the pread/pwrite),
    mean and 99th percentile over reads and writes together
    (the "mixed" section; without it, the mean weighted by I/Os and the larger
    of the two p99s)."""
    jobs = doc.get("jobs") or []
    if len(jobs) != 1:
        raise FioError(f"expected one (group-reported) job in fio's JSON, found {len(jobs)}")
    job = jobs[0]
    if job.get("error"):
        raise FioError(f"fio job error {job['error']}")
    read, write = job["read"], job["write"]
    reads, writes = int(read["total_ios"]), int(write["total_ios"])
    total = reads + writes
    if total == 0:
        raise FioError("fio did no I/O")
    mixed = job.get("mixed")
    if mixed and mixed.get("total_ios"):
        lat_mean_us = mixed["clat_ns"]["mean"] / 1000
        lat_p99_us = _p99_us(mixed)
    else:
        lat_mean_us = (read["clat_ns"]["mean"] * reads + write["clat_ns"]["mean"] * writes) / total / 1000
        p99s = [p for p in (_p99_us(read) if reads else None, _p99_us(write) if writes else None) if p is not None]
        lat_p99_us = max(p99s) if p99s else None
    runtime_ms = max(read.get("runtime", 0), write.get("runtime", 0))
    cpu_user_s, cpu_sys_s = _cpu_seconds(job)
    return {
        "ops": total,
        "reads": reads,
        "writes": writes,
        "seconds": runtime_ms / 1000 if runtime_ms else None,
        "iops": read["iops"] + write["iops"],
        "read_iops": read["iops"],
        "write_iops": write["iops"],
        "read_pct_measured": 100 * reads / total,
        "mb_per_s": (read["bw_bytes"] + write["bw_bytes"]) / 1e6,
        "lat_mean_us": lat_mean_us,
        "lat_p99_us": lat_p99_us,
        "cpu_user_s": cpu_user_s,
        "cpu_sys_s": cpu_sys_s,
        "fio_version": doc.get("fio version"),
    }


def _cpu_seconds(job: dict) -> tuple[float | None, float | None]:
    """User and system CPU seconds of the job's I/O threads.

    fio's usr_cpu/sys_cpu are the threads' CPU time (getrusage per thread)
    over `job_runtime`, and with group reporting both add up over the threads
    (job_runtime is then threads x the run's length), so CPU seconds are the
    percentage times job_runtime."""
    runtime_ms = job.get("job_runtime")
    if not runtime_ms or job.get("usr_cpu") is None or job.get("sys_cpu") is None:
        return None, None
    return job["usr_cpu"] / 100 * runtime_ms / 1000, job["sys_cpu"] / 100 * runtime_ms / 1000
