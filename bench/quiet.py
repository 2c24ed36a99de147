"""How much CPU boatload's own processes use while the worker measures.

Runs whole workflows through Snakemake, each in a temporary copy of the
workflow with its own scratch directory and results, and reads back the
interference record of every timed phase (boatload.measure.interference): the CPU
of the orchestrator (the Snakemake process tree outside the run: scheduler,
solver, logging, progress) and of the run's own monitor, against the
phase's wall time. Prints, per workflow, their share of one core over all
measured phases and in the worst phase, and PASS when the share is at most
the goal (1 % of one core).

Workflows: `ci` (config/ci.yaml as it is) and `many` (the forest study of
ci.yaml on tmpfs with enough repetitions for --many-jobs measurement jobs:
a Snakemake with hundreds of jobs left to schedule). Each runs as the
repository has it (`chained`: the measurements form one chain, so one is
ready at a time) and, as the control measured in the same invocation, with
the chain taken out of the copy's rules (`unchained`: every measurement
ready at once, one `bench` resource, as before). Needs root for real
targets (without it the runs measure plain directories, which still shows
the orchestrator's share).

    uv run python bench/quiet.py [--workflows ci,many] [--variants chained,unchained] [--many-jobs 280] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ["workflow", "config", "notebooks", "paper", "data/reference", "uv.lock", "pyproject.toml"]
GOAL = 0.01  # share of one core
METHODS = 7  # the forest study's creation methods in ci.yaml


def clone(into: Path) -> Path:
    for name in WORKFLOW_FILES:
        src, dst = ROOT / name, into / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dst)
    return into


def unchain(workdir: Path) -> None:
    """The control: measurements without the chain, analysis without waiting for the last run."""
    for rules, link in (("measure.smk", "        previous=previous_run,\n"), ("analysis.smk", "        after=LAST_PENDING_RUN,\n")):
        path = workdir / "workflow" / "rules" / rules
        text = path.read_text()
        if link not in text:
            sys.exit(f"bench quiet: {path} has no line {link.strip()!r} to take out for the control")
        path.write_text(text.replace(link, ""))


def many_config(ci: dict, jobs: int) -> dict:
    config = dict(ci)
    forest = dict(ci["studies"]["forest"], targets=["tmpfs"], shape=[10, 500])
    config["studies"] = {"forest": forest}
    config["repetitions"] = max(1, math.ceil(jobs / len(forest["methods"])))
    return config


def run_workflow(workdir: Path, configfile: str) -> tuple[float, int]:
    env = {**os.environ, "BOATLOAD_ROOT": str(workdir), "BOATLOAD_SCRATCH": str(workdir / "results" / "scratch"),
           "BOATLOAD_WORKER": str(ROOT / "native" / "build" / "boatload-worker"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--configfile", configfile, "--cores", "2"],
                          cwd=workdir, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench quiet: snakemake failed in {workdir}:\n{proc.stderr[-3000:]}")
    return time.monotonic() - start, proc.returncode


def measured_phases(workdir: Path) -> list[dict]:
    phases = []
    for path in sorted((workdir / "data" / "runs").glob("*/*/**/rep*.json")):
        doc = json.loads(path.read_text())
        record = doc.get("interference") or {}
        phases += [p for p in record.get("phases", []) if p["measured"]]
    return phases


def summarise(name: str, variant: str, phases: list[dict], wall_s: float, jobs: int) -> dict:
    seconds = sum(p["seconds"] for p in phases)
    orchestrator = sum(p["cpu_s"]["orchestrator"] for p in phases)
    monitor = sum(p["cpu_s"]["monitor"] for p in phases)
    others = sum(p["cpu_s"]["other_processes"] for p in phases)
    long_ = [p for p in phases if p["seconds"] >= 0.1]
    worst = max(((p["cpu_s"]["orchestrator"] + p["cpu_s"]["monitor"]) / p["seconds"] for p in long_), default=None)
    share = (orchestrator + monitor) / seconds if seconds else None
    return {
        "workflow": name, "variant": variant, "jobs": jobs, "phases": len(phases), "phase_s": seconds, "wall_s": wall_s,
        "orchestrator_cpu_s": orchestrator, "monitor_cpu_s": monitor, "other_processes_cpu_s": others,
        "ours_share": share, "worst_phase_share": worst,
        "disturbed": sum(p["disturbed"] for p in phases),
        "pass": share is not None and share <= GOAL,
    }


def verdict(row: dict) -> str:
    if row["variant"] != "chained":
        return "(control)"
    return "PASS" if row["pass"] else "FAIL"


def run_one(name: str, variant: str, ci: dict, args) -> dict:
    from boatload.studies import study

    base = args.keep or Path(tempfile.mkdtemp(prefix="boatload-quiet-"))
    workdir = clone(base / f"{name}-{variant}")
    if variant == "unchained":
        unchain(workdir)
    configfile = "config/ci.yaml"
    if name == "many":
        configfile = "config/bench-many.yaml"
        (workdir / configfile).write_text(yaml.safe_dump(many_config(ci, args.many_jobs)))
    config = yaml.safe_load((workdir / configfile).read_text())
    jobs = sum(len(study(s).jobs(config)) for s in config["studies"])
    print(f"bench quiet: {name} {variant}: {jobs} measurement jobs in {workdir}", flush=True)
    try:
        wall, _ = run_workflow(workdir, configfile)
        return summarise(name, variant, measured_phases(workdir), wall, jobs)
    finally:
        subprocess.run([str(Path(sys.executable).with_name("boatload")), "cleanup", "--scratch",
                        str(workdir / "results" / "scratch")], capture_output=True)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workflows", default="ci,many", help="which workflows to run (ci, many)")
    ap.add_argument("--variants", default="chained,unchained", help="chained (as the repository has it), unchained (control)")
    ap.add_argument("--many-jobs", type=int, default=280, help="measurement jobs of the `many` workflow")
    ap.add_argument("--keep", type=Path, help="run in DIR/<workflow> and keep it (default: a temporary dir)")
    ap.add_argument("--json", type=Path, help="write the summaries here")
    args = ap.parse_args(argv)
    ci = yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())
    rows = []
    for name in args.workflows.split(","):
        if name not in ("ci", "many"):
            sys.exit(f"bench quiet: --workflows: unknown workflow '{name}' (known: ci, many)")
        for variant in args.variants.split(","):
            if variant not in ("chained", "unchained"):
                sys.exit(f"bench quiet: --variants: unknown variant '{variant}' (known: chained, unchained)")
            rows.append(run_one(name, variant, ci, args))
    print()
    print(f"{'workflow':9} {'variant':10} {'jobs':>5} {'phases':>6} {'phase s':>8} {'wall s':>7} {'snakemake s':>11} "
          f"{'monitor s':>9} {'ours':>7} {'worst':>7} {'others s':>8} {'disturbed':>9}  goal <= {100 * GOAL:g} %")
    for r in rows:
        worst = f"{100 * r['worst_phase_share']:.2f}%" if r["worst_phase_share"] is not None else "-"
        print(f"{r['workflow']:9} {r['variant']:10} {r['jobs']:>5} {r['phases']:>6} {r['phase_s']:>8.1f} {r['wall_s']:>7.0f} "
              f"{r['orchestrator_cpu_s']:>11.2f} {r['monitor_cpu_s']:>9.2f} {100 * r['ours_share']:>6.2f}% "
              f"{worst:>7} {r['other_processes_cpu_s']:>8.2f} {r['disturbed']:>9}  {verdict(r)}")
    print("ours: CPU of Snakemake's process tree outside the run and of the run's monitor, over the measured phases'"
          " wall time, as a share of one core; worst: the largest such share in one phase of 0.1 s or more")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["pass"] for r in rows if r["variant"] == "chained") else 1


if __name__ == "__main__":
    sys.exit(main())
