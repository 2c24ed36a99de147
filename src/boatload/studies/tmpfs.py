"""One run of the tmpfs study: bonnie++'s six small-file tests, tmpfs vs ext3, inside and beyond memory.

The original (a 2008 blog post) ran `bonnie++ -f -s 0 -n N:250000:0:1000`
(N x 1024 files of 0..250,000 bytes in 1000 directories) on a 4 GB machine:
20k files (about 2.5 GB) fit in RAM, 50k files (6.25 GB) did not, and
beyond RAM tmpfs lost its lead because its pages went to swap.

**Memory.** Instead of a machine with little RAM, the measuring process runs
in a cgroup memory limit of M = `memory_limit_mb` (null: the machine's RAM)
with a swap file of `swap_mb` (boatload.provision.memlimit). Page-cache and tmpfs pages
are charged to the cgroup of the process that writes them, so once the files
outgrow M, tmpfs pages go to the swap file and ext3's clean pages are dropped
(its dirty ones written back first): that is what makes "beyond RAM" real at
hundreds of MB. The number of files of a working-set multiple w is
round(w x M MiB / (size_max / 2)), the mean of bonnie's uniform sizes 0..max;
w <= 1 is labelled "fits in RAM", w > 1 "beyond RAM". A run OOM-killed
while the swap file still had room (the kernel's reclaim giving up; see
reclaim_gave_up) is run again in a fresh limit, up to three times in all;
the given-up attempts stay in the result (`reclaim_gave_up`).

**The worker's bonnie.** One `meta` call does bonnie's six tests in its order
on two trees, one after the other (the second made after the first is gone):

    create:seq, stat:seq, read:seq, delete:seq, create:rand, stat:rand, read:rand, delete:rand

over `--files N --dirs D --size 0:MAX --content random --threads 1` (one
process, as bonnie++; random bytes, so nothing can store a page as "all zero").

- Create: `openat(O_CREAT|O_EXCL)` + write the file's bytes + close.
- Read: bonnie++'s "Read" of `-n` is not a read test but `stat()` of each
  file, and, when the file has data (max size > 0), open + read of all of it +
  close (bon_file.cpp, COpenTest::stat_file). So our "read" is the worker's
  `stat` phase and then its `read` phase (open, read to EOF, close) in the
  same order, and the rate is files / (stat seconds + read seconds). The CPU
  share adds both phases' CPU over both phases' time. p50/p99 are the sums of
  the two phases' percentiles (an approximation: there is no per-file
  histogram of stat+read). Small differences: the worker opens and reads a
  0-byte file too, bonnie++ only stats it; bonnie's sequential stat follows
  readdir order, the worker's index order (the creation order).
- Delete: `unlinkat`, then the directories.
- Random: the worker's random order is a keyed permutation of all files;
  bonnie++ instead creates names whose random part comes first, in numeric
  order, then stats and deletes in a shuffled order.

**bonnie++ itself** runs in the same job as the worker when the config's
`peers` has `bonnie`, back to back with it on the same freshly made target
(boatload.studies.adjacent: each tool in a fresh directory after a sync, the
other's files gone), each in a fresh memory limit of the same size, the
order alternating with the repetition (`order`, each tool's `position`):
`bonnie++ -s 0 -n K:MAX:0:D -u root -q -z SEED -d DIR` with
K = round(files / 1024) (bonnie counts in 1024s), parsed by
boatload.measure.peers.bonnie. Its tests that take less than 500 ms print `+++++`
and have no rate here (null); its latency is the slowest single operation,
not a percentile (`max_us`). Each test keeps the tool's CPU per file
(`cpu_us_per_op`: the worker's phase rusage over its files; bonnie++'s %CPU
over its rate).

**Sizes.** The target must hold the whole working set: an estimate of
files x (size_max / 2 + 4 KiB), the mean file plus page rounding, must fit in
the target's `size_mb` (for a loop image, 90 % of it, for the file system's
own structures), and a tmpfs working set beyond M must fit in M plus the
swap file; otherwise jobs() raises a ConfigError naming the field.

**The disk behind ext3.** An ext3 loop image is a file on the host's file
system. Read through the host's page cache, its blocks stay in host memory
outside the cgroup (the loop driver's I/O is not charged to our cgroup v1
memory limit), so "beyond RAM" ext3 would read from RAM after all, while
tmpfs's swap file is read from the disk. With `loop_direct_io` (default on)
the loop device is switched to direct I/O (`losetup --direct-io=on`) before
the run: pages the limit pushes out of ext3's cache are then read back from
the disk, as tmpfs's are from swap on the same disk. On one quick-scale run
(1.6 x 512 MiB) that took ext3's sequential read from about 6,800 to 2,600
files/s. Where the loop driver refuses direct I/O, the run goes on without
it and the rows say so (`loop_direct_io` false, and the reason).

**On a modelled disk.** A tmpfs target with `model:` swaps to that disk
(boatload.provision.targets.tmpfs): each run's memory limit makes its swap file on the
target's `swap_dir` (`swap_on` in the result), so beyond the limit tmpfs
pages go to and come back from the model, as ext3's blocks do on an ext3
target with the same model: both sides of a claim on one disk, as in the
original. While a run holds it, that swap file is the machine's
highest-priority swap, so under memory pressure of its own the host may
page other processes out to it too, and swapoff reads them back at the
model's pace.

Without root nothing is measured: the job is recorded as skipped with the reason.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from boatload.base import dtypes

from boatload.provision import capacity, memlimit
from boatload.base import system
from boatload.provision.devmodel import phasecounts
from boatload.base.errors import ConfigError
from boatload.base.paths import scratch_dir
from boatload.measure.peers import bonnie
from boatload.studies import adjacent
from boatload.measure.runner import run_job
from boatload.studies.record import (PEER_REPETITIONS, Original, PeerTable, ScaleGap, Study, base_job, base_row,
                            for_target, settings, settings_schema, target_spec, with_peers)
from boatload.provision.targets import Provisioned, set_loop_direct_io
from boatload.provision.devmodel.presets import THIS_MACHINE, hardware
from boatload.measure.worker import WorkerError, failure, run_worker

MiB = 1024 * 1024
PAGE = 4096
LOOP_USABLE = capacity.USABLE  # share of a loop image the files may take

# The reference's names for bonnie's six tests, in bonnie's order, and the
# worker phases (indexes into PHASES) that make each.
PHASES = ("create:seq", "stat:seq", "read:seq", "delete:seq", "create:rand", "stat:rand", "read:rand", "delete:rand")
TESTS = (
    ("sequential_create", (0,)),
    ("sequential_read", (1, 2)),
    ("sequential_delete", (3,)),
    ("random_create", (4,)),
    ("random_read", (5, 6)),
    ("random_delete", (7,)),
)
TOOLS = {"worker": "boatload-worker", "bonnie": "bonnie++"}
RECLAIM_ATTEMPTS = 3  # runs of a job whose OOM kill was the kernel's reclaim giving up (reclaim_gave_up)


# --------------------------------------------------------------------------
# sizes


def memory_limit_mb(study: dict) -> int:
    """M in MiB: the configured limit, or the machine's RAM when it is null."""
    configured = study.get("memory_limit_mb")
    return int(configured) if configured else system.memory_bytes() // MiB


