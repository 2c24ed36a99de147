"""Calibration: claims whose answers we know, measured in every run, so that
the verdict rule is seen to get them right on real runs, not only in
simulation (boatload.analysis.error_rates).

Two kinds of pair, each point measured `repetitions` times like a study's:

- null pairs: one workload on one target measured as two named points (`-a`
  and `-b`), so the true ratio is 1: the worker's tree create of empty files
  (the forest study's workload) and its meta create, open and stat of small
  files (the journal study's) on a target with an external log, and the
  journal study's random stat against its tmpfs reference (boatload.measure.reference:
  each pass followed by the same pass paired file by file with as many cached
  files on a tmpfs; the point's rate is the stat's over the reference's, median
  of the paired passes). A claim of
  no difference must come out equivalent or inconclusive; a claim that `a` is
  three times as fast must never come out reproduced.
- a known effect: 4 KiB O_DIRECT random reads (the worker's randio, one
  thread, one file) on a modelled disk and on the same model with some
  parameters changed (`model_changed`, e.g. seek and rotation twice as slow).
  The original's ratio is the one the model itself predicts for that request
  pattern (devmodel-calc: the mean service time of random reads of 4 KiB over
  the file's share of the device); the claim must come out reproduced with
  the predicted ratio inside its interval.

Each point's runs are of fresh targets, as every study's are. Before the
timed reads the file is written and synced, so the model's write cache holds
none of it and every read goes to the modelled media.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from boatload.base import dtypes

from boatload.base.errors import ConfigError
from boatload.provision.devmodel import native
from boatload.provision.devmodel.presets import resolve
from boatload.measure import reference
from boatload.measure.runner import run_job
from boatload.studies.record import Study, base_job, base_row, more_rounds, settings, settings_schema
from boatload.measure.worker import failure, phase, run_worker

STUDY_NAME = "calibration"
XFER = 4096
#: the kinds of point: what the worker runs and the rate it reports
KINDS = {"tree": "files/s", "meta": "files/s", "stat": "x reference", "randio": "IOPS"}
META_FILE_SIZE = 1024


def _check(config: dict, s: dict) -> None:
    named = {"tree_target": s["tree_target"], "meta_target": s["meta_target"], "model_base": s["model_base"],
             "model_changed": s["model_changed"]}
    for field, target in named.items():
        if target not in s["targets"]:
            raise ConfigError(f"config: studies.calibration.{field}: target '{target}' is not in "
                              f"studies.calibration.targets")
    for field in ("model_base", "model_changed"):
        if not config["targets"][named[field]].get("model"):
            raise ConfigError(f"config: studies.calibration.{field}: target '{named[field]}' has no model: "
                              "the known effect needs a modelled disk")
    if s["read_file_mb"] >= min(config["targets"][named[f]]["size_mb"] for f in ("model_base", "model_changed")):
        raise ConfigError("config: studies.calibration.read_file_mb: the file must be smaller than the modelled "
                          "targets' size_mb")


def jobs(config: dict) -> list[dict]:
    """Per repetition: the two points of each null pair and the two modelled targets; the null
    creates' points in the rounds after those too, up to `create_repetitions`."""
    s = settings(config, STUDY)
    _check(config, s)
    out = []
    for rep in more_rounds(s, s.get("create_repetitions")):
        for side in ("a", "b"):
            out.append(base_job(config, STUDY_NAME, s["tree_target"], f"null-tree-{side}", rep, kind="tree",
                                shape=s["tree_shape"], create_passes=s["create_passes"]))
            out.append(base_job(config, STUDY_NAME, s["meta_target"], f"null-meta-{side}", rep, kind="meta",
                                files=s["meta_files"], create_passes=s["create_passes"]))
        if rep > s["repetitions"]:
            continue
        for side in ("a", "b"):
            out.append(base_job(config, STUDY_NAME, s["meta_target"], f"null-stat-{side}", rep, kind="stat",
                                files=s["meta_files"], stat_passes=s["stat_passes"]))
        for role in ("base", "changed"):
            out.append(base_job(config, STUDY_NAME, s[f"model_{role}"], f"model-{role}", rep, kind="randio",
                                file_mb=s["read_file_mb"], duration_s=s["read_duration_s"]))
    return out


def predicted_read_us(target: dict, file_mb: int, stack_us: float = 0.0) -> float:
    """The model's own mean service time of a 4 KiB random read over a file of
    `file_mb` on this target (the file's share of the device as the span),
    plus the stack's own cost per request as measured when it was attached."""
    params = resolve(target["model"], f"targets.{target['name']}.model")
    size = int(target["size_mb"]) * (1 << 20)
    return native.expect_random_read_us(params, size, span=file_mb / target["size_mb"], length=XFER) + stack_us


