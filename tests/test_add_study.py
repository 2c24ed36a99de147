"""A sixth study is four files: in a temporary copy of the repository, a toy
study gets its module, notebook, paper section and reference numbers (and
one line in config/ci.yaml), and the ci workflow measures it, tidies it,
runs its notebook and puts its section into the paper and its page on the blog.

CI runs the toy study alone (about a minute); BOATLOAD_FULL=1 runs it beside
the five studies of config/ci.yaml.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import polars as pl
import pytest
import yaml

from conftest import FULL, PAIRED_INTERFERENCE, ROOT, ours_left
from notebook_checks import pdf_text

pytestmark = pytest.mark.e2e

TOY_MODULE = '''
"""Toy: how fast does the worker make a small tree of empty files?"""

from __future__ import annotations

import os
import time

from boatload.provision import memlimit
from boatload.base.paths import scratch_dir
from boatload.measure.runner import run_job
from boatload.base import dtypes
from boatload.studies.record import Original, PeerTable, ScaleGap, Study, base_job, base_row, settings, settings_schema
from boatload.measure.worker import failure, phase, run_worker


def jobs(config: dict) -> list[dict]:
    s = settings(config, STUDY)
    return [base_job(config, "toy", target, "tree", rep, shape=s["shape"], memory_limit_mb=s["memory_limit_mb"])
            for target in s["targets"] for rep in range(1, s["repetitions"] + 1)]


def python_peer(root, shape) -> float:
    """The peer: the same tree made by a Python loop; files/s."""
    start = time.perf_counter()
    for d in range(shape[0]):
        os.mkdir(root / f"d{d}")
        for f in range(shape[1]):
            os.close(os.open(root / f"d{d}" / f"f{f}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    return shape[0] * shape[1] / (time.perf_counter() - start)


def measure(provisioned, job: dict) -> dict:
    root = provisioned.path / "toy"
    root.mkdir()
    with memlimit.memory_limit(job["memory_limit_mb"], 0, scratch_dir()) as limit:
        doc = run_worker("tree", ["--dir", str(root), "--shape", "x".join(map(str, job["shape"])),
                                  "--threads", "1", "--seed", str(job["seed"])], limit=limit)
    (provisioned.path / "peer").mkdir()
    create = phase(doc, "create")
    return {"status": "ok" if doc["status"] == "ok" else "error", "reason": failure(doc),
            "files": create["ops"], "seconds": create["seconds"], "files_per_s": create["ops_per_s"],
            "peer_files_per_s": python_peer(provisioned.path / "peer", job["shape"])}


def run(job: dict) -> dict:
    return run_job("toy", job, measure, fallback_without_root=STUDY.measures_without_root)


def summary(doc: dict) -> str:
    return f"{doc['job']['target']['name']}: {doc['result']['files']} files"


def rows(doc: dict) -> list[dict]:
    r = doc["result"]
    return [{**base_row(doc, r["status"], r["reason"]), "rep": doc["job"]["rep"], "files": r["files"],
             "seconds": r["seconds"], "files_per_s": r["files_per_s"], "peer_files_per_s": r["peer_files_per_s"],
             "memory_limit_mb": doc["job"]["memory_limit_mb"]}]


STUDY = Study(
    name="toy", order=60, title="Toy", question="How fast does the worker make a small tree of empty files?",
    settings=settings_schema("the worker's tree on each target", [],
                             shape={"type": "array", "items": {"type": "integer", "minimum": 1},
                                    "default": [4, 50], "description": "directories x files"},
                             memory_limit_mb={"type": "integer", "minimum": 64, "default": 96,
                                              "description": "the worker's cgroup memory limit"}),
    defaults={"ci": {"targets": ["tmpfs"], "repetitions": 3}},
    jobs=jobs, run=run, summary=summary, rows=rows, sort=("target", "rep"),
    columns={"rep": dtypes.Int64, "files": dtypes.Int64, "seconds": dtypes.Float64, "files_per_s": dtypes.Float64,
             "peer_files_per_s": dtypes.Float64, "memory_limit_mb": dtypes.Int64},
    measures_without_root=True, figures=("rates",),
    original=Original(citation="toy-original", hardware="a {original[machine]} with {original[filesystems]}",
                      rate=("files_per_s", "files/s"),
                      scale=(ScaleGap("files per run", ("files",), ("original", "files")),)),
    peers=PeerTable(peer="a Python loop", table="toy-peers.csv", column="worker_over_python",
                    role="a Python loop making the same tree"),
    memory_limit=("memory_limit_mb",), original_memory="{original[memory]}",
)
'''

TOY_SECTION = '''
#import "common.typ": *
#let s = summary("toy")

= Toy: a small tree of empty files <toy>

The worker made #s.files files #s.runs times on #join-and(s.targets), at a
median of #fmt-rate(s.median_files_per_s) files/s.

#figure(image(figure-path("toy", "rates"), width: 60%), caption: [Toy: files/s per run.])
'''

TOY_NOTEBOOK_SETUP = '''
import altair as alt
import polars as pl

from boatload.analysis import notebook
from boatload.analysis.plotting import save_chart
from boatload.analysis.stats import bootstrap_ci
from boatload.analysis.verdict import Rule, claim

paths = notebook.setup("toy", data=data, reference=reference, out_dir=out_dir)
runs = pl.read_parquet(paths.data).filter(pl.col("status") == "ok")
published = pl.read_csv(paths.reference)["files_per_s"][0]
rates = runs["files_per_s"].to_list()
median, low, high = bootstrap_ci(rates, seed=0)
notebook.write_table(runs, paths.table())
ratio = pl.col("files_per_s") / pl.col("peer_files_per_s")
notebook.write_table(runs.select("target", "rep", worker_over_python=ratio), paths.table("peers"))
rule = Rule()
summary = {
    "runs": runs.height, "files": int(runs["files"][0]), "targets": sorted(set(runs["target"])),
    "median_files_per_s": median, "last_run_at": max(runs["started_at"]), "verdict_rule": rule.text(),
    "verdicts": [claim("ours over the published rate is above 1", 2.0, rates, [published], rule)],
    "original": {"machine": "laptop of 2010", "filesystems": ["tmpfs", "ext4"], "files": 10000, "memory": "2 GB"},
    "memory_limit_mb": int(runs["memory_limit_mb"].max()),
}
notebook.write_summary(summary, paths.summary)
save_chart(alt.Chart(runs).mark_point().encode(x="rep:O", y="files_per_s:Q"), paths.out, "toy", "rates")
'''


def toy_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('data = "data/runs/HOST/toy.parquet"\nreference = "data/reference/toy.csv"\n'
                                       'out_dir = "results"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# Toy"), params, nbformat.v4.new_code_cell(TOY_NOTEBOOK_SETUP)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def add_toy_study(clone: Path) -> None:
    """The four files of a new study, and its line in the ci config."""
    (clone / "src" / "boatload" / "studies" / "toy.py").write_text(TOY_MODULE)
    nbformat.write(toy_notebook(), clone / "notebooks" / "toy.ipynb")
    (clone / "paper" / "toy.typ").write_text(TOY_SECTION)
    (clone / "data" / "reference" / "toy.csv").write_text("filesystem,files_per_s\ntmpfs,50000\n")
    ci = clone / "config" / "ci.yaml"
    ci.write_text(ci.read_text() + "  toy: {}\n")


def audit_of(workdir: Path) -> dict:
    return json.loads((workdir / "results" / "tables" / "audit.json").read_text())


def test_a_sixth_study_is_four_files_and_a_config_line(workdir):
    shutil.copytree(ROOT / "src", workdir / "src", ignore=shutil.ignore_patterns("__pycache__"))
    add_toy_study(workdir)
    config = yaml.safe_load((workdir / "config" / "ci.yaml").read_text())
    assert config["studies"]["toy"] == {}
    if not FULL:
        # CI: the toy study alone, so the test takes about a minute.
        config["studies"] = {"toy": {}}
    # Beside another test (tests/conftest.py's PAIRED_FILES): a run it disturbs is kept and marked, not
    # measured again.
    config["interference"] = dict(PAIRED_INTERFERENCE)
    (workdir / "config" / "ci.yaml").write_text(yaml.safe_dump(config))
    # The copy's package, with the toy module, comes before this checkout's editable install.
    env = {**os.environ, "PYTHONPATH": str(workdir / "src")}

    # The config schema knows the study's settings from its module, and names the field.
    bad = subprocess.run(
        [sys.executable, "-c", "import sys; from boatload.studies import config; "
         "config.validate({'scale': 'ci', 'repetitions': 1, 'seed': 1, "
         "'targets': {'tmpfs': {'kind': 'tmpfs', 'fs': 'tmpfs', 'size_mb': 64}}, "
         "'studies': {'toy': {'shape': 'x'}}})"],
        cwd=workdir, env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "studies.toy.shape" in bad.stderr, bad.stderr[-2000:]

    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "config/ci.yaml"],
                         cwd=workdir, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-4000:]
    assert ours_left(workdir) == []

    host = next(p for p in (workdir / "data" / "runs").iterdir() if p.is_dir())
    table = pl.read_parquet(host / "toy.parquet")
    # Three runs (the study's ci default), each with the shared columns around its own.
    assert table.height == 3
    assert table.columns[:4] == ["host", "study", "target", "filesystem"]
    assert {"rep", "files", "files_per_s", "status", "reason", "worker_version", "redone"} <= set(table.columns)
    assert (table["status"] == "ok").all() and (table["files"] == 200).all()
    assert (table["files_per_s"] > 0).all()

    summary = json.loads((workdir / "results" / "tables" / "toy-summary.json").read_text())
    assert summary["runs"] == 3
    assert (workdir / "results" / "figures" / "toy-rates.svg").stat().st_size > 0
    text = " ".join(pdf_text(workdir / "results" / "paper" / "paper.pdf").split())
    assert "Toy: a small tree of empty files" in text
    assert "The worker made 200 files 3 times on tmpfs" in text
    # its peer and its memory limit, from its record alone: in the audit and the threats
    ratios = pl.read_csv(workdir / "results" / "tables" / "toy-peers.csv")["worker_over_python"]
    assert ratios.len() == 3 and (ratios > 0).all()
    (peer,) = [p for p in audit_of(workdir)["peers"] if p["study"] == "toy"]
    assert peer["peer"] == "a Python loop" and peer["points"] == 3 and ratios.min() <= peer["geomean"] <= ratios.max()
    b5 = next(c for c in audit_of(workdir)["crimes"] if c["id"] == "B5")["how"]
    assert "over 3 points for a Python loop (toy)" in b5
    memory = audit_of(workdir)["threats"]["memory"]
    assert memory["limits_mb"]["toy"] == 96 and memory["original"]["toy"] == "2 GB"
    assert "96 MiB for toy" in text and "2 GB for toy" in text
    # its original, from its record alone: the scale gap in the audit and the threats, the machine in the threats
    audit = json.loads((workdir / "results" / "tables" / "audit.json").read_text())
    gap = [r for r in audit["threats"]["scale"] if r["study"] == "toy"]
    assert gap == [{"study": "toy", "quantity": "files per run", "ours": 200, "original": 10000, "unit": "",
                    "factor": 50.0}]
    assert "toy files per run" in text and "200 10,000 50.0" in text
    assert "a laptop of 2010 with tmpfs and ext4 (toy)" in text
    assert audit["originals"]["toy"]["citation"] == "toy-original"
    # one run against the published number: no interval exists, so no verdict
    assert summary["verdicts"][0]["verdict"] == "too few runs"
    page = (workdir / "results" / "blog" / "toy.html").read_text()
    assert "How fast does the worker make a small tree of empty files?" in page
    for name in config["studies"]:  # (BOATLOAD_FULL=1: the five studies of config/ci.yaml too)
        assert (host / f"{name}.parquet").is_file(), name