def working_set_files(w: float, limit_mb: int, size_max: int) -> int:
    """round(w x M / mean file size), the mean of uniform 0..size_max being size_max / 2."""
    if size_max <= 0:
        raise ConfigError("config: studies.tmpfs.size_max: must be > 0 to size the working set in files")
    return max(1, round(w * limit_mb * MiB / (size_max / 2)))


def footprint_mb(files: int, size_max: int) -> float:
    """What the files take: the mean size plus page rounding, per file."""
    return files * (size_max / 2 + PAGE) / MiB


def working_set_label(w: float) -> str:
    return "fits in RAM" if w <= 1 else "beyond RAM"


def check_sizes(target: dict, w: float, files: int, size_max: int, limit_mb: int, swap_mb: int) -> None:
    """The target holds the working set, and tmpfs beyond the limit has swap for the rest."""
    need = footprint_mb(files, size_max)
    name, size = target["name"], target.get("size_mb")
    usable = size if target.get("kind") == "tmpfs" else (size * LOOP_USABLE if size else None)
    if usable is not None and need > usable:
        raise ConfigError(
            f"config: targets.{name}.size_mb: {size} MiB cannot hold the working set of "
            f"studies.tmpfs.working_set {w:g} ({files} files of up to {size_max} bytes, about {need:.0f} MiB); "
            f"make targets.{name}.size_mb at least {need / (1 if target.get('kind') == 'tmpfs' else LOOP_USABLE):.0f} "
            "or lower the working set"
        )
    if target.get("kind") == "tmpfs" and need > limit_mb + swap_mb:
        raise ConfigError(
            f"config: studies.tmpfs.swap_mb: {swap_mb} MiB of swap and a {limit_mb} MiB limit cannot hold "
            f"the tmpfs working set {w:g} (about {need:.0f} MiB); make studies.tmpfs.swap_mb at least {need - limit_mb:.0f}"
        )


