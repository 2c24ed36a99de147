"""`boatload compare` on result sets made in the test: the filecount and
journal fixtures' raw runs (tests/fixtures), tidied as the pipeline does,
with B's rates or records changed where a test needs it."""

from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from boatload.workflow import cli
from boatload.analysis.compare import FASTER, INCONCLUSIVE, SAME, SLOWER, Settings, judge, point_columns, t_quantile
from boatload.analysis.compare_report import build, settings_from, terminal
from boatload.analysis.compare_sets import SetError, open_set
from boatload.studies import registry
from boatload.analysis.tidy import tidy

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
import make_filecount  # noqa: E402
import make_journal  # noqa: E402

PROVENANCE = {"kind": "loop", "fs": "ext4", "kernel_fs": "ext4", "size_mb": 256,
              "mkfs_command": ["/usr/sbin/mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0", "/dev/loop3"],
              "mkfs_version": "mke2fs 1.47.0 (5-Feb-2023)", "mount_options": ["rw", "relatime"]}


def write_set(runs_dir: Path, docs: list[dict], scale: dict[str, float] | None = None) -> Path:
    """Raw runs under runs_dir/<study>/<target>/<point>/rep<N>.json and the
    tidy tables beside them; `scale`: target -> factor on its rates."""
    by_study: dict[str, list[Path]] = {}
    for doc in docs:
        doc = copy.deepcopy(doc)
        doc.setdefault("target_provenance", dict(PROVENANCE))
        job = doc["job"]
        path = runs_dir / doc["study"] / job["target"]["name"] / job["point"] / f"rep{job['rep']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc))
        by_study.setdefault(doc["study"], []).append(path)
    for study, raw in by_study.items():
        frame = tidy(study, raw, runs_dir / f"{study}.parquet")
        if scale:
            rate = registry()[study].original.rate[0]
            factor = pl.col("target").replace_strict(scale, default=1.0, return_dtype=pl.Float64)
            frame.with_columns(pl.col(rate) * factor).write_parquet(runs_dir / f"{study}.parquet")
    return runs_dir


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return make_filecount.documents() + make_journal.docs()


def compare(tmp_path: Path, a_docs, b_docs, scale=None, s: Settings = Settings()) -> dict:
    a = write_set(tmp_path / "a", a_docs)
    b = write_set(tmp_path / "b", b_docs, scale)
    return build(open_set(str(a)), open_set(str(b), arg="B"), s)


def test_t_quantile_matches_the_tables():
    # Student's t, two-sided 95 % and 90 % (any statistics table)
    for dof, q95, q90 in ((1, 12.706, 6.314), (2, 4.303, 2.920), (3, 3.182, 2.353), (10, 2.228, 1.812),
                          (30, 2.042, 1.697)):
        assert t_quantile(0.95, dof) == pytest.approx(q95, abs=1e-3)
        assert t_quantile(0.90, dof) == pytest.approx(q90, abs=1e-3)


def test_judge_reads_the_interval_against_the_margin():
    rng = np.random.default_rng(3)
    a = 1000 * rng.lognormal(0, 0.02, 8)
    s = Settings(margin=1.05)
    assert judge(a, a * 0.5, s)["verdict"] == SLOWER
    assert judge(a, a * 2.0, s)["verdict"] == FASTER
    same = judge(a, 1000 * rng.lognormal(0, 0.02, 8), s)
    assert same["verdict"] == SAME and 1 / 1.05 <= same["tost_low"] <= same["tost_high"] <= 1.05
    # beyond 1 but not beyond the margin, spread too wide for "same": inconclusive, with runs to settle
    wide = judge(a * rng.lognormal(0, 0.3, 8), a * 1.02 * rng.lognormal(0, 0.3, 8), s)
    assert wide["verdict"] == INCONCLUSIVE and wide["runs_to_settle"] > 8
    # 2 runs a side: no interval at 95 % or 90 %, so never a verdict, and at least 4 a side to settle
    few = judge(a[:2], a[:2] * 0.5, s)
    assert few["verdict"] == INCONCLUSIVE and few["low"] is None and few["runs_to_settle"] >= 4
    assert "too few runs" in few["why"]