def _fastest(passes: list[dict]) -> dict:
    """A null create's run from its passes' create phases ({ops, seconds, ops_per_s}): the rate the
    fastest pass's (this machine's processor runs in slow and fast stretches about as long as a
    pass: bench/README.md "The null creates' fastest pass"), the ops and seconds every pass's."""
    return {"status": "ok", "reason": None, "ops": sum(ph["ops"] for ph in passes),
            "seconds": sum(ph["seconds"] for ph in passes), "rate": max(ph["ops_per_s"] for ph in passes),
            "create_passes": [ph["ops_per_s"] for ph in passes]}


def _tree(root: Path, job: dict) -> dict:
    """The tree created `create_passes` times, removed (untimed) between two passes."""
    passes = []
    for k in range(job.get("create_passes", 1)):
        if k:
            shutil.rmtree(root)
            root.mkdir()
        doc = run_worker("tree", ["--dir", str(root), "--shape", "x".join(map(str, job["shape"])), "--threads", "1",
                                  "--seed", str(job["seed"])])
        if doc["status"] != "ok":
            return _result(doc, "create")
        passes.append(phase(doc, "create"))
    return {**_fastest(passes), "worker_result": doc}


def _meta(root: Path, job: dict) -> dict:
    """One worker call: the files created and deleted `create_passes` - 1 times, created once more and
    statted."""
    phases = ",".join(["create:seq,delete:seq"] * (job.get("create_passes", 1) - 1) + ["create:seq,stat:rand"])
    doc = run_worker("meta", reference.meta_args(root, job["files"], META_FILE_SIZE, job["seed"], phases,
                                                 existing=False))
    if doc["status"] != "ok":
        return _result(doc, "create")
    return {**_fastest([ph for ph in doc["phases"] if ph["name"] == "create"]), "worker_result": doc}


def _stat(root: Path, job: dict) -> dict:
    """The files made (untimed), then each random stat pass followed by the same pass paired with the
    reference's files; the rate the target's over the reference's (median of the paired passes), as the
    journal study's claims of no difference in random stat compare them."""
    files = job["files"]
    args = reference.meta_args(root, files, META_FILE_SIZE, job["seed"], "create:seq", existing=False)
    made = run_worker("meta", args, setup=True)
    if made["status"] != "ok":
        return _result(made, "create")
    with reference.reference_tree(files, META_FILE_SIZE, job["seed"]) as ref_root:
        docs, refs = reference.interleaved(
            lambda seed, pair: run_worker("meta", [*reference.meta_args(root, files, META_FILE_SIZE, seed,
                                                                        "stat:rand"), *pair]),
            ref_root, job["stat_passes"], job["seed"])
    bad = next((d for d in docs if d["status"] != "ok"), None)
    if bad is not None:
        return _result(bad, "stat")
    ref = reference.summary(refs, files)
    fastest = max(phase(d, "stat")["ops_per_s"] for d in docs)
    return {"status": "ok", "reason": None, "ops": sum(phase(d, "stat")["ops"] for d in docs),
            "seconds": sum(phase(d, "stat")["seconds"] for d in docs), "rate": ref["stat_vs_reference"],
            "stat_ops_per_s": fastest, "stat_reference": ref}


def _randio(root: Path, job: dict, stack_us: float) -> dict:
    common = ["--dir", str(root), "--files", "1", "--file-size", f"{job['file_mb']}M", "--threads", "1",
              "--seed", str(job["seed"])]
    prep = run_worker("randio", [*common, "--prepare"], setup=True)
    if prep["status"] != "ok":
        return _result(prep, "prepare")
    # the file on the modelled media, not in its write cache: fsync flushes the device's cache
    for f in root.iterdir():
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    doc = run_worker("randio", [*common, "--xfer", str(XFER), "--read-pct", "100", "--direct",
                                "--duration", f"{job['duration_s']:g}"])
    out = _result(doc, "io")
    if out["status"] == "ok":
        out["predicted_read_us"] = predicted_read_us(job["target"], job["file_mb"], stack_us)
        out["lat_mean_us"] = phase(doc, "io")["latency_us"]["mean"]
    return out