# --------------------------------------------------------------------------
# jobs


def point(w: float) -> str:
    return f"ws{w:g}"


def tool_files(job: dict, tool: str) -> int:
    """The files a tool of the job makes: bonnie++ counts in 1024s."""
    return job["bonnie_files"] if tool == "bonnie" else job["files"]


def jobs(config: dict) -> list[dict]:
    """Every run at this config's scale: target x working set x repetition,
    each job measuring with the worker and, where configured, bonnie++ (`tools`, in run order)."""
    study = settings(config, STUDY)
    out = []
    for name in study["targets"]:
        s = for_target(study, name)
        limit_mb = memory_limit_mb(s)
        swap_mb, size_max = s["swap_mb"], s["size_max"]
        tools = ["worker", *[p for p in s["peers"] if p == "bonnie"]]
        target = target_spec(config, name)
        capacity.refuse_mount(target, study="tmpfs", why="needs a fresh file system per run (an empty cache to fill)")
        for w in s["working_set"]:
            files = working_set_files(w, limit_mb, size_max)
            files_k = bonnie.files_k(files) if "bonnie" in tools else None
            for n in (files, *([files_k * 1024] if files_k else [])):
                check_sizes(target, w, n, size_max, limit_mb, swap_mb)
            out += [
                base_job(
                    config, "tmpfs", name, point(w), rep,
                    tools=adjacent.run_order(with_peers(tools, s, rep), rep + 1), working_set=w, files=files,
                    bonnie_files_k=files_k, bonnie_files=files_k * 1024 if files_k else None,
                    dirs=min(s["dirs"], files), size_min=0, size_max=size_max, memory_limit_mb=limit_mb,
                    memory_limit_configured=s["memory_limit_mb"], swap_mb=swap_mb,
                    loop_direct_io=s["loop_direct_io"],
                )
                for rep in range(1, s["repetitions"] + 1)
            ]
    return out


# --------------------------------------------------------------------------
# measuring


def worker_args(root: Path, job: dict) -> list[str]:
    return [
        "--dir", str(root), "--files", str(job["files"]), "--dirs", str(job["dirs"]),
        "--size", f"{job['size_min']}:{job['size_max']}", "--content", "random",
        "--phases", ",".join(PHASES), "--threads", "1", "--seed", str(job["seed"]),
    ]


def _sum(values):
    values = list(values)
    return None if not values or any(v is None for v in values) else sum(values)


def worker_tests(doc: dict, files: int) -> list[dict]:
    """bonnie's six tests from the worker's eight phases (see the module docstring)."""
    phases = doc["phases"]
    out = []
    for step, (test, idx) in enumerate(TESTS, start=1):
        got = [phases[i] for i in idx if i < len(phases)]
        for i, ph in zip(idx, got):
            name, order = PHASES[i].split(":")
            if ph["name"] != name or ph.get("order", "sequential")[:3] != order[:3]:
                raise WorkerError(f"worker phase {i} is {ph['name']}:{ph.get('order')}, expected {PHASES[i]}")
        if len(got) < len(idx):
            out.append({"test": test, "step": step, "ops": None, "seconds": None, "ops_per_s": None,
                        "cpu_pct": None, "cpu_us_per_op": None, "p50_us": None, "p99_us": None, "max_us": None,
                        "complete": False})
            continue
        seconds = sum(ph["seconds"] for ph in got)
        model = phasecounts.requests(got)
        cpu = sum(ph["cpu_user_s"] + ph["cpu_sys_s"] for ph in got)
        ops = min(ph["ops"] for ph in got)
        lats = [ph.get("latency_us") or {} for ph in got]
        out.append({
            "test": test,
            "step": step,
            "ops": ops,
            "seconds": seconds,
            "ops_per_s": ops / seconds if ops and seconds > 0 else None,
            "cpu_pct": 100 * cpu / seconds if seconds > 0 else None,
            "cpu_us_per_op": cpu / ops * 1e6 if ops else None,
            "p50_us": _sum(lat.get("p50") for lat in lats),
            "p99_us": _sum(lat.get("p99") for lat in lats),
            "max_us": _sum(lat.get("max") for lat in lats),
            "complete": ops == files,
            **({"requests": model} if model else {}),
        })
    return out


