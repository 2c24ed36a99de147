"""One run of the billion-file study: a creation method, or a size of the scale curve, on a freshly made target."""

from __future__ import annotations

from pathlib import Path

from boatload.base import dtypes

from boatload.provision import capacity
from boatload.measure import creators
from boatload.base.paths import scratch_dir
from boatload.measure.runner import run_job
from boatload.studies.record import (Original, ScaleGap, Study, Uncovered, base_job, base_row, first_rounds,
                            first_rounds_field, for_target, more_rounds, settings,
                            settings_schema, target_spec)
from boatload.provision.targets import Provisioned
from boatload.measure.worker import failure, phase, run_worker

METHOD_LABELS = {
    "worker-1t": "native program, 1 thread",
    "worker-2t": "native program, 2 threads",
    "python": "python script",
    "touch-many": "shell: touch 1000 files per call",
    "touch-each": "shell: touch once per file",
    "tar": "shell: untar",
    "unzip": "shell: unzip",
}

WORKER_THREADS = {"worker-1t": 1, "worker-2t": 2}

# The points the notebook's claims compare (notebooks/forest.ipynb; tests/test_notebooks.py holds
# it to these): the original's methods on its home target (the first ext4 measured, else the first
# that is not a tmpfs, else the first), the native program on an ext4, an ext2 and an XFS.
CLAIM_METHODS = ("worker-1t", "python", "touch-many", "touch-each", "tar", "unzip")
CLAIM_FILESYSTEMS = ("ext4", "ext2", "xfs")


def claimed_points(config: dict, targets: list[str]) -> set[tuple[str, str]]:
    """The (target, method) points of `targets` a claim may rest on: every target the notebook
    could take for home (it chooses among those measured, so all of its candidates). A target
    whose file system is known only once mounted (a mount of the user's) could be any of them."""
    fs = {name: target_spec(config, name).get("fs") for name in targets}
    home = ([t for t in targets if fs[t] in ("ext4", None)] or [t for t in targets if fs[t] != "tmpfs"] or targets)
    return ({(t, m) for t in home for m in CLAIM_METHODS}
            | {(t, "worker-1t") for t in targets if fs[t] in (*CLAIM_FILESYSTEMS, None)})


# The scale curve (setting scale_files): forests of N/1000 leaf directories of
# FILES_PER_DIR files each, made by SCALE_METHOD, so the notebook can fit how
# the time grows with N and project the original's 1e9 files.
SCALE_METHOD = "worker-2t"
FILES_PER_DIR = 1_000
# the original's forest: "a thousand thousand thousand files" (seed 002)
ORIGINAL_FILES = 1000**3


def _run_worker(method: str, root: Path, shape: list[int], seed: int) -> dict:
    """The worker's own measurement of making the forest: its create phase and
    the mkdir of the tree's directories, which the worker times apart (the
    baselines make their directories inside their timed run, so the worker's
    time must include them too)."""
    doc = run_worker("tree", [
        "--dir", str(root), "--shape", "x".join(map(str, shape)),
        "--threads", str(WORKER_THREADS[method]), "--seed", str(seed),
    ])
    timed = [phase(doc, "create"), *(d for d in doc.get("dir_phases", []) if d["name"] == "mkdir")]
    return {
        "seconds": sum(p["seconds"] for p in timed),
        "cpu_user_s": sum(p["cpu_user_s"] for p in timed),
        "cpu_sys_s": sum(p["cpu_sys_s"] for p in timed),
        "capped": False,
        "error": failure(doc),
        "worker": doc,
    }


def _run_baseline(method: str, root: Path, shape: list[int], time_cap_s: float, cache: Path) -> dict:
    timed = creators.create(method, root, shape, time_cap_s, cache)
    failed = timed.returncode != 0 and not timed.capped
    return {
        "seconds": timed.seconds,
        "cpu_user_s": timed.cpu_user_s,
        "cpu_sys_s": timed.cpu_sys_s,
        "capped": timed.capped,
        "error": f"exit {timed.returncode}: {timed.stderr}" if failed else None,
        "worker": None,
    }


