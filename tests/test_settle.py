"""`boatload reproduce --settle`: after a real run on the ci config, more
repetitions of exactly the points behind the claims left open, rep numbers
continuing, and each carried claim's look and runs in the summary."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from boatload.system import hostname

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
    forest.update(methods=["worker-1t", "worker-2t", "python", "tar", "unzip"], scale_files=[1000])
    config["studies"] = {"forest": forest}
    config["settle"] = {"looks": 2, "max_repetitions": 2}
    (workdir / "config" / "settle.yaml").write_text(yaml.safe_dump(config))
    boatload(workdir, "reproduce", "--configfile", "config/settle.yaml")
    runs = workdir / "data" / "runs" / hostname()
    before = reps(runs)
    assert before and all(numbers == [1] for numbers in before.values()), before
    first = {key: (runs / "forest" / key[0] / key[1] / "rep1.json").stat().st_mtime_ns for key in before}
    summary = json.loads((workdir / "results" / "tables" / "forest-summary.json").read_text())
    opened = [v for v in summary["verdicts"] if v["verdict"] in ("inconclusive", "too few runs")]
    assert opened

    out = boatload(workdir, "reproduce", "--configfile", "config/settle.yaml", "--settle", "5")
    after = reps(runs)
    grown = {key for key, numbers in after.items() if numbers != before[key]}
    assert grown == OPEN_POINTS, (grown, out.stderr[-2000:])
    assert all(after[key] == [1, 2] for key in grown)  # rep numbers continue after the existing one
    assert all((runs / "forest" / t / p / "rep1.json").stat().st_mtime_ns == first[(t, p)] for t, p in before)

    summary = json.loads((workdir / "results" / "tables" / "forest-summary.json").read_text())
    carried = [v for v in summary["verdicts"] if "settle" in v]
    assert {v["claim"] for v in carried} == {v["claim"] for v in opened
                                             if {v.get("numerator"), v.get("denominator")} <= {p for _, p in OPEN_POINTS}}
    for v in carried:
        assert v["settle"]["look"] == 2 and v["settle"]["runs_per_side"] == [2, 2] and v["settle"]["runs_added"] == 2
        # 2 runs per side allow no interval at the last look's level: undecided, and said so
        assert v["verdict"] == "too few runs" and v["settle"]["decided"] is False
    assert summary["settle"]["runs_added"] == len(OPEN_POINTS)
    assert "2 looks at 1, 2 runs per side" in summary["settle"]["design"]