def bonnie_tests(parsed: dict) -> list[dict]:
    out = []
    for step, t in enumerate(parsed["tests"], start=1):
        out.append({
            "test": t["test"],
            "step": step,
            "ops": parsed["files"],
            "seconds": None,
            "ops_per_s": t["ops_per_s"],
            "cpu_pct": t["cpu_pct"],
            # its %CPU of the test's time over files per second: CPU per file
            "cpu_us_per_op": t["cpu_pct"] / 100 / t["ops_per_s"] * 1e6 if t["cpu_pct"] is not None and t["ops_per_s"] else None,
            "p50_us": None,
            "p99_us": None,
            "max_us": t["latency_max_us"],
            "too_fast": t["too_fast"],
            "complete": True,
        })
    return out


def memory_stats(stats: dict) -> dict:
    """peak_mb, swap_used_mb and oom_events out of Limit.stats().

    swap_used_mb is the most swap the cgroup held at once (`swap_peak_bytes`;
    with cgroup v1 a lower bound: memory+swap peak minus memory peak), not
    what it holds at the end, when the files are gone."""
    def mb(name):
        return stats[name] / MiB if stats.get(name) is not None else None

    return {
        "peak_mb": mb("peak_bytes"),
        "swap_used_mb": mb("swap_peak_bytes") if stats.get("swap_peak_bytes") is not None else mb("swap_bytes"),
        "swap_end_mb": mb("swap_bytes"),
        "oom_events": stats.get("oom_kills"),
    }


def measure(provisioned: Provisioned, job: dict) -> dict:
    """bonnie's six tests inside the memory limit, by each tool of the job in turn."""
    for tool in job["tools"]:
        check_sizes(job["target"], job["working_set"], tool_files(job, tool), job["size_max"], job["memory_limit_mb"],
                    job["swap_mb"])
    base = {
        "files": job["files"], "working_set": job["working_set"], "memory_limit_mb": job["memory_limit_mb"],
        "swap_mb": job["swap_mb"], "order": job["tools"], "tools": {}, "loop_direct_io": None, "loop_direct_io_note": None,
    }
    root = provisioned.path / "tmpfs"
    root.mkdir()
    if job.get("loop_direct_io", True):
        base["loop_direct_io"], base["loop_direct_io_note"] = set_loop_direct_io(provisioned)
    elif provisioned.provenance.get("loop_device"):
        base["loop_direct_io"] = False
    swap_on = provisioned.provenance.get("swap_dir")  # a modelled tmpfs's swap disk
    base["swap_on"] = swap_on
    provenance = provisioned.provenance
    for position, tool, result in adjacent.one_by_one(
            root, job["tools"], lambda d, tool: _measure_tool(d, job, tool, swap_on, provenance)):
        base["tools"][tool] = {**result, "position": position}
    failed = next((r for r in base["tools"].values() if r["status"] != "ok"), None)
    return {**base, "status": failed["status"] if failed else "ok", "reason": failed["reason"] if failed else None}


