"""One run of the journal study: 1 KB files through create, random open/stat/read, delete.

The original (an XFS mailing-list post, 250,000 x 1 KB files) compared an
internal XFS log with and without barriers against an external log on a
fast SSD. One run here is one worker `meta` call on a freshly made target:

    boatload-worker meta --dir <target>/journal --files N --dirs D --size S
        --phases create:seq,open:rand,stat:rand,read:rand,delete:seq --threads 1

with the original's five steps in its order (`--dirs 0`: one flat directory,
as the original's script made). The three settings are target options,
provisioned by boatload.provision.targets and passed through untouched here:

- log placement: `log: {size_mb}` puts an external XFS log (ext4: an external
  journal) on a second image in /dev/shm, our "fast SSD";
- flushes: `write_cache: "write through"` tells the block layer that the
  loop device has no volatile write cache, so the cache flushes (and FUA
  writes) the file system asks for become no-ops. That is what XFS's
  `nobarrier` mount option did: the log writes no longer wait for the
  device to empty its cache. XFS deprecated `barrier`/`nobarrier` in Linux
  4.10 and removed them in 4.19, and ext4's `barrier=0` only covers ext4, so
  the device's cache mode is the one switch that drops flushes for both
  file systems on today's kernels. Like `nobarrier` it is unsafe on a real
  disk with a volatile cache; on our loop devices the flushes would have
  reached the host's file system (fsync of the image) and its disk.

Without root nothing is measured (the job is recorded as skipped with the
reason): log placement and flushes mean nothing on a plain directory.

With `stat_reference` the same five phases run as several worker calls on the
same files (create and open; each stat pass; read and delete), each stat pass
followed by the same pass paired file by file with as many cached files on a
tmpfs of the run's own (boatload.measure.reference); the claims of no difference
in random stat compare each run's stat over its reference's (`stat_vs_reference`).

Durability (setting `durability`, a list of points per target): `none` is
the original's create, which leaves its files in the page cache; `syncfs`
ends the create with a syncfs inside its timed window (worker `--sync end`);
`fsync` syncs every file before its close (`--fsync file`). Each may make
fewer files (`syncfs_files`, `fsync_files`): writing every file back, or a
device round trip per file, costs seconds on a modelled disk. Only the durable
creates make the log and the flushes do the work the post timed.

Each phase also records what reached the target's devices during it
(boatload.provision.devmodel.phasecounts): the block layer's reads, writes and flushes
of each loop device (the data device, an external log's), and on a modelled
target (`model:`, `log: {model:}`) the model's flushes, FUA writes, writes,
reads, the modelled time and the flushes' part of it, for the array and a
modelled log. They say whether a claim's mechanism ran in the phase.
"""

from __future__ import annotations

from itertools import groupby

from boatload.base import dtypes

from boatload.provision import capacity
from boatload.provision.devmodel import phasecounts
from boatload.provision.devmodel.presets import log_hardware
from boatload.measure import reference
from boatload.measure.runner import run_job
from boatload.studies.record import (Original, ScaleGap, Study, Uncovered, base_job, base_row, for_target, settings,
                            settings_schema, target_spec)
from boatload.provision.targets import Provisioned
from boatload.measure.worker import WorkerError, failure, run_worker

# (worker phase, worker order, the reference's name), in the original's order (#1..#5)
PHASES = (
    ("create", "sequential", "sequential_create"),
    ("open", "random", "random_open"),
    ("stat", "random", "random_stat"),
    ("read", "random", "random_read"),
    ("delete", "sequential", "sequential_delete"),
)
PHASE_ARG = "create:seq,open:rand,stat:rand,read:rand,delete:seq"
#: the worker runs at most 16 phases: the other four, and the stat's passes
MAX_STAT_PASSES = 12


def stat_passes(job: dict) -> int:
    return int(job.get("stat_passes", 1))


def phase_arg(job: dict) -> str:
    """The five phases, the random stat as `stat_passes` passes over the same files, one after another."""
    return PHASE_ARG.replace("stat:rand", ",".join(["stat:rand"] * stat_passes(job)))


def log_placement(target: dict) -> str:
    return "external" if target.get("log") else "internal"


def flushes(target: dict) -> str:
    return "dropped" if target.get("write_cache") == "write through" else "honoured"


# durability point -> (the job's point, the worker's options for it); "none" keeps the
# point and job of the runs measured before durability was a setting
DURABILITY = {
    "none": ("meta", []),
    "syncfs": ("meta-syncfs", ["--sync", "end"]),
    "fsync": ("meta-fsync", ["--fsync", "file"]),
}


