"""The whole workflow on config/ci.yaml: real targets, real worker, the paper at the end."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

from boatload.studies import names, registry, study
from audit_checks import check_audit
from conftest import ours_left
from pdf_layout import outside
from notebook_checks import pdf_text, spec_records

pytestmark = pytest.mark.e2e
NAMES = names()
FIGURES = {name: s.figures for name, s in registry().items()}


def categories(report: Path) -> dict:
    """The report's grouping: {category: {subcategory: [files]}}."""
    text = report.read_text()
    m = re.search(r"var categories = (\{.*?\});\s*$", text, re.MULTILINE)
    assert m, "no category index in the report"
    return json.loads(m.group(1))


def check_report(workdir: Path, studies: list[str], *config: str) -> None:
    out = snakemake(workdir, *config, "--report", "results/report.html")
    assert out.returncode == 0, out.stderr[-4000:]
    report = workdir / "results" / "report.html"
    assert report.is_file() and report.stat().st_size > 0
    text = report.read_text()
    groups = categories(report)
    for name in studies:
        assert name in text
        assert name in groups, sorted(groups)
        files = [f for sub in groups[name].values() for f in sub]
        for figure in FIGURES[name]:
            assert f"results/figures/{name}-{figure}.svg" in files, (name, files)
        assert f"results/tables/{name}.csv" in files
        # Figures sit under their own study only.
        for other, subs in groups.items():
            if other != name:
                assert not any(Path(f).name.startswith(f"{name}-") for sub in subs.values() for f in sub)


def rules_ran(out: subprocess.CompletedProcess) -> set[str]:
    """The rules a Snakemake run (or `boatload figure`) says it ran."""
    return {line.split()[-1].rstrip(":") for line in (out.stdout + out.stderr).splitlines()
            if line.startswith(("rule ", "localrule "))}


def snakemake(workdir, *args, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *args],
        cwd=workdir, capture_output=True, text=True, **kwargs,
    )