def _measure_tool(d: Path, job: dict, tool: str, swap_on: str | None, provenance: dict | None = None) -> dict:
    """One tool's six tests in `d`, in a fresh memory limit, run again (in a
    fresh limit) while the kernel's reclaim gives up with swap to spare."""
    base = {"tool": TOOLS[tool], "files": tool_files(job, tool), "tests": [], "memory": None, "memory_limit": None,
            "worker_result": None, "bonnie": None}
    if tool == "bonnie" and bonnie.executable() is None:
        return {**base, "status": "skipped", "reason": "bonnie++ is not installed (Debian package bonnie++)"}
    given_up = []  # attempts the kernel's reclaim ended with an OOM kill while swap had room
    for attempt in range(1, RECLAIM_ATTEMPTS + 1):
        if attempt > 1:
            shutil.rmtree(d)
            d.mkdir()
        try:
            status, reason, found, raw = _measure_once(d, job, tool, swap_on, provenance)
        except memlimit.MemoryLimitError as exc:
            return {**base, "status": "error", "reason": f"memory limit: {exc}", "reclaim_gave_up": given_up}
        memory = {**memory_stats(raw), "raw": raw}
        if status == "error" and memory["oom_events"]:
            reason = f"{reason} ({memory['oom_events']} OOM event(s) in the memory limit)"
        if attempt == RECLAIM_ATTEMPTS or not (status == "error" and reclaim_gave_up(memory, job["swap_mb"])):
            break
        given_up.append({"reason": reason, "memory": memory})
    return {**base, **found, "memory": memory, "status": status, "reason": reason, "reclaim_gave_up": given_up}


def reclaim_gave_up(memory: dict, swap_mb: int) -> bool:
    """An OOM kill while at least a tenth of the swap file was still free.

    Not a working set beyond memory + swap (check_sizes keeps it within),
    but the kernel's reclaim giving up (cgroup v1 OOM-kills after 16 passes
    that free nothing). Here a 150 MiB child in a 64 MiB limit with 128 MiB
    of swap was killed so in 2 of 40 fresh limits on an idle machine, with
    no page under write-back in the kernel's report. A second child in the
    same limit was killed too, one in a fresh limit was not; why is not
    established. So such a run is repeated in a fresh limit, up to
    RECLAIM_ATTEMPTS in all, and the given-up attempts are kept in the result."""
    used = memory["swap_used_mb"]
    return bool(memory["oom_events"]) and used is not None and used <= 0.9 * swap_mb


def _measure_once(root: Path, job: dict, tool: str, swap_on: str | None,
                  provenance: dict | None = None) -> tuple[str, str | None, dict, dict]:
    """One run in a fresh memory limit: status, reason, the result's parts, the cgroup's stats.
    On a modelled target the worker's phases keep what reached the model
    (boatload.provision.devmodel.phasecounts) as `model_counts`."""
    status, reason, found = "ok", None, {}
    swap_home = Path(swap_on) if swap_on else None
    with memlimit.memory_limit(job["memory_limit_mb"], job["swap_mb"], scratch_dir(), swap_on=swap_home) as limit:
        try:
            if tool == "worker":
                counts = phasecounts.PhaseCounts.of(provenance)
                doc = run_worker("meta", worker_args(root, job), limit=limit, on_phase=counts)
                if counts is not None:
                    phasecounts.attach(doc, counts.phases())
                found["worker_result"] = doc
                found["tests"] = worker_tests(doc, job["files"])
                if doc["status"] != "ok":
                    status, reason = "error", failure(doc)
            else:
                run = bonnie.run(root, job["bonnie_files_k"], job["size_max"], job["dirs"],
                                 size_min=job["size_min"], seed=job["seed"], runner=limit.run)
                found["bonnie"] = {**run, "version": bonnie.version()}
                found["tests"] = bonnie_tests(run["result"])
        except (WorkerError, bonnie.BonnieError) as exc:
            status, reason = "error", str(exc)
        found["memory_limit"] = limit.provenance
    return status, reason, found, limit.stats()  # after the block: the numbers taken at teardown


# Rough cost of one file through the phases, inside RAM and beyond it (paging
# through swap), for the plan's time estimate only.
ESTIMATE_S_PER_FILE = {"fits in RAM": 40e-6, "beyond RAM": 400e-6}


def tools(job: dict) -> set[str]:
    return {"bonnie++"} if "bonnie" in job["tools"] else set()


def estimate_s(job: dict) -> float:
    per_file = ESTIMATE_S_PER_FILE[working_set_label(job["working_set"])]
    return sum(tool_files(job, tool) * per_file for tool in job["tools"])

def run(job: dict) -> dict:
    """Provision, measure, tear down; without root the job is skipped (no stand-in directory)."""
    return run_job("tmpfs", job, measure, fallback_without_root=STUDY.measures_without_root)