def durability(job: dict) -> str:
    return job.get("durability", "none")


def worker_args(root, job: dict, phases: str | None = None, seed: int | None = None) -> list[str]:
    """The worker's options for `phases` (default: all five in one call); the durability's options
    with the create, `--allow-existing` for a call that goes on with files an earlier one made."""
    files, size = job["files"], job["file_size"]
    phases = phases or phase_arg(job)
    return [
        "--dir", str(root), "--files", str(files), "--dirs", str(min(job["dirs"], files)),
        "--size", str(size), "--phases", phases, "--threads", "1",
        "--seed", str(job["seed"] if seed is None else seed),
        *(DURABILITY[durability(job)][1] if "create" in phases else ["--allow-existing"]),
    ]


# every device the phase counts come from: modelled ones, then the loop devices
COUNTED = (*phasecounts.DEVICES, *phasecounts.LOOPS)


def _phase_result(ph: dict, label: str) -> dict:
    lat = ph.get("latency_us") or {}
    return {
        "phase": label,
        "name": ph["name"],
        "order": ph.get("order"),
        "ops": ph["ops"],
        "seconds": ph["seconds"],
        "ops_per_s": ph["ops_per_s"] if ph["ops"] and ph["seconds"] > 0 else None,
        "p50_us": lat.get("p50"),
        "p99_us": lat.get("p99"),
        "cpu_user_s": ph["cpu_user_s"],
        "cpu_sys_s": ph["cpu_sys_s"],
        # what reached each device during the phase (None when the target has no such device)
        **{dev: (ph.get("model_counts") or {}).get(dev) for dev in COUNTED},
    }