def test_ci_run_builds_the_paper_then_has_nothing_to_do(workdir, tmp_path):
    config = yaml.safe_load((workdir / "config" / "ci.yaml").read_text())
    forest = config["studies"]["forest"]
    # config/ci.yaml but for the preflight's sample of the machine's load (3 s before each plan with runs to
    # measure, a dry run's too): tests/test_machineload.py tests it; this test checks each run's own quiet
    config["interference"] = {"preflight_sample_s": 0}
    (workdir / "config" / "e2e.yaml").write_text(yaml.safe_dump(config))
    configfile = "config/e2e.yaml"

    plan = snakemake(workdir, "--configfile", configfile, "--dry-run")
    assert plan.returncode == 0, plan.stderr
    # Every study's every job is planned.
    all_jobs = sum(len(study(name).jobs(config)) for name in NAMES if name in config["studies"])
    assert set(NAMES) == {"degradation", "journal", "forest", "filecount", "tmpfs", "calibration"}
    assert any(line.split() == ["measure", str(all_jobs)] for line in plan.stdout.splitlines()), plan.stdout
    # the method runs, and the scale curve's runs of the worker at each size
    planned = len(forest["targets"]) * len(forest["methods"]) * config["repetitions"]
    planned_scale = len(forest["targets"]) * len(forest["scale_files"]) * config["repetitions"]
    assert planned_scale > 0

    first = snakemake(workdir, "--configfile", configfile)
    assert first.returncode == 0, first.stderr[-4000:]
    assert ours_left(workdir) == []

    pdf = workdir / "results" / "paper" / "paper.pdf"
    assert pdf.read_bytes().startswith(b"%PDF")

    host = next((workdir / "data" / "runs").iterdir())
    for name in NAMES:
        table = pl.read_parquet(host / f"{name}.parquet")
        assert table.height > 0, name
        if os.geteuid() == 0:
            assert (table["status"] != "error").all(), (name, table.filter(pl.col("status") == "error"))
    # Every notebook ran on the ci data, and its main figure plots a measured
    # point for every target with a measurement, beside the published ones
    # (the known-answer study plots its claims against their truths: no original).
    for name in (n for n in NAMES if not study(n).known_answers):
        table = pl.read_parquet(host / f"{name}.parquet")
        spec = json.loads((workdir / "results" / "figures" / f"{name}-{FIGURES[name][0]}.vl.json").read_text())
        records = spec_records(spec)
        plotted = {r["target"] for r in records if r.get("source") == "measured"}
        assert plotted == set(table.filter(pl.col("status") == "ok")["target"]), name
        assert any(r.get("source") == "published" for r in records), name
    all_runs = pl.read_parquet(host / "forest.parquet")
    assert all_runs.height == planned + planned_scale
    scale = all_runs.filter(pl.col("series") == "scale")
    assert scale.height == planned_scale and set(scale["method"]) == {"worker-2t"}
    assert sorted(set(scale["files_planned"])) == sorted(forest["scale_files"])
    runs = all_runs.filter(pl.col("series") == "methods")
    assert runs.height == planned
    assert set(runs["method"]) == set(forest["methods"])
    assert set(runs["target"]) == set(forest["targets"])
    measured = runs.filter(pl.col("status") == "ok")
    if os.geteuid() == 0:
        assert measured.height == planned, runs.filter(pl.col("status") != "ok").select("target", "method", "reason")
    assert (measured["files_per_s"] > 0).all()
    complete = measured.filter(~pl.col("extrapolated"))
    assert (complete["files"] == complete["files_planned"]).all()

    table = pl.read_csv(workdir / "results" / "tables" / "forest.csv")
    pairs = table.select("target", "method").unique()
    assert pairs.height == table.height == measured.select("target", "method").unique().height
    assert (table["files_per_s"] > 0).all()
    # The scale curve projects the full forest on every target it measured.
    projection = json.loads((workdir / "results" / "tables" / "forest-summary.json").read_text())["projection"]
    assert projection["runs"] == planned_scale
    if os.geteuid() == 0:
        assert scale.filter(pl.col("status") != "ok").height == 0, scale.select("target", "files_planned", "reason")
        assert sorted(p["target"] for p in projection["targets"]) == sorted(forest["targets"])
        assert all(p["projected_s"] > 0 for p in projection["targets"])
    for figure in FIGURES["forest"]:
        assert (workdir / "results" / "figures" / f"forest-{figure}.svg").stat().st_size > 1000, figure
    # config/ci.yaml's figure_formats, [svg], reached every notebook: no PNG or PDF beside the specs
    assert config["figure_formats"] == ["svg"]
    assert {p.name.split(".", 1)[1] for p in (workdir / "results" / "figures").iterdir()} == {"svg", "vl.json"}

    # Every raw result carries its provenance.
    raw = json.loads(next((host / "forest").rglob("rep1.json")).read_text())
    assert raw["machine"]["kernel"] and raw["worker"]["sha256"] and raw["machine"]["lock_sha256"]

    # A quiet run flags nothing: every measured run has a record of its timed
    # phases, none disturbed, none redone, and Snakemake used no CPU in them;
    # but for the hypervisor's steal, which no process of this machine makes
    # (a spell of it disturbs a phase and the run is measured again after it).
    measured = [json.loads(p.read_text()) for p in host.rglob("rep*.json") if "archive" not in p.parts]
    measured = [d for d in measured if d["result"]["status"] == "ok" and not d["target"]["substituted"]]
    assert measured
    for doc in measured:
        record = doc["interference"]
        assert record["phases"], (doc["study"], doc["job"]["point"])
        by = [p["disturbed_by"] for a in record["redone"] for p in a["interference"] if p["disturbed"]]
        by += [p["disturbed_by"] for p in record["phases"] if p["disturbed"]]
        assert all(b == ["steal"] for b in by), (doc["study"], doc["job"]["point"], record["why"])
    phases = [p for d in measured for p in d["interference"]["phases"] if p["measured"]]
    seconds = sum(p["seconds"] for p in phases)
    ours = sum(p["cpu_s"]["orchestrator"] + p["cpu_s"]["monitor"] for p in phases)
    assert sum(p["cpu_s"]["orchestrator"] for p in phases) <= 0.01 * seconds, (ours, seconds)
    conditions = json.loads((workdir / "results" / "provenance.json").read_text())["conditions"]
    assert set(conditions) == set(NAMES)
    assert all(c["redone_runs"] == c["redone_for_steal"] for c in conditions.values())
    text = pdf_text(pdf)
    assert "Measurement conditions" in text and "still disturbed" in text and "Cold or warm" in text
    # cold or warm, ours and the original's, for each study with an original (not the known-answer one)
    originals = [n for n in NAMES if not study(n).known_answers]
    assert all(conditions[n]["cache"]["ours"] and conditions[n]["cache"]["original"] for n in originals)
    assert text.count("Original:") == len(originals)
    if os.geteuid() == 0:
        assert "Projected time for the full 1e9 forest" in text
    # The paper a reviewer reads: its sections, references, the audit of this
    # very run, and no word past the margin on any page.
    check_audit(workdir / "results")
    for head in ("Introduction", "Threats to validity", "Conclusion", "References", "Benchmarking-crimes audit"):
        assert head in text, head
    assert outside(pdf) == []
    # Every study's blog page fits a 1280 and a 420 px window with its figures shown.
    if shutil.which("chromium"):
        from test_blog_chromium import WIDTHS, measure_all

        probes = workdir / "chromium"
        probes.mkdir()
        pages = sorted((workdir / "results" / "blog").glob("*.html"))
        assert {p.stem for p in pages} == set(NAMES)
        for (page, width), m in measure_all(pages, WIDTHS, probes).items():
            assert m["innerWidth"] == width, (page.name, width, m)
            assert m["scrollWidth"] <= m["clientWidth"] and m["wide"] == [], (page.name, width, m["wide"])
            assert m["figures"] and all(w >= 100 and h >= 50 for w, h in m["figures"]), (page.name, width)

    # `snakemake --report`: one HTML report with every study's figures and table under the study's name.
    check_report(workdir, list(NAMES), "--configfile", configfile)

    start = time.monotonic()
    second = snakemake(workdir, "--configfile", configfile)
    elapsed = time.monotonic() - start
    assert second.returncode == 0
    assert "Nothing to be done" in second.stdout + second.stderr
    assert elapsed < 10

    # A run gone is measured again alone: the chain links runs still to
    # measure, never one that exists to one measured again. (The plan is the
    # property; measuring it would repeat the first run's path, so the run is
    # put back, its time unchanged, and nothing is left to do.)
    gone = [sorted((host / "forest").rglob("rep1.json"))[0], host / "forest.parquet"]
    for i, path in enumerate(gone):
        path.rename(tmp_path / f"aside{i}")
    plan = snakemake(workdir, "--configfile", configfile, "--dry-run")
    for i, path in enumerate(gone):
        (tmp_path / f"aside{i}").rename(path)
    assert plan.returncode == 0, plan.stderr
    planned = {line.split()[0]: int(line.split()[1]) for line in plan.stdout.splitlines()
               if len(line.split()) == 2 and line.split()[1].isdigit()}
    assert planned.get("measure") == 1, plan.stdout

    # One figure: only that study's notebook, its blog page and the paper run again.
    before = pdf.stat().st_mtime_ns
    figure = subprocess.run(
        [sys.executable, "-m", "boatload.workflow.cli", "figure", "forest", "--configfile", configfile],
        cwd=workdir, capture_output=True, text=True,
    )
    assert figure.returncode == 0, figure.stderr[-3000:]
    ran = rules_ran(figure)
    assert ran == {"notebook_forest", "blog", "paper"}, ran
    assert pdf.stat().st_mtime_ns > before


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_ctrl_c_mid_run_leaves_no_mount_or_loop_device(workdir):
    config = yaml.safe_load((workdir / "config" / "ci.yaml").read_text())
    config["targets"]["ext4"]["size_mb"] = 256
    # 50,000 files: a 256 MB ext4 image holds 65,536 inodes (the preflight refuses more)
    # no scale curve: its short runs could finish (and publish) before the Ctrl-C
    config["studies"]["forest"].update(shape=[50, 1000], methods=["touch-each"], targets=["ext4"], time_cap_s=120,
                                       scale_files=[])
    config["studies"] = {"forest": config["studies"]["forest"]}
    config["interference"] = {"preflight_sample_s": 0}  # no 3 s sample of the machine's load before it starts
    (workdir / "config" / "slow.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "config/slow.yaml"],
        cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        # As from a terminal: SIGINT at its default, even when the tests run in the background.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # Wait until the target is mounted, then press Ctrl-C (SIGINT to the whole process group).
    deadline = time.monotonic() + 60
    while not ours_left(workdir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ours_left(workdir), "the run never mounted its target"
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert ours_left(workdir) == [], out[-3000:]
    # No raw result was published for the interrupted run.
    assert not list((workdir / "data" / "runs").rglob("rep1.json"))