def measure(provisioned: Provisioned, job: dict) -> dict:
    """Create the forest on the target and account for what was made and what it cost."""
    # scale runs have no time cap: only the baselines stop early
    method, shape, time_cap_s, seed = job["method"], job["shape"], job.get("time_cap_s"), job["seed"]
    before = provisioned.usage()
    cache = scratch_dir() / "archives"
    # A fresh directory on the target: a new file system's root is not empty (lost+found).
    root = provisioned.path / "forest"
    root.mkdir()
    if method in WORKER_THREADS:
        run = _run_worker(method, root, shape, seed)
    else:
        run = _run_baseline(method, root, shape, time_cap_s, cache)
    files, dirs = creators.count_files(root)
    after = provisioned.usage()
    planned = 1
    for n in shape:
        planned *= n
    complete = files == planned
    rate = files / run["seconds"] if run["seconds"] > 0 and files > 0 else None
    inodes = None
    if after.get("inodes_used") is not None and before.get("inodes_used") is not None:
        inodes = after["inodes_used"] - before["inodes_used"]
    return {
        "status": "error" if run["error"] else "ok",
        "reason": run["error"],
        "files": files,
        "dirs": dirs,
        "files_planned": planned,
        "complete": complete,
        "seconds": run["seconds"],
        "files_per_s": rate,
        # Like the original's slow methods: the rate of the part done stands for the whole.
        "extrapolated": run["capped"],
        "estimated_total_s": planned / rate if rate else None,
        "cpu_user_s": run["cpu_user_s"],
        "cpu_sys_s": run["cpu_sys_s"],
        "space_kb": after["blocks_used_kb"] - before["blocks_used_kb"],
        "inodes_used": inodes,
        "worker_result": run["worker"],
    }


def forest_size(shape: list[int]) -> tuple[int, int]:
    """(files, directories) of a forest of this shape, its root directory included."""
    files, dirs, level = 1, 1, 1
    for n in shape[:-1]:
        level *= n
        dirs += level
    for n in shape:
        files *= n
    return files, dirs