def summary(doc: dict) -> str:
    """One line for the log: each tool in the order it ran."""
    job = doc["job"]
    where = f"{job['target']['name']} w={job['working_set']:g} rep {job['rep']} (limit {job['memory_limit_mb']} MiB)"
    return adjacent.summary_line(where, doc["result"], _describe)


def _describe(tool: str, t: dict) -> str:
    rates = ", ".join(f"{x['test']} {x['ops_per_s']:.0f}/s" if x["ops_per_s"] else f"{x['test']} -" for x in t["tests"])
    swap = (t.get("memory") or {}).get("swap_used_mb")
    swap_text = f", swap {swap:.0f} MiB" if swap is not None else ""
    again = len(t.get("reclaim_gave_up") or [])
    again_text = f"; run again after {again} OOM kill(s) with swap room" if again else ""
    status = "" if t["status"] == "ok" else f" {t['status']} ({t['reason']})"
    return f"{t['tool']} ({t['files']} files{swap_text}{again_text}){status}: {rates}"


# --------------------------------------------------------------------------
# the tidy table

COLUMNS = {
    "working_set": dtypes.Float64,
    "working_set_label": dtypes.String,
    "files": dtypes.Int64,
    "tool": dtypes.String,
    "step": dtypes.Int64,
    "test": dtypes.String,
    "rep": dtypes.Int64,
    "position": dtypes.Int64,
    "first_tool": dtypes.String,
    "ops": dtypes.Int64,
    "seconds": dtypes.Float64,
    "ops_per_s": dtypes.Float64,
    "cpu_pct": dtypes.Float64,
    "cpu_us_per_op": dtypes.Float64,
    "p50_us": dtypes.Float64,
    "p99_us": dtypes.Float64,
    "max_us": dtypes.Float64,
    "memory_limit_mb": dtypes.Int64,
    "loop_direct_io": dtypes.Boolean,
    "swap_used_mb": dtypes.Float64,
    "peak_mb": dtypes.Float64,
    # what the test sent the disk, the worker's runs only (boatload.provision.devmodel.phasecounts.requests):
    # model_* what reached a modelled disk (null on this machine's), loop_* the data loop device's
    "model_reads": dtypes.Int64,
    "model_seq_reads": dtypes.Int64,
    "model_read_kib": dtypes.Float64,
    "model_read_ms": dtypes.Float64,
    "model_writes": dtypes.Int64,
    "loop_reads": dtypes.Int64,
    "loop_read_kib": dtypes.Float64,
    "loop_queue_depth": dtypes.Float64,
}

def rows(doc: dict) -> list[dict]:
    """One row per tool and test, the tools in the order they ran, the tests in
    bonnie's order; tests that did not run have no numbers."""
    result, job = doc["result"], doc["job"]
    order = result.get("order") or job["tools"]
    done = result.get("tools") or {}
    return [row for position, tool in enumerate(order, start=1)
            for row in _tool_rows(doc, tool, done.get(tool, result), position, TOOLS[order[0]])]


def _tool_rows(doc: dict, tool: str, result: dict, position: int, first_tool: str) -> list[dict]:
    job, top = doc["job"], doc["result"]
    memory = result.get("memory") or {}
    done = {t["test"]: t for t in result.get("tests", [])}
    files = tool_files(job, tool)
    out = []
    for step, (test, _) in enumerate(TESTS, start=1):
        t = done.get(test)
        if t is None or t["ops_per_s"] is None and not t.get("too_fast"):
            status = "skipped" if result["status"] == "skipped" else "error"
            reason = result.get("reason") or "test not run"
        elif not t.get("complete", True):
            status, reason = "error", result.get("reason") or f"{t['ops']} of {files} files"
        elif t.get("too_fast"):
            status, reason = "ok", "bonnie++: under 500 ms, too fast to time (+++++)"
        else:
            status, reason = "ok", top.get("loop_direct_io_note")
        t = t or {}
        out.append({
            **base_row(doc, status, reason),
            "working_set": float(job["working_set"]),
            "working_set_label": working_set_label(job["working_set"]),
            "files": files,
            "tool": TOOLS[tool],
            "step": step,
            "test": test,
            "rep": job["rep"],
            # 1: this tool ran first in the job, on the target just made
            "position": position,
            "first_tool": first_tool,
            "ops": t.get("ops"),
            "seconds": t.get("seconds"),
            "ops_per_s": t.get("ops_per_s"),
            "cpu_pct": t.get("cpu_pct"),
            "cpu_us_per_op": t.get("cpu_us_per_op"),
            "p50_us": t.get("p50_us"),
            "p99_us": t.get("p99_us"),
            "max_us": t.get("max_us"),
            "memory_limit_mb": job["memory_limit_mb"],
            "loop_direct_io": top.get("loop_direct_io"),
            "swap_used_mb": memory.get("swap_used_mb"),
            "peak_mb": memory.get("peak_mb"),
            **{k: (t.get("requests") or {}).get(k) for k in phasecounts.REQUESTS},
        })
    return out

