"""The time budget of `make reproduce` (config `budget_minutes`,
boatload.workflow.settle.budgeted): which open claims a look measures, that a decided
claim gets no more runs, and on a real ci-sized run that the budget stops the
choosing and the paper is still made, and a second run does nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from boatload.workflow import settle
from boatload.workflow import preflight
from boatload.workflow.preflight import ANALYSIS_ESTIMATE_S, NOTEBOOK_START_S, PAPER_ESTIMATE_S, analysis_seconds
from boatload.analysis import settle_record
from boatload.analysis.sequential import Design
from boatload.analysis.verdict import DECIDED
from boatload.base.paths import repo_root
from boatload.base.system import hostname
from conftest import PAIRED_INTERFERENCE

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (loop devices and mounts)")
BOATLOAD = str(Path(sys.executable).parent / "boatload")
NATIVE, TAR, TOUCH = ("forest/ext4/worker-1t", "forest/ext4/python"), ("forest/ext4/tar", "forest/ext4/unzip"), \
    ("forest/ext4/touch-many", "forest/ext4/touch-each")


def ci_forest() -> dict:
    config = yaml.safe_load((repo_root() / "config" / "ci.yaml").read_text())
    forest = config["studies"]["forest"]
    forest.update(methods=["worker-1t", "python", "tar", "unzip", "touch-many", "touch-each"], targets=["ext4"],
                  scale_files=[1000])
    config["studies"] = {"forest": forest}
    return config


def record(decided_native: bool) -> dict:
    def claim(points, decided, need):
        return {"study": "forest", "points": list(points), "decided": decided, "entry": {"runs_to_settle": need}}

    return {"design": {"alpha": 0.05, "looks": 2}, "schedules": {"forest": [1, 4]}, "first_reps": {"forest": 1},
            "points": {}, "claims": {"forest: native": claim(NATIVE, decided_native, 4), "forest: tar": claim(TAR, False, 4),
                       # beyond the design's last look (4) at the spread seen: chosen after every other
                       "forest: touch": claim(TOUCH, False, 40)}}


def test_a_decided_claim_gets_no_more_runs_and_the_choice_is_the_same_given_the_same_record(tmp_path):
    config = ci_forest()
    chosen, points, new = settle._choose(record(True), config, tmp_path, tmp_path / 'results', 2, 3600.0)
    assert "forest: native" not in chosen and set(chosen) == {"forest: tar", "forest: touch"}
    assert set(points) == set(TAR + TOUCH) and all(v == 4 for v in points.values())
    # (no run was measured in this empty runs folder: the first round is pending too)
    assert {(r.target, r.point) for r in new if r.rep > 1} == {tuple(p.split("/")[1:]) for p in TAR + TOUCH}
    again = settle._choose(record(True), config, tmp_path, tmp_path / 'results', 2, 3600.0)
    assert (list(again[0]), again[1], [r.key for r in again[2]]) == (list(chosen), points, [r.key for r in new])


def test_the_budget_left_bounds_the_choice(tmp_path):
    config = ci_forest()
    everything, _, _ = settle._choose(record(False), config, tmp_path, tmp_path / 'results', 2, 3600.0)
    assert list(everything)[-1] == "forest: touch"  # the one the last look cannot decide, last
    assert settle._choose(record(False), config, tmp_path, tmp_path / 'results', 2, 0.0)[0] == {}
    # time for the analysis and a few runs: the cheapest claims to decide, not the one beyond reach
    some, _, new = settle._choose(record(False), config, tmp_path, tmp_path / "results", 2, ANALYSIS_ESTIMATE_S + 10.0)
    assert some and "forest: touch" not in some
    assert sum(settle.estimates([r for r in new if r.rep > 1], tmp_path).values()) <= 10.0


def test_a_study_of_cheap_runs_looks_at_more_of_them_than_the_others(tmp_path):
    config = yaml.safe_load((repo_root() / "config" / "config.yaml").read_text())
    config["settle"] = {"looks": 2, "max_repetitions": 8, "per_study": {"forest": {"max_repetitions": 16}}}
    designs = settle._designs(config, ["forest", "journal", "degradation"])
    assert designs["forest"].schedule == (4, 16) and designs["journal"].schedule == (4, 8)
    assert designs["degradation"].schedule == (6, 8)
    # the same alpha in all, the last look of each at the level the rest of it allows
    assert all(abs(sum(d.spent()) - 0.05) < 1e-12 for d in designs.values())
    assert designs["forest"].levels() == designs["journal"].levels()
    # each design is named with its studies in the record's text
    assert "forest: at most 2 looks at 4, 16" in settle._design_text(
        designs, {"a": {"study": "forest"}, "b": {"study": "journal"}})
    config["settle"]["per_study"]["forest"]["max_repetitions"] = 4
    with pytest.raises(SystemExit, match=r"settle\.per_study\.forest\.max_repetitions: 4 cannot hold 2 looks"):
        settle._designs(config, ["forest"])


def quick(name: str) -> dict:
    """The quick config with one of its studies."""
    config = yaml.safe_load((repo_root() / "config" / "config.yaml").read_text())
    config["studies"] = {name: config["studies"][name]}
    return config


def test_a_claim_first_analysed_on_more_runs_than_the_first_look_gets_no_look(tmp_path):
    config = quick("calibration")
    assert config["studies"]["calibration"]["create_repetitions"] > config["repetitions"]
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    tree = {"claim": "tree", "verdict": "inconclusive", "test": "no difference", "runs_per_side": [8, 8],
            "numerator": "null-tree-a", "denominator": "null-tree-b", "target": "cal-ext4"}
    model = {"claim": "model", "verdict": "same direction, size open", "test": "effect", "runs_per_side": [4, 4],
             "numerator": "model-changed", "denominator": "model-base", "target": "cal-hdd-slow"}
    (tables / "calibration-summary.json").write_text(json.dumps({"verdicts": [tree, model]}))
    made = settle._new_record(config, ["calibration"], tmp_path / "results")
    # the tree pair's 8 rounds spent the first analysis' alpha at 8 pairs: only the model claim is carried
    assert list(made["claims"]) == ["calibration: model"]
    assert made["schedules"]["calibration"] == [4, config["settle"]["max_repetitions"]]


def test_the_later_looks_get_what_the_carried_claims_first_analysis_left(tmp_path):
    config = quick("degradation")
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    # six paired rounds: the signed-rank interval at 95 % covers 62/64 (a tail of 1/32), not the
    # unpaired 6 + 6 runs' share (0.0411); a claim of no difference one tail of its 90 % interval
    # at six pairs, 3/64
    write = {"claim": "write", "verdict": "same direction, size open", "test": "effect", "coverage": 62 / 64,
             "runs_per_side": [6, 6], "pairs": 6, "target": "xfs"}
    same = {"claim": "same", "verdict": "inconclusive", "test": "no difference", "coverage": 58 / 64,
            "runs_per_side": [6, 6], "pairs": 6, "target": "ext4"}
    assert (settle.claim_first_alpha(write), settle.claim_first_alpha(same)) == (1 / 32, 3 / 64)
    summary = tables / "degradation-summary.json"
    summary.write_text(json.dumps({"verdicts": [write]}))
    design = settle._new_record(config, ["degradation"], tmp_path / "results")
    assert design["first_alphas"]["degradation"] == 1 / 32 and "spending 0.0312" in design["design"]["text"]
    # each carried claim's two looks stay within 0.05: the later look at 1 - (0.05 - 1/32)
    later = Design(0.05, tuple(design["schedules"]["degradation"]), design["first_alphas"]["degradation"])
    assert later.levels()[-1] == pytest.approx(1 - (0.05 - 1 / 32))
    summary.write_text(json.dumps({"verdicts": [write, same]}))
    both = settle._new_record(config, ["degradation"], tmp_path / "results")
    assert both["first_alphas"]["degradation"] == 3 / 64 and len(both["claims"]) == 2
    # but each claim is judged at what its own first analysis left: the effect claim is not held to
    # the level the claim of no difference, which spent more, leaves
    claims = both["claims"]
    levels = {key: settle.look_level(both, claim, 2) for key, claim in claims.items()}
    assert levels == {"degradation: write": pytest.approx(1 - (0.05 - 1 / 32)),
                      "degradation: same": pytest.approx(1 - (0.05 - 3 / 64))}
    groups = settle.level_groups(both, claims, 2)
    assert [list(group) for _, group in groups] == [["degradation: write"], ["degradation: same"]]
    assert "spending 0.0312" in both["design"]["text"] and "spending 0.0469" in both["design"]["text"]
    # a record made before the claims kept their own share: the study's, as then
    old = {**both, "claims": {k: {kk: v for kk, v in c.items() if kk != "first_alpha"} for k, c in claims.items()}}
    assert [settle.look_level(old, c, 2) for c in old["claims"].values()] == [pytest.approx(1 - (0.05 - 3 / 64))] * 2


def test_a_look_counts_the_runs_a_point_has_from_the_first_rounds(tmp_path):
    config = quick("calibration")
    tree = ("calibration/cal-ext4/null-tree-a", "calibration/cal-ext4/null-tree-b")
    model = ("calibration/cal-hdd-slow/model-changed", "calibration/cal-hdd/model-base")
    rec = {"design": {"alpha": 0.05, "looks": 2}, "schedules": {"calibration": [4, 12]}, "first_reps": {"calibration": 4},
           "points": {},
           "claims": {f"calibration: {n}": {"study": "calibration", "points": list(pts), "decided": False,
                                             "entry": {"runs_to_settle": 10}}
                      for n, pts in (("tree", tree), ("model", model))}}
    chosen, points, new = settle._choose(rec, config, tmp_path, tmp_path / "results", 2, 3600.0)
    assert set(chosen) == {"calibration: tree", "calibration: model"} and set(points.values()) == {12}
    # the tree pair has 8 rounds from the first ones: 4 more each, rep 9 on (no second run of a round);
    # the model pair 8 more each, rep 5 on
    later = {(r.point, r.rep) for r in new if r.rep > 4}
    assert {rep for point, rep in later if point.startswith("null-tree")} == set(range(5, 13))
    assert {rep for point, rep in later if point.startswith("model")} == set(range(5, 13))
    assert len({r.key for r in new}) == len(new)
    # the cost counted: the tree pair's 4 missing runs a side cost less than the model pair's 8
    per_run = {k[:3]: s for k, s in settle.estimates(new, tmp_path).items()}
    tree_s = sum(4 * per_run[tuple(p.split("/", 2))] for p in tree)
    spent_tree_only = settle._choose(rec, config, tmp_path, tmp_path / "results", 2,
                                     tree_s + preflight.ANALYSIS_ESTIMATE_S + 0.5)[0]
    assert list(spent_tree_only) == ["calibration: tree"]
    # claims judged at two levels need the study's analysis twice: the runs of both and one analysis
    # take both only while they share a level
    model_s = sum(8 * per_run[tuple(p.split("/", 2))] for p in model)
    one_analysis = tree_s + model_s + preflight.ANALYSIS_ESTIMATE_S + 0.5
    assert len(settle._choose(rec, config, tmp_path, tmp_path / "results", 2, one_analysis)[0]) == 2
    rec["claims"]["calibration: model"]["first_alpha"] = 0.03
    assert settle.look_level(rec, rec["claims"]["calibration: model"], 2) != \
        settle.look_level(rec, rec["claims"]["calibration: tree"], 2)
    assert list(settle._choose(rec, config, tmp_path, tmp_path / "results", 2, one_analysis)[0]) == ["calibration: tree"]
    assert len(settle._choose(rec, config, tmp_path, tmp_path / "results", 2,
                              one_analysis + preflight.ANALYSIS_ESTIMATE_S)[0]) == 2


def executed_notebook(results: Path, name: str, seconds: float) -> None:
    """What papermill leaves in results/notebooks: the executed notebook with its kernel time."""
    (results / "notebooks").mkdir(parents=True, exist_ok=True)
    (results / "notebooks" / f"{name}.ipynb").write_text(json.dumps(
        {"cells": [], "metadata": {"papermill": {"duration": seconds}}, "nbformat": 4, "nbformat_minor": 5}))


def test_a_studys_analysis_costs_what_its_notebook_last_took_here(tmp_path):
    results = tmp_path / "results"
    assert analysis_seconds(results, "forest") == ANALYSIS_ESTIMATE_S  # never analysed here
    executed_notebook(results, "forest", 2.5)
    assert analysis_seconds(results, "forest") == 2.5 + NOTEBOOK_START_S
    (results / "notebooks" / "forest.ipynb").write_text("{not json")
    assert analysis_seconds(results, "forest") == ANALYSIS_ESTIMATE_S
    # the choice counts the measured analysis: 10 s of runs and the 7.5 s analysis fit in 20 s,
    # and do not when the notebook last took 60 s
    config = ci_forest()
    executed_notebook(results, "forest", 2.5)
    fits = settle._choose(record(False), config, tmp_path, results, 2, 20.0)[0]
    assert fits and "forest: touch" not in fits
    executed_notebook(results, "forest", 60.0)
    assert settle._choose(record(False), config, tmp_path, results, 2, 20.0)[0] == {}


def test_the_paper_keeps_back_the_analysis_only_of_the_studies_a_look_may_measure(tmp_path, monkeypatch):
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    verdicts = {"forest": ["reproduced", "same direction, size open"], "journal": ["equivalent", "contradicted"],
                "tmpfs": ["not tested", "too few runs"], "filecount": []}
    for name, words in verdicts.items():
        (tables / f"{name}-summary.json").write_text(json.dumps({"verdicts": [{"verdict": w} for w in words]}))
    monkeypatch.chdir(tmp_path)
    assert settle._open_studies(list(verdicts)) == ["forest", "tmpfs"]


def test_the_analysis_kept_back_runs_side_by_side_on_the_profiles_cores(tmp_path, monkeypatch):
    results = tmp_path / "results"
    executed_notebook(results, "forest", 10.0)
    executed_notebook(results, "tmpfs", 20.0)
    assert preflight.analysis_jobs() == min(2, os.cpu_count())  # profiles/default: cores 2
    monkeypatch.setattr(preflight, "analysis_jobs", lambda: 2)
    # two notebooks of 15 and 25 s (with papermill's start) on two cores: the longer one, then the paper
    assert preflight.tail_seconds(results, ["forest", "tmpfs"]) == PAPER_ESTIMATE_S + 25.0
    monkeypatch.setattr(preflight, "analysis_jobs", lambda: 1)
    assert preflight.tail_seconds(results, ["forest", "tmpfs"]) == PAPER_ESTIMATE_S + 40.0
    assert preflight.tail_seconds(results, []) == PAPER_ESTIMATE_S


def boatload(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(BOATLOAD).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run([BOATLOAD, *args], cwd=workdir, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    return out


@needs_root
def test_a_spent_budget_chooses_no_points_finishes_the_paper_and_a_second_run_does_nothing(workdir):
    config = ci_forest()
    config["studies"]["forest"]["methods"] = ["worker-1t", "python", "tar", "unzip"]
    # 3 seconds: the first rounds take longer, so no look's runs fit after them
    config.update(budget_minutes=0.05, settle={"looks": 2, "max_repetitions": 4})
    # Beside another test (tests/conftest.py's PAIRED_FILES): a run it disturbs is kept and marked, not
    # measured again (the more time spent, the surer the budget is spent).
    config["interference"] = dict(PAIRED_INTERFERENCE)
    (workdir / "config" / "budget.yaml").write_text(yaml.safe_dump(config))
    out = boatload(workdir, "reproduce", "--configfile", "config/budget.yaml")
    assert "time budget 0.05 min" in out.stderr
    runs = workdir / "data" / "runs" / hostname()
    raws = sorted(runs.glob("forest/*/*/rep*.json"))
    assert raws and all(p.name == "rep1.json" for p in raws), raws  # the first round only
    # and measured unshielded, so that the tests beside it were not stalled
    assert all(json.loads(p.read_text())["interference"]["shield"]["cgroup"] is None for p in raws)
    assert (workdir / "results" / "paper" / "paper.pdf").is_file()
    rec = settle_record.load(runs)
    assert rec["budget_spent"] and not rec["points"]
    summary = json.loads((workdir / "results" / "tables" / "forest-summary.json").read_text())
    # what the first rounds decided, said once they were analysed, as the summary has it
    tested = [v for v in summary["verdicts"] if v["verdict"] not in ("not exercised", "not applicable")]
    decided = sum(v["verdict"] in DECIDED for v in tested)
    assert f"the first rounds decided {decided} of {len(tested)} claims tested" in out.stderr
    if rec["claims"]:  # claims were open: the budget, not their decision, ended the looks
        assert rec["stopped"].startswith("the time budget (")
        # and no look was made, so the first rounds' analysis was not run again (26 s of a quick run's
        # notebooks and paper): the summary is the first rounds', without the looks' design
        assert "no look was made: the first rounds' analysis stands" in out.stderr
        assert "settle" not in summary
    assert all(v["verdict"] in ("too few runs", "not tested") or "settle" not in v for v in summary["verdicts"])
    mtimes = {p: p.stat().st_mtime_ns for p in raws}
    pdf = (workdir / "results" / "paper" / "paper.pdf").stat().st_mtime_ns
    boatload(workdir, "reproduce", "--configfile", "config/budget.yaml")
    assert sorted(runs.glob("forest/*/*/rep*.json")) == raws
    assert {p: p.stat().st_mtime_ns for p in raws} == mtimes
    assert (workdir / "results" / "paper" / "paper.pdf").stat().st_mtime_ns == pdf