def _result(doc: dict, name: str) -> dict:
    if doc["status"] != "ok":
        return {"status": "error", "reason": failure(doc), "ops": None, "seconds": None, "rate": None}
    ph = phase(doc, name)
    return {"status": "ok", "reason": None, "ops": ph["ops"], "seconds": ph["seconds"], "rate": ph["ops_per_s"],
            "worker_result": doc}


def measure(provisioned, job: dict) -> dict:
    root = provisioned.path / "calibration"
    root.mkdir()
    if job["kind"] == "randio":
        cost = (provisioned.provenance.get("model") or {}).get("stack_cost_us") or {}
        return _randio(root, job, float(cost.get("stack_us") or 0.0))
    return {"tree": _tree, "meta": _meta, "stat": _stat}[job["kind"]](root, job)


def run(job: dict) -> dict:
    return run_job(STUDY_NAME, job, measure, fallback_without_root=STUDY.measures_without_root)


def summary(doc: dict) -> str:
    r, job = doc["result"], doc["job"]
    rate = f"{r['rate']:,.0f} {KINDS[job['kind']]}" if r.get("rate") else r.get("reason") or r["status"]
    return f"{job['target']['name']} {job['point']} rep{job['rep']}: {rate}"


def rows(doc: dict) -> list[dict]:
    r, job = doc["result"], doc["job"]
    return [{**base_row(doc, r["status"], r["reason"]), "point": job["point"], "kind": job["kind"],
             "rep": job["rep"], "ops": r.get("ops"), "seconds": r.get("seconds"), "rate": r.get("rate"),
             "unit": KINDS[job["kind"]], "lat_mean_us": r.get("lat_mean_us"),
             "predicted_read_us": r.get("predicted_read_us"), "create_passes": job.get("create_passes")}]


def estimate_s(job: dict) -> float:
    return {"tree": 3.0, "meta": 3.0, "stat": 2.0, "randio": 8.0 + job.get("duration_s", 2)}[job["kind"]]


TARGET_FIELD = {"type": "string", "description": "a target of studies.calibration.targets"}
STUDY = Study(
    name=STUDY_NAME,
    order=90,
    title="Calibration",
    question="Does the method get known answers right?",
    settings=settings_schema(
        "claims whose answers are known: null pairs (one workload measured as two points) and a known effect "
        "of the device model",
        ["tree_target", "meta_target", "model_base", "model_changed"],
        tree_target={**TARGET_FIELD, "description": "the null pair of the worker's tree create of empty files"},
        tree_shape={"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1,
                    "default": [20, 500], "description": "the tree's folders x files"},
        meta_target={**TARGET_FIELD, "description": "the null pair of the worker's meta create and stat"},
        meta_files={"type": "integer", "minimum": 1, "default": 5000, "description": "files of 1 KiB"},
        create_passes={"type": "integer", "minimum": 1, "default": 1,
                       "description": "the null creates (tree and meta): passes per run, the files removed "
                                      "between two; the run's rate its fastest pass's"},
        create_repetitions={"type": "integer", "minimum": 1,
                            "description": "rounds the null creates (tree and meta) are measured in when more than "
                                           "the study's repetitions (default: those): their runs are short and a slow "
                                           "stretch of the processor moves a whole one, so their intervals need more "
                                           "pairs than the margin of a claim of no difference allows at 4; a claim "
                                           "whose first analysis rests on more runs than the first look gets no look"},
        stat_passes={"type": "integer", "minimum": 1, "default": 5,
                     "description": "the null pair of the random stat against its reference: passes per run, "
                                    "each followed by the reference's"},
        model_base={**TARGET_FIELD, "description": "a modelled disk: the known effect's base"},
        model_changed={**TARGET_FIELD, "description": "the same model with parameters changed"},
        read_file_mb={"type": "integer", "minimum": 1, "default": 32,
                      "description": "the file the random reads go to, MiB"},
        read_duration_s={"type": "number", "exclusiveMinimum": 0, "default": 2,
                         "description": "seconds of random 4 KiB O_DIRECT reads per run"},
    ),
    jobs=jobs,
    run=run,
    summary=summary,
    columns={"point": dtypes.String, "kind": dtypes.String, "rep": dtypes.Int64, "ops": dtypes.Int64, "seconds": dtypes.Float64,
             "rate": dtypes.Float64, "unit": dtypes.String, "lat_mean_us": dtypes.Float64, "predicted_read_us": dtypes.Float64,
             "create_passes": dtypes.Int64},
    rows=rows,
    sort=("point", "rep"),
    tools=lambda job: set(),
    estimate_s=estimate_s,
    figures=("ratios",),
    measures_without_root=False,
    known_answers=True,
)
