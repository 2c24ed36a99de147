"""`boatload reproduce --settle`: after a real run on the ci config, more
repetitions of exactly the points behind the claims left open, rep numbers
continuing, and each carried claim's look and runs in the summary."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from boatload.base.system import hostname
from boatload.analysis.verdict import DECIDED, OPEN, UNTESTABLE
from conftest import PAIRED_INTERFERENCE
from notebook_checks import pdf_text

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (loop devices and mounts)")
BOATLOAD = str(Path(sys.executable).parent / "boatload")
# behind the forest claims with both sides measured (worker-1t vs python, tar vs unzip, on ext4)
OPEN_POINTS = {("ext4", "worker-1t"), ("ext4", "python"), ("ext4", "tar"), ("ext4", "unzip")}


def boatload(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    # as `make` runs it: the environment's tools (snakemake, papermill) first on PATH
    env = {**os.environ, "PATH": f"{Path(BOATLOAD).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run([BOATLOAD, *args], cwd=workdir, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    return out


def reps(runs: Path) -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for raw in sorted(runs.glob("forest/*/*/rep*.json")):
        found.setdefault((raw.parent.parent.name, raw.parent.name), []).append(int(raw.stem.removeprefix("rep")))
    return {k: sorted(v) for k, v in found.items()}


@needs_root
def test_settle_adds_repetitions_only_to_open_claims_points_and_records_their_runs(workdir):
    config = yaml.safe_load((workdir / "config" / "ci.yaml").read_text())
    forest = config["studies"]["forest"]
    # ext4 alone: the claims whose both sides are measured; one scale size, the fewest the study takes
    forest.update(methods=["worker-1t", "python", "tar", "unzip"], targets=["ext4"], scale_files=[1000])
    config["studies"] = {"forest": forest}
    # two looks: the run's one repetition, then 4 a point (4 runs per side reach 97.1 %, above the
    # second look's level, 1 - 0.0499; the first look's 1 - 0.00009 needs 8)
    config["settle"] = {"looks": 2, "max_repetitions": 4}
    # no 3 s sample of the machine's load before each plan with runs to measure (tests/test_machineload.py's);
    # beside another test (tests/conftest.py's PAIRED_FILES) a run it disturbs is kept and marked, not measured
    # again: what is checked is which points get runs, not how fast they were; but shielded, as the direction
    # of a native program against a Python interpreter's start is asserted settled at 4 runs a side, which a
    # neighbour on both cores can undo (its runs are short: the neighbours wait a few seconds in all)
    config["interference"] = {**PAIRED_INTERFERENCE, "preflight_sample_s": 0, "shield": True}
    (workdir / "config" / "settle.yaml").write_text(yaml.safe_dump(config))
    boatload(workdir, "reproduce", "--configfile", "config/settle.yaml")
    runs = workdir / "data" / "runs" / hostname()
    before = reps(runs)
    assert before and all(numbers == [1] for numbers in before.values()), before
    first = {key: (runs / "forest" / key[0] / key[1] / "rep1.json").stat().st_mtime_ns for key in before}
    summary = json.loads((workdir / "results" / "tables" / "forest-summary.json").read_text())
    opened = [v for v in summary["verdicts"] if v["verdict"] in OPEN]
    assert opened

    out = boatload(workdir, "reproduce", "--configfile", "config/settle.yaml", "--settle", "5")
    after = reps(runs)
    grown = {key for key, numbers in after.items() if numbers != before[key]}
    assert grown == OPEN_POINTS, (grown, out.stderr[-2000:])
    assert all(after[key] == [1, 2, 3, 4] for key in grown)  # rep numbers continue after the existing one
    assert all((runs / "forest" / t / p / "rep1.json").stat().st_mtime_ns == first[(t, p)] for t, p in before)

    summary = json.loads((workdir / "results" / "tables" / "forest-summary.json").read_text())
    carried = [v for v in summary["verdicts"] if "settle" in v]
    assert {v["claim"] for v in carried} == {v["claim"] for v in opened
                                             if {v.get("numerator"), v.get("denominator")} <= {p for _, p in OPEN_POINTS}}
    for v in carried:
        assert v["settle"]["look"] == 2 and v["settle"]["runs_per_side"] == [4, 4] == v["runs_per_side"]
        assert v["settle"]["runs_added"] == 6  # 3 more on each side
        assert v["level"] == pytest.approx(v["settle"]["level"]) and 0.95 < v["level"] < 0.951
        assert v["settle"]["decided"] == (v["verdict"] not in OPEN)
    # a native program against a Python script that starts an interpreter: its direction settled at 4 runs
    # a side (its size against the original's band may still be open: "reproduced" needs the whole interval inside)
    native = next(v for v in carried if v["numerator"] == "worker-1t")
    assert native["direction"] == "same" and native["ours_low"] > 1.0, native
    assert summary["settle"]["runs_added"] == 3 * len(OPEN_POINTS)
    assert summary["settle"]["decided"] == sum(v["settle"]["decided"] for v in carried)
    assert summary["settle"]["design"].startswith("at most 2 looks at 1, 4 runs per side")
    # the look's analysis wrote its figures as SVG alone (shown nowhere; the workflow's follow the config)
    look_figures = {p.name.split(".", 1)[1] for p in (workdir / "results" / "settle" / "look2" / "figures").iterdir()}
    assert look_figures == {"svg", "vl.json"}, look_figures
    # the look's progress lines say how many claims were decided so far, the last line how many in all
    # (beside another test a run may be kept disturbed, redo being off: the line then says so after it)
    assert re.search(r"^boatload: progress: .*; \d+ of \d+ claims tested decided so far"
                     r"(; \d+ kept disturbed by a constant load \(not measured again\))?$", out.stderr, re.M), \
        out.stderr[-3000:]
    tested = [v for v in summary["verdicts"] if v["verdict"] not in UNTESTABLE]
    assert f"in all {sum(v['verdict'] in DECIDED for v in tested)} of {len(tested)} claims tested decided" \
        in out.stderr
    # the paper's method section states the design and what it decided, from the summary
    text = pdf_text(workdir / "results" / "paper" / "paper.pdf")
    assert "measured again (make settle)" in text and "2 looks at 1, 4 runs per side" in text, text[-3000:]
    assert f"Of the {len(carried)} claims it carried, {summary['settle']['decided']} were decided" in text