def scale_shape(files: int) -> list[int]:
    """The forest of a scale run of `files` files: files/1000 directories of 1,000."""
    return [files // FILES_PER_DIR, FILES_PER_DIR]


def check_fits(config: dict, target: str, shape: list[int], what: str, lower: str) -> None:
    """ConfigError (naming the target's size) if a forest of `shape` does not fit the target."""
    files, dirs = forest_size(shape)
    # Empty files take an inode each; each directory at least a block.
    capacity.check(target_spec(config, target), study="forest", files=files + dirs + 16,
                   data_bytes=dirs * 4096, what=f"{files:,} empty files in {dirs:,} directories{what}",
                   lower=lower)


def jobs(config: dict) -> list[dict]:
    """Every run of the study at this config's scale: target x method x
    repetition, then the scale curve's target x size x repetition."""
    s = settings(config, STUDY)
    # int(): the schema takes 10000.0 for an integer, the worker does not
    own = {name: for_target(s, name) for name in s["targets"]}
    sizes = {name: sorted(int(n) for n in t["scale_files"]) for name, t in own.items()}
    for name, t in own.items():
        check_fits(config, name, t["shape"], "", "studies.forest.shape")
        if sizes[name]:
            check_fits(config, name, scale_shape(sizes[name][-1]), ", the largest of scale_files",
                       "studies.forest.scale_files")
    claimed = claimed_points(config, list(own))
    more = s.get("method_repetitions") or {}

    def rounds(target: str, method: str) -> range:
        if (target, method) not in claimed:
            return first_rounds(s, "unclaimed_repetitions")
        return more_rounds(s, more.get(method))

    methods = [
        base_job(config, "forest", target, method, rep, method=method, shape=t["shape"], time_cap_s=t["time_cap_s"])
        for target, t in own.items()
        for method in t["methods"]
        for rep in rounds(target, method)
    ]
    # The method runs' jobs stay as they were (a new field would measure them
    # again); only scale jobs name their series, and have no time cap. A size
    # whose forest is the method runs' own (the scale curve's program among
    # the target's methods, its shape the size's) is measured by those runs.
    scale = [
        base_job(config, "forest", target, f"scale-{n}", rep, method=SCALE_METHOD, shape=scale_shape(n),
                 series="scale")
        for target in s["targets"]
        for n in sizes[target]
        if not (SCALE_METHOD in own[target]["methods"] and on_scale_curve(own[target]["shape"]) == n)
        for rep in first_rounds(s, "scale_repetitions")
    ]
    return methods + scale


def on_scale_curve(shape: list[int]) -> int | None:
    """The scale curve's size whose forest has this shape (N/1000 directories of 1,000), else None."""
    files = forest_size(shape)[0]
    return files if list(shape) == scale_shape(files) else None


def summary(doc: dict) -> str:
    """One line for the log."""
    r, job = doc["result"], doc["job"]
    note = " (time-capped, extrapolated)" if r["extrapolated"] else ""
    rate = f"{r['files_per_s']:.0f} files/s" if r["files_per_s"] else "no rate"
    what = job["method"] if job.get("series", "methods") == "methods" else f"{job['method']} {job['point']}"
    return f"{job['target']['name']} {what}: {r['files']} files, {rate}{note}"


# Rough creation rates (files/s) on a 2-core machine, for the plan's time
# estimate only: the progress line corrects it by the runs already done.
ESTIMATE_FILES_PER_S = {"worker-1t": 150_000, "worker-2t": 200_000, "python": 60_000, "touch-many": 60_000,
                        "touch-each": 1_500, "tar": 100_000, "unzip": 60_000}
COMMANDS = {"tar": {"tar"}, "unzip": {"unzip"}, "touch-many": {"touch"}, "touch-each": {"touch"}}


def tools(job: dict) -> set[str]:
    """The external commands the job's method runs."""
    return COMMANDS.get(job["method"], set())


def archive_bytes(job: dict) -> int:
    """The leaf archive tar and unzip extract, kept under the scratch directory (about 1 KiB a file)."""
    return 1024 * job["shape"][-1] if job["method"] in ("tar", "unzip") else 0


def estimate_s(job: dict) -> float:
    """Seconds to make the forest (the baselines up to the time cap; the
    worker always makes all of it) and then count it."""
    files = forest_size(job["shape"])[0]
    make = files / ESTIMATE_FILES_PER_S[job["method"]]
    if job["method"] not in WORKER_THREADS:
        make = min(make, job["time_cap_s"])
    return make + files / 300_000


def run(job: dict) -> dict:
    """Provision the job's target, measure, tear down; the raw result with provenance."""
    doc = run_job("forest", job, measure, fallback_without_root=STUDY.measures_without_root)
    doc["method_label"] = METHOD_LABELS[job["method"]]
    return doc


COLUMNS = {
    # "methods": a run of the method comparison; "scale": a run of the scale curve
    "series": dtypes.String,
    # a point of the scale curve: a scale run, or a method run of the curve's program whose forest has the
    # curve's layout (N/1000 directories of 1,000; jobs makes no scale run of that size beside it)
    "scale_point": dtypes.Boolean,
    "method": dtypes.String,
    "method_label": dtypes.String,
    "rep": dtypes.Int64,
    "files": dtypes.Int64,
    "files_planned": dtypes.Int64,
    "seconds": dtypes.Float64,
    "files_per_s": dtypes.Float64,
    "extrapolated": dtypes.Boolean,
    "space_kb": dtypes.Int64,
    "inodes_used": dtypes.Int64,
    "cpu_user_s": dtypes.Float64,
    "cpu_sys_s": dtypes.Float64,
}


def rows(doc: dict) -> list[dict]:
    """One row per run."""
    result = doc["result"]
    return [{
        **base_row(doc, result["status"], result["reason"]),
        "series": doc["job"].get("series", "methods"),
        "scale_point": doc["job"].get("series") == "scale"
        or (doc["job"]["method"] == SCALE_METHOD and on_scale_curve(doc["job"]["shape"]) is not None),
        "method": doc["job"]["method"],
        "method_label": doc["method_label"],
        "rep": doc["job"]["rep"],
        "files": result["files"],
        "files_planned": result["files_planned"],
        "seconds": result["seconds"],
        "files_per_s": result["files_per_s"],
        "extrapolated": result["extrapolated"],
        "space_kb": result["space_kb"],
        "inodes_used": result["inodes_used"],
        "cpu_user_s": result["cpu_user_s"],
        "cpu_sys_s": result["cpu_sys_s"],
    }]


# Cold or warm (boatload.measure.interference records it per phase; the paper states it).
CACHE = {
    "ours": "cold: each method makes its files on a file system made for the run; creation reads nothing",
    "original": "not stated; each method made its files in a new tree",
}

STUDY = Study(
    name="forest",
    order=30,
    title="Forest",
    question="How fast can a billion empty files be made, by which method, on which file system?",
    settings=settings_schema(
        "a forest of empty files made by each method on each target; the original made 1e9",
        ["shape", "methods", "time_cap_s"],
        shape={"description": "fan-out per level, the last number the files per leaf directory",
               "type": "array", "minItems": 1, "maxItems": 4, "items": {"type": "integer", "minimum": 1}},
        methods={"description": "how the files are made: the worker, or the original's baselines",
                 "type": "array", "minItems": 1, "uniqueItems": True,
                 "items": {"enum": list(METHOD_LABELS)}},
        time_cap_s={"description": "slow methods stop after this and their rate is extrapolated, "
                                   "as the original did",
                    "type": "number", "exclusiveMinimum": 0},
        scale_files={"description": "the scale curve: at each size N (files, a multiple of 1000) the worker "
                                    "with 2 threads also makes N/1000 directories of 1,000 empty files on every "
                                    "target, once per repetition; the notebook fits a power law to the times and "
                                    "projects the original's 1e9 files from it ([]: no curve)",
                     "type": "array", "uniqueItems": True, "default": [],
                     "items": {"type": "integer", "minimum": FILES_PER_DIR, "multipleOf": FILES_PER_DIR}},
        scale_repetitions=first_rounds_field("the scale curve (a rough projection without an interval)"),
        method_repetitions={"description": "rounds a method is measured in on the targets its claims compare, "
                                           "where more than the study's repetitions (method: rounds): a claim "
                                           "near a line of the verdict rule, in runs of a few seconds, then rests "
                                           "on more pairs from the start, and gets no look",
                            "type": "object", "default": {}, "propertyNames": {"enum": list(METHOD_LABELS)},
                            "additionalProperties": {"type": "integer", "minimum": 1}},
        unclaimed_repetitions=first_rounds_field("a method on a target no claim compares it on (the rates figure "
                                                 "only: the two-thread program everywhere, any method on a target "
                                                 "that is neither the claims' home nor an ext4, ext2 or XFS)"),
    ),
    jobs=jobs,
    run=run,
    summary=summary,
    columns=COLUMNS,
    rows=rows,
    sort=("target", "series", "method", "files_planned", "rep"),
    tools=tools,
    estimate_s=estimate_s,
    scratch_bytes=archive_bytes,
    measures_without_root=True,
    figures=("rates", "scale"),
    original=Original(
        citation="seed-forest",
        hardware="a desktop with {original[filesystems]}",
        rate=("files_per_s", "files/s"),
        scale=(ScaleGap("files per run", ("counts", "files_planned"), float(ORIGINAL_FILES)),),
    ),
    unmapped_rows=Uncovered(("original", "unmapped"), ("published forest row (a state-file variant)",
                                                        "published forest rows (the state-file variants)")),
    not_measured_unit=("run", "runs"),
    baseline="the fastest method",
    cache=CACHE,
)
