"""Where a run's time goes outside its timed phases (issue #38, item 3).

For every study of a config, the first run of each of its targets in the
plan's order (boatload.workflow.plan.runs), each as `make reproduce` runs it: one
`boatload run` process per job. Prints per study the plan's run count, the
jobs measured, the wall seconds per run (the process, start to exit) and the
share of it in timed phases (the interference monitor's phase seconds), and,
where the raw result records them (boatload.measure.runner: `seconds`), the mean
seconds per run of provisioning, of measuring outside the timed phases, of
teardown, and of the process around them (start-up, the calibration, the
result's provenance, and any attempts the interference monitor had measured
again: `redone` counts them).

    BOATLOAD_SCRATCH=/tmp/me .venv/bin/python bench/overhead.py [--config config/config.yaml] [--studies a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boatload.studies import config as config_mod
from boatload.workflow import plan
from quickrun import timed_seconds  # bench/ is this script's first sys.path entry

ROOT = Path(__file__).resolve().parents[1]


def one_per_target(runs: list[plan.Run]) -> list[plan.Run]:
    seen, out = set(), []
    for run in runs:
        if (run.study, run.target) not in seen:
            seen.add((run.study, run.target))
            out.append(run)
    return out


def measure(run: plan.Run, out_dir: Path) -> tuple[float, float, dict | None, int]:
    out = out_dir / f"{run.study}-{run.target}-{run.point}.json"
    start = time.monotonic()
    proc = subprocess.run([str(Path(sys.executable).parent / "boatload"), "run", run.study, "--job", json.dumps(run.job),
                           "--out", str(out), "--runs-dir", str(out_dir)], capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0 or not out.exists():
        sys.exit(f"bench/overhead.py: {run.key} failed: {proc.stderr.strip()[-400:]}")
    doc = json.loads(out.read_text())
    return wall, timed_seconds(doc), doc.get("seconds"), len(doc["interference"]["redone"])


def mean_or_dash(values: list[float | None]) -> str:
    return "–" if not values or None in values else f"{sum(values) / len(values):.1f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="config/config.yaml")
    p.add_argument("--studies", help="comma-separated; default: all of the config's")
    args = p.parse_args()
    if not os.environ.get("BOATLOAD_SCRATCH"):
        sys.exit("bench/overhead.py: set BOATLOAD_SCRATCH to a scratch directory of your own")
    config = config_mod.load(Path(args.config))
    if args.studies:
        config["only_studies"] = args.studies
    all_runs = plan.runs(config)
    print("| study | runs in plan | jobs measured | s per run | timed share "
          "| provision s | untimed measure s | teardown s | process s | redone |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="overhead-") as tmp:
        for name in plan.studies(config):
            chosen = one_per_target([r for r in all_runs if r.study == name])
            walls, timed, steps, redone = [], [], [], 0
            for run in chosen:
                wall, t, seconds, again = measure(run, Path(tmp))
                redone += again
                walls.append(wall)
                timed.append(t)
                steps.append((wall, t, seconds))
                print(f"  {run.key}: {wall:.1f} s, timed {t:.1f} s, steps {seconds}, redone {again}", file=sys.stderr)
            recorded = [(w, t, s) for w, t, s in steps if s]
            provision = [s["provision"] for _, _, s in recorded] if len(recorded) == len(steps) else []
            untimed = [s["measure"] - t for _, t, s in recorded] if provision else []
            teardown = [s["teardown"] for _, _, s in recorded] if provision else []
            process = [w - sum(s.values()) for w, _, s in recorded] if provision else []
            n_plan = sum(1 for r in all_runs if r.study == name)
            print(f"| {name} | {n_plan} | {len(chosen)} | {sum(walls) / len(walls):.1f} | "
                  f"{sum(timed) / sum(walls):.0%} | {mean_or_dash(provision)} | {mean_or_dash(untimed)} | "
                  f"{mean_or_dash(teardown)} | {mean_or_dash(process)} | {redone} |", flush=True)


if __name__ == "__main__":
    main()