def test_a_run_compared_with_itself_is_never_faster_or_slower(tmp_path, docs):
    doc = compare(tmp_path, docs, docs)
    assert doc["points"] and not doc["only_a"] and not doc["only_b"]
    verdicts = {p["verdict"] for p in doc["points"]}
    assert verdicts <= {SAME, INCONCLUSIVE}, verdicts
    assert SAME in verdicts  # the fixture's tight points are shown the same, not only left undecided
    assert all(p["ratio"] == pytest.approx(1.0) for p in doc["points"])
    assert doc["provenance"]["differs"] == [] and doc["threats"] == []
    for st in doc["studies"].values():
        assert st["mean"]["ratio"] == pytest.approx(1.0) and st["mean"]["verdict"] != SLOWER
    # every point that measured in the fixture is one point here: no point split by a column that is not its own
    table = make_filecount.table()
    ok = table.filter((pl.col("status") == "ok") & (pl.col("iops") > 0))
    assert sum(p["study"] == "filecount" for p in doc["points"]) == ok.select(
        point_columns(registry()["filecount"], table)).unique().height


def test_a_slower_target_comes_out_slower_and_the_others_do_not(tmp_path, docs):
    doc = compare(tmp_path, docs, docs, scale={"xfs": 0.5, "xfs-raid-log-internal": 0.5})
    changed = [p for p in doc["points"] if p["target"] in ("xfs", "xfs-raid-log-internal")]
    assert changed and all(p["verdict"] == SLOWER and p["low"] <= 0.5 <= p["high"] for p in changed)
    assert all(p["verdict"] in (SAME, INCONCLUSIVE) for p in doc["points"] if p not in changed)
    # worst first: every slower point ahead of every other
    order = [p["verdict"] for p in doc["points"]]
    assert order[: len(changed)] == [SLOWER] * len(changed)
    text = terminal(doc)
    assert text.splitlines()[text.splitlines().index(next(line for line in text.splitlines()
                                                             if line.startswith("verdict"))) + 1].startswith("slower")


def test_points_in_one_set_only_are_listed(tmp_path, docs):
    b_docs = [d for d in docs if d["job"]["target"]["name"] != "tmpfs"]
    doc = compare(tmp_path, docs, b_docs)
    assert doc["only_a"] and all(p["target"] == "tmpfs" for p in doc["only_a"]) and not doc["only_b"]
    assert not any(p["target"] == "tmpfs" for p in doc["points"])
    assert "only in A" in terminal(doc)


def test_the_provenance_diff_names_a_changed_kernel_and_mkfs_option(tmp_path, docs):
    b_docs = copy.deepcopy(docs)
    for d in b_docs:
        d["machine"]["kernel"] = "6.99.0-test"
        if d["job"]["target"]["name"] == "ext4":
            d["target_provenance"] = {**PROVENANCE, "mkfs_command": [*PROVENANCE["mkfs_command"][:-1], "-O",
                                                                     "^has_journal", "/dev/loop7"]}
    doc = compare(tmp_path, docs, b_docs)
    differs = {(d["section"], d["key"]): d for d in doc["provenance"]["differs"]}
    kernel = differs[("machine", "kernel")]
    assert kernel["b"] == "6.99.0-test" and kernel["a"] != kernel["b"] and not kernel["threat"]
    mkfs = differs[("target ext4", "mkfs")]
    assert "^has_journal" in mkfs["b"] and "^has_journal" not in mkfs["a"] and not mkfs["threat"]
    # the loop device's node is no option: the other targets' mkfs is the same
    assert ("target xfs", "mkfs") not in differs
    assert ("machine", "cpu_model") in {(d["section"], d["key"]) for d in doc["provenance"]["same"]}
    assert doc["threats"] == []
    assert "machine: kernel" in terminal(doc)


def test_a_change_of_method_is_flagged_as_a_threat(tmp_path, docs):
    b_docs = copy.deepcopy(docs)
    for d in b_docs:
        d["worker"]["sha256"] = "0" * 64
        if d["study"] == "filecount":
            d["job"]["duration_s"] = 9.0
    doc = compare(tmp_path, docs, b_docs)
    threats = {(d["section"], d["key"]) for d in doc["threats"]}
    assert ("worker", "sha256") in threats and ("study filecount", "duration_s") in threats
    assert "THREAT worker: sha256" in terminal(doc)


def _cli(tmp_path, a, b, *extra) -> int:
    return cli.main(["compare", str(a), str(b), "--out", str(tmp_path / "out"), *extra])