# Cold or warm (boatload.measure.interference records it per phase; the paper states it).
CACHE = {
    "ours": "warm by design, as bonnie++: each test follows the one before on the same files without dropping "
            "caches; the memory limit decides how much stays cached",
    "original": "bonnie++ -n, whose tests run back to back on the same files (warm)",
}


def claim_points(claim: dict, jobs: list[dict]) -> set[tuple[str, str]]:
    """A claim's sides are a file system on its hardware ("ext3 on hdd-7200", as the notebook groups the
    runs) and a working set each."""
    def label(t: dict, hw: str) -> str:
        return t["fs"] if hw == THIS_MACHINE else f"{t['fs']} on {hw}"
    sides = [s for s in (claim.get("numerator"), claim.get("denominator")) if isinstance(s, dict)]
    return {(j["target"]["name"], j["point"]) for j in jobs for s in sides
            if label(j["target"], hardware(j["target"])) == s.get("filesystem") and j["point"] == point(s.get("working_set", 0))}


STUDY = Study(
    name="tmpfs",
    order=50,
    title="tmpfs",
    question="tmpfs vs ext3 with the working set inside and beyond RAM.",
    settings=settings_schema(
        "bonnie-style small-file create/read/delete, tmpfs vs ext3, inside and beyond memory",
        ["memory_limit_mb", "working_set"],
        memory_limit_mb={"type": ["integer", "null"], "minimum": 64,
                         "description": "cgroup limit (null: the machine's RAM)"},
        swap_mb={"type": "integer", "minimum": 0, "default": 0,
                 "description": "a swap file for the limit's overflow (tmpfs pages out to it)"},
        working_set={"type": "array", "minItems": 1, "uniqueItems": True,
                     "items": {"type": "number", "exclusiveMinimum": 0},
                     "description": "data size as a multiple of memory"},
        dirs={"type": "integer", "minimum": 1, "default": 1000},
        size_max={"type": "integer", "exclusiveMinimum": 0, "default": 250000,
                  "description": "files are 0..size_max bytes; their mean, size_max / 2, sizes the working set"},
        loop_direct_io={"type": "boolean", "default": True,
                        "description": "switch a loop target (ext3) to direct I/O, so that what the memory "
                                       "limit pushes out is read back from the disk, not from the host's "
                                       "page cache"},
        peers={"type": "array", "uniqueItems": True, "items": {"enum": ["bonnie"]}, "default": [],
               "description": "tools measured beside the worker at every point"},
        peer_repetitions=PEER_REPETITIONS,
    ),
    jobs=jobs,
    run=run,
    summary=summary,
    claim_points=claim_points,
    columns=COLUMNS,
    rows=rows,
    sort=("target", "working_set", "tool", "rep", "step"),
    tools=tools,
    estimate_s=estimate_s,
    figures=("rates", "ratios"),
    original=Original(
        citation="seed-tmpfs",
        hardware="a {original[ram_gb]} GB workstation with ext3 and bonnie++ {original[bonnie]}",
        rate=("ops_per_s", "files/s"),
        scale=(ScaleGap("memory", ("memory_limit_mb",), ("original", "ram_gb"), "MiB", original_scale=1024),),
    ),
    peers=PeerTable(peer="bonnie++", table="tmpfs-peers.csv", column="worker_over_bonnie",
                    role="bonnie++, the original's own tool",
                    setting="for bonnie++, a memory limit of its own of the same size"),
    memory_limit=("memory_limit_mb",),
    original_memory="{original[ram_gb]} GB",
    not_measured_unit=("tool's test", "tools' tests"),
    baseline="ext3",
    cache=CACHE,
)