def merged_passes(phases: list[dict]) -> list[dict]:
    """Consecutive phases of one label (the stat's passes) as one phase: their operations, seconds
    and CPU added up; its rate the fastest pass's, the rate over them all beside it; the passes'
    median p50 and highest p99, and what reached each device added up.

    The fastest pass: a pass stats cached inodes and does no I/O, so what slows one is the host
    taking the CPU from it, which only ever adds time; the fastest of a run's passes is the least
    disturbed measure of what the file system costs (as BenchmarkTools.jl's minimum: Chen and
    Revels, "Robust benchmarking in noisy environments", 2016). bench/README.md: "The random
    stat's fastest pass"."""
    merged = []
    for _, passes in groupby(phases, key=lambda ph: ph["phase"]):
        group = list(passes)
        if len(group) == 1:
            merged.append({**group[0], "passes": 1, "ops_per_s_all_passes": group[0]["ops_per_s"]})
            continue
        ops, seconds = sum(g["ops"] for g in group), sum(g["seconds"] for g in group)
        p50s = sorted(g["p50_us"] for g in group if g["p50_us"] is not None)
        p99s = [g["p99_us"] for g in group if g["p99_us"] is not None]
        rates = [g["ops_per_s"] for g in group]
        merged.append({
            **group[0], "passes": len(group), "ops": ops, "seconds": seconds,
            "ops_per_s": max(rates) if None not in rates else None,
            "ops_per_s_all_passes": ops / seconds if ops and seconds > 0 else None,
            "p50_us": p50s[len(p50s) // 2] if p50s else None, "p99_us": max(p99s) if p99s else None,
            "cpu_user_s": sum(g["cpu_user_s"] for g in group), "cpu_sys_s": sum(g["cpu_sys_s"] for g in group),
            **{dev: phasecounts.summed([g.get(dev) for g in group]) for dev in COUNTED},
        })
    return merged


def measure(provisioned: Provisioned, job: dict) -> dict:
    """The five phases on the target, in a fresh directory (a new file system's root holds lost+found);
    with `stat_reference`, each stat pass followed by one over a tmpfs reference's files."""
    root = provisioned.path / "journal"
    root.mkdir()
    base = {"files": job["files"], "file_size": job["file_size"], "dirs": job["dirs"]}
    counts = phasecounts.PhaseCounts.of(provisioned.provenance)
    referenced = bool(job.get("stat_reference"))
    try:
        if referenced:
            doc, ref = _with_reference(root, job, counts)
        else:
            doc, ref = run_worker("meta", worker_args(root, job), on_phase=counts), None
    except WorkerError as exc:
        return {**base, "status": "error", "reason": str(exc), "phases": [], "worker_result": None}
    if counts is not None:
        phasecounts.attach(doc, counts.phases())
    reason = failure(doc)
    return {**base, "status": "ok" if doc["status"] == "ok" else "error", "reason": reason,
            "phases": phases_of(doc), "worker_result": doc, **({"stat_reference": ref} if referenced else {})}


def _with_reference(root, job: dict, counts) -> tuple[dict, dict | None]:
    """The five phases as three kinds of worker call, create and open, each stat pass, read and delete,
    each stat pass followed by the same pass (same order) paired with the reference's files: one worker
    document of the target's phases in their order, and the paired passes' summary."""
    files, size = job["files"], job["file_size"]
    ref_passes = []
    with reference.reference_tree(files, size, job["seed"]) as ref_root:
        docs = [run_worker("meta", worker_args(root, job, "create:seq,open:rand"), on_phase=counts)]
        if not failure(docs[0]):
            stats, ref_passes = reference.interleaved(
                # the device counts are the lone passes' (a paired pass reads nothing either)
                lambda seed, pair: run_worker("meta", [*worker_args(root, job, "stat:rand", seed), *pair],
                                              on_phase=None if pair else counts),
                ref_root, stat_passes(job), job["seed"])
            docs += stats
        if not failure(docs[-1]):
            docs.append(run_worker("meta", worker_args(root, job, "read:rand,delete:seq"), on_phase=counts))
    bad = next((d for d in docs if d["status"] != "ok"), None)
    doc = {**docs[0], "phases": [ph for d in docs for ph in d["phases"]],
           "status": bad["status"] if bad else "ok", "error": bad.get("error") if bad else None,
           "calls": len(docs)}
    return doc, reference.summary(ref_passes, files)


def phases_of(worker_doc: dict) -> list[dict]:
    """The run's phases as the study reports them, from the worker's own record of each."""
    labels = {(name, order): label for name, order, label in PHASES}
    return merged_passes([_phase_result(ph, labels.get((ph["name"], ph.get("order")), ph["name"]))
                          for ph in worker_doc["phases"]])


def jobs(config: dict) -> list[dict]:
    """Every run at this config's scale: target x durability x repetition."""
    s = settings(config, STUDY)
    out = []
    for name in s["targets"]:
        t = for_target(s, name)
        size, dirs = t["file_size"], t["dirs"]
        capacity.refuse_mount(target_spec(config, name), study="journal",
                              why="makes its file system with the log inside or on another device")
        capacity.check(target_spec(config, name), study="journal", files=t["files"] + dirs + 16,
                       data_bytes=t["files"] * -(-max(size, 1) // 4096) * 4096,
                       what=f"{t['files']:,} files of {size:,} bytes", lower="studies.journal.files")
        for dur in dict.fromkeys(t["durability"]):
            point, _ = DURABILITY[dur]
            files = t.get(f"{dur}_files") or t["files"]
            extra = {} if dur == "none" else {"durability": dur}
            if t.get("stat_passes", 1) > 1:
                extra["stat_passes"] = t["stat_passes"]
            if t.get("stat_reference") and dur == "none":  # the stat's claims are the original create's
                extra["stat_reference"] = True
            out += [base_job(config, "journal", name, point, rep, files=files, file_size=size, dirs=dirs, **extra)
                    for rep in range(1, s["repetitions"] + 1)]
    return out


def claim_points(claim: dict, jobs: list[dict]) -> set[tuple[str, str]]:
    """The (target, point) pairs of a claim: its two targets at its durability."""
    names = {claim.get("numerator"), claim.get("denominator")}
    point = DURABILITY.get(claim.get("durability") or "none", DURABILITY["none"])[0]
    return {(job["target"]["name"], job["point"]) for job in jobs
            if job["target"]["name"] in names and job["point"] == point}


# Rough cost of one file through all five phases on a loop image, for the
# plan's time estimate only.
ESTIMATE_S_PER_FILE = 60e-6


def tools(job: dict) -> set[str]:
    """Reading back where the log or journal is."""
    return {"xfs_info" if job["target"].get("fs") == "xfs" else "dumpe2fs"}


# one more stat of a cached file
ESTIMATE_S_PER_STAT = 2e-6

# a file's fsync: a log force and a flush, on the modelled array a rotation or more
ESTIMATE_S_PER_FSYNC = 5e-3


# a file made on the reference's tmpfs
ESTIMATE_S_PER_REFERENCE_FILE = 10e-6


def estimate_s(job: dict) -> float:
    per_file = ESTIMATE_S_PER_FILE + (ESTIMATE_S_PER_FSYNC if durability(job) == "fsync" else 0.0)
    if job.get("stat_reference"):
        # each paired pass stats every file twice
        per_file += ESTIMATE_S_PER_REFERENCE_FILE + 2 * stat_passes(job) * ESTIMATE_S_PER_STAT
    return job["files"] * (per_file + (stat_passes(job) - 1) * ESTIMATE_S_PER_STAT)

def run(job: dict) -> dict:
    """Provision, measure, tear down; without root the job is skipped (no stand-in directory)."""
    return run_job("journal", job, measure, fallback_without_root=STUDY.measures_without_root)


def summary(doc: dict) -> str:
    """One line for the log."""
    target = doc["job"]["target"]
    rates = ", ".join(
        f"{p['phase']} {p['ops_per_s']:.0f}/s" if p["ops_per_s"] else f"{p['phase']} -"
        for p in doc["result"].get("phases", [])
    )
    return (f"{target['name']} (log {log_placement(target)}, flushes {flushes(target)}, durability "
            f"{durability(doc['job'])}): {doc['result']['files']} files: {rates}")


COLUMNS = {
    "log": dtypes.String,
    "flushes": dtypes.String,
    "durability": dtypes.String,
    "log_hardware": dtypes.String,
    "step": dtypes.Int64,
    "phase": dtypes.String,
    "rep": dtypes.Int64,
    "files": dtypes.Int64,
    "file_size": dtypes.Int64,
    # passes over the files the phase made (the random stat's `stat_passes`, else 1)
    "passes": dtypes.Int64,
    "ops": dtypes.Int64,
    "seconds": dtypes.Float64,
    # a phase of several passes: its fastest pass's rate (merged_passes says why), and the
    # rate over all its passes' summed seconds beside it
    "ops_per_s": dtypes.Float64,
    "ops_per_s_all_passes": dtypes.Float64,
    # the random stat with `stat_reference`: its rate over the reference's, file by file in the paired
    # passes (median of them), the number the claims of no difference in random stat compare
    # (boatload.measure.reference)
    "stat_vs_reference": dtypes.Float64,
    "p50_us": dtypes.Float64,
    "p99_us": dtypes.Float64,
    "cpu_user_s": dtypes.Float64,
    "cpu_sys_s": dtypes.Float64,
    # what reached the modelled array (model_) and a modelled log (log_model_)
    # during the phase; null on this machine's hardware
    **{f"{dev}_{k}": t for dev in phasecounts.DEVICES for k, t in (
        ("flushes", dtypes.Int64), ("fua_writes", dtypes.Int64), ("writes", dtypes.Int64),
        ("ms", dtypes.Float64), ("flush_ms", dtypes.Float64))},
    # what the block layer passed to the data (loop_) and external log's (log_loop_) loop device
    **{f"{dev}_{k}": dtypes.Int64 for dev in phasecounts.LOOPS for k in ("reads", "writes", "flushes")},
}


def model_columns(p: dict) -> dict:
    """A phase's model counts as table columns (null where a device is not modelled)."""
    out = {}
    for dev in phasecounts.DEVICES:
        d = p.get(dev) or {}
        out |= {f"{dev}_flushes": d.get("flushes"), f"{dev}_fua_writes": d.get("fua_writes"),
                f"{dev}_writes": d.get("writes"), f"{dev}_ms": d.get("modelled_ms"),
                f"{dev}_flush_ms": d.get("flush_ms")}
    for dev in phasecounts.LOOPS:
        d = p.get(dev) or {}
        out |= {f"{dev}_{k}": d.get(k) for k in ("reads", "writes", "flushes")}
    return out


def rows(doc: dict) -> list[dict]:
    """One row per phase, in the original's order; phases that did not run have no numbers."""
    result, job = doc["result"], doc["job"]
    target = job["target"]
    # from the worker's record where there is one, so that runs kept from before a change of
    # how passes merge are tabled as the new ones are
    worker = result.get("worker_result")
    done = {p["phase"]: p for p in (phases_of(worker) if worker else result.get("phases", []))}
    vs_reference = (result.get("stat_reference") or {}).get("stat_vs_reference")
    out = []
    for step, (_, _, label) in enumerate(PHASES, start=1):
        p = done.get(label)
        if p is None:
            status = "skipped" if result["status"] == "skipped" else "error"
            reason = result.get("reason") or "phase not run"
        elif p["ops"] != result.get("files", job["files"]) * p.get("passes", 1):
            status, reason = "error", result.get("reason") or f"{p['ops']} of {job['files']} files"
        else:
            status, reason = "ok", None
        p = p or {}
        out.append({
            **base_row(doc, status, reason),
            "log": log_placement(target),
            "flushes": flushes(target),
            "durability": durability(job),
            "log_hardware": log_hardware(target),
            "step": step,
            "phase": label,
            "rep": job["rep"],
            "files": job["files"],
            "file_size": job.get("file_size"),
            "passes": p.get("passes", 1) if p else None,
            "ops": p.get("ops"),
            "seconds": p.get("seconds"),
            "ops_per_s": p.get("ops_per_s"),
            "ops_per_s_all_passes": p.get("ops_per_s_all_passes"),
            "stat_vs_reference": vs_reference if label == "random_stat" and status == "ok" else None,
            "p50_us": p.get("p50_us"),
            "p99_us": p.get("p99_us"),
            "cpu_user_s": p.get("cpu_user_s"),
            "cpu_sys_s": p.get("cpu_sys_s"),
            **model_columns(p),
        })
    return out


# Cold or warm (boatload.measure.interference records it per phase; the paper states it).
CACHE = {
    "ours": "create on a file system made for the run (cold); open, stat, read and delete follow on the same "
            "files without dropping caches (warm), as bonnie++ and the original's sequence do",
    "original": "not stated; its 250,000 files of 1 KB fit in the page cache of the machine",
}


STUDY = Study(
    name="journal",
    order=20,
    title="Journal",
    question="Does an XFS log (or ext4 journal) on a fast external device help, and what do cache flushes cost?",
    settings=settings_schema(
        "1 KB files, create / random open / random stat / random read / delete, "
        "per log placement and flush setting",
        ["files"],
        files={"type": "integer", "minimum": 1, "description": "files made, opened, statted, read, deleted"},
        file_size={"type": "integer", "minimum": 0, "default": 1024, "description": "bytes per file"},
        dirs={"type": "integer", "minimum": 0, "default": 0,
              "description": "directories the files spread over (0: one flat directory, as the original)"},
        durability={"type": "array", "minItems": 1, "uniqueItems": True,
                    "items": {"enum": list(DURABILITY)},
                    "description": "the creates measured per target: none (the original's: the files stay in "
                                   "the page cache), syncfs (a syncfs ends the create inside its timed window), "
                                   "fsync (an fsync per file, on fsync_files files)"},
        syncfs_files={"type": "integer", "minimum": 1,
                      "description": "files of the syncfs create (default: files); the syncfs writes them all "
                                     "back inside the timed window"},
        stat_passes={"type": "integer", "minimum": 1, "maximum": MAX_STAT_PASSES, "default": 1,
                     "description": "passes of the random stat over the files, one after another, each timed; "
                                    "the phase's rate is its fastest pass's (a pass over cached files does "
                                    "no I/O and lasts milliseconds, and what slows one is the host)"},
        stat_reference={"type": "boolean", "default": False,
                        "description": "follow each random stat pass with the same pass paired file by file with "
                                       "as many cached files on a tmpfs of the run's own; the claims of no "
                                       "difference in random stat then compare each run's stat rate over its "
                                       "reference's, which cancels what a slow moment of the host adds "
                                       "(boatload.measure.reference)"},
        fsync_files={"type": "integer", "minimum": 1,
                     "description": "files of the fsync create (default: files); each fsync costs a device "
                                    "round trip, milliseconds on a modelled disk"},
    ),
    jobs=jobs,
    run=run,
    summary=summary,
    columns=COLUMNS,
    rows=rows,
    sort=("target", "rep", "step"),
    tools=tools,
    estimate_s=estimate_s,
    figures=("phases", "ratios"),
    original=Original(
        citation="seed-journal",
        hardware="{original[filesystem]} on a RAID array with its log on an SSD",
        rate=("ops_per_s", "operations/s"),
        scale=(ScaleGap("files", ("counts", "files"), ("original", "files")),),
    ),
    missing_points=Uncovered(("original", "missing"), ("journal point the original did not finish",
                                                       "journal points the original did not finish")),
    not_measured_unit=("phase", "phases"),
    baseline="the internal log",
    cache=CACHE,
    defaults={"ci": {"durability": ["none", "syncfs", "fsync"], "fsync_files": 100},
              "quick": {"durability": ["none", "syncfs", "fsync"], "syncfs_files": 2000, "fsync_files": 100},
              "full": {"durability": ["none", "syncfs", "fsync"], "syncfs_files": 50000, "fsync_files": 2000}},
    claim_points=claim_points,
)