def test_fail_on_slower_gates_on_a_slower_point(tmp_path, docs, capsys):
    a = write_set(tmp_path / "a", docs)
    slower = write_set(tmp_path / "slower", docs, {"xfs": 0.5})
    faster = write_set(tmp_path / "faster", docs, {"xfs": 2.0})
    assert _cli(tmp_path, a, slower, "--fail-on", "slower") == 1
    assert "points slower (--fail-on slower)" in capsys.readouterr().err
    assert _cli(tmp_path, a, slower) == 0  # without the gate: a report, not a failure
    assert _cli(tmp_path, a, faster, "--fail-on", "slower") == 0
    assert _cli(tmp_path, a, a, "--fail-on", "slower") == 0
    written = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert written["counts"][SLOWER] == 0 and written["margin"] == 1.05
    page = (tmp_path / "out" / "compare.html").read_text()
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") \
        .replace('xmlns:xlink="http://www.w3.org/1999/xlink"', "")


def test_a_host_of_the_runs_root_and_a_results_directory_name_a_set(tmp_path, docs):
    root = tmp_path / "checkout"
    write_set(root / "data" / "runs" / "node1", docs)
    results = root / "results"
    results.mkdir()
    (results / "provenance.json").write_text(json.dumps({"host": "node1"}))
    by_host = open_set("node1", root / "data" / "runs")
    by_results = open_set(str(results))
    assert by_host.runs_dir == by_results.runs_dir.resolve() or by_host.runs_dir.resolve() == by_results.runs_dir
    assert set(by_host.tables) == {"filecount", "journal"} and len(by_results.docs) == len(docs)


def test_bad_input_is_one_line_naming_the_argument(tmp_path, docs, capsys):
    a = write_set(tmp_path / "a", docs)
    assert _cli(tmp_path, a, tmp_path / "nowhere") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("boatload compare: B: ") and "\n" not in err
    assert _cli(tmp_path, a, a, "--margin", "0.9") == 2
    assert "boatload compare: --margin: must be above 1" in capsys.readouterr().err
    assert _cli(tmp_path, a, a, "--level", "1.5") == 2
    assert "boatload compare: --level: " in capsys.readouterr().err
    with pytest.raises(SetError, match="^A: "):
        open_set(str(tmp_path / "empty"))
    assert not (tmp_path / "out" / "compare.json").exists()  # nothing written before the inputs are checked


def test_the_margin_comes_from_the_config_and_its_schema(tmp_path):
    assert settings_from(None, None, None).margin == 1.05
    config = tmp_path / "c.yaml"
    text = (Path(__file__).resolve().parents[1] / "config" / "ci.yaml").read_text()
    config.write_text(text + "\ncompare: {margin: 1.2}\n")
    assert settings_from(None, None, config).margin == 1.2
    assert settings_from(1.1, 0.9, config) == Settings(1.1, 0.9)


def test_the_method_states_the_chance_of_a_false_slower(tmp_path, docs):
    doc = compare(tmp_path, docs, docs)
    n = doc["points_with_interval"]
    assert doc["chance_slower_at_most"] == pytest.approx(0.025 * n)
    assert f"of these {n} points" in doc["method"] and "Student t interval over points" in doc["method"]
    assert math.isclose(doc["tost_level"], 0.9)


def test_the_fleet_compares_each_host_with_the_first_by_the_same_code(tmp_path, docs):
    from boatload.publish.fleet import measured_against_first

    root = tmp_path / "runs"
    write_set(root / "node1", docs)
    write_set(root / "node2", docs, {"xfs": 0.5})
    got = measured_against_first(["node1", "node2", "node3"], root)
    assert got["node3"] is None  # no tables: nothing to compare
    direct = build(open_set("node1", root), open_set("node2", root), Settings())
    assert got["node2"]["counts"] == direct["counts"] and got["node2"]["counts"][SLOWER] > 0
    assert {p["target"] for p in got["node2"]["slower"]} == {"xfs"}


def test_bench_verdicts_compares_the_rates_by_the_same_code(tmp_path, docs, capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import verdicts as bv

    for side, scale in (("a", None), ("b", {"xfs": 0.5})):
        write_set(tmp_path / side / "data" / "runs" / f"host-{side}", docs, scale)
        results = tmp_path / side / "results"
        (results / "tables").mkdir(parents=True)
        (results / "provenance.json").write_text(json.dumps({"host": f"host-{side}"}))
        (results / "tables" / "filecount-summary.json").write_text(
            json.dumps({"verdicts": [{"claim": "k files", "verdict": "reproduced", "ours": 1.0}]}))
    assert bv.main([str(tmp_path / "a" / "results"), str(tmp_path / "b" / "results"), "--rates"]) == 0
    out = capsys.readouterr().out
    assert "1 of 1 claims agree" in out
    slower = [line for line in out.splitlines() if line.startswith("slower ")]
    assert slower and all(" xfs: " in line for line in slower)
