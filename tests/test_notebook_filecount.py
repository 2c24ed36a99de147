"""notebooks/filecount.ipynb runs under papermill on a fixture made through the
study's own rows() and SCHEMA (and on the real table when there is one), and
writes the figures, the tables and the summary the paper reads; the paper's
file-count section builds from them."""

from __future__ import annotations

import statistics
from functools import partial
from pathlib import Path

import polars as pl
import pytest

from boatload.publish import paper
from boatload.analysis.verdict import VERDICTS
import notebook_checks as nc
from notebook_checks import load_fixtures

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "filecount.ipynb"
STUDY = "filecount"
REAL = sorted((REPO / "data" / "runs").glob(f"*/{STUDY}.parquet"))
FIGURES = ("iops", "ratios")
WORKER = "boatload-worker"


FX = load_fixtures(STUDY)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return FX.run_notebook(tmp_path_factory.mktemp("filecount"), REPO, formats=FX.fixturelib.ALL_FORMATS)


@pytest.fixture(scope="module")
def skipped(tmp_path_factory):
    return FX.run_notebook(tmp_path_factory.mktemp("filecount-skipped"), REPO, variant="skipped")


@pytest.fixture(scope="module")
def one_rep(tmp_path_factory):
    return FX.run_notebook(tmp_path_factory.mktemp("filecount-one-rep"), REPO, variant="one-rep")


@pytest.fixture(scope="module")
def fixture_runs(run):
    return pl.read_parquet(run[STUDY])


def measured(runs: pl.DataFrame) -> pl.DataFrame:
    return runs.filter((pl.col("status") == "ok") & pl.col("iops").is_not_null())


def expected_points(runs: pl.DataFrame) -> dict:
    """(target, mode, tool, k) -> IOPS of the point and its ratio to k = 1,
    computed here independently of the notebook: the IOPS is the median over the
    measured runs, or for a point run once, the mean of its intervals after the
    first; the ratio is the Hodges-Lehmann ratio of the two points' runs (never
    of the intervals within a run)."""
    med = measured(runs).group_by("target", "mode", "tool", "files").agg(
        pl.col("iops").median().alias("median"), pl.col("iops"), pl.len().alias("n"), pl.col("interval_iops").first())
    by, run_iops = {}, {}
    for r in med.iter_rows(named=True):
        key = (r["target"], r["mode"], r["tool"], r["files"])
        after_first = (r["interval_iops"] or [])[1:]
        one_run = r["n"] == 1 and len(after_first) >= 2
        by[key] = sum(after_first) / len(after_first) if one_run else r["median"]
        run_iops[key] = r["iops"]
    return {k: {"iops": v, "ratio": nc.hl_ratio(run_iops[k], run_iops[(*k[:3], 1)])} for k, v in by.items()}


def published() -> dict:
    ref = pl.read_csv(REPO / "data" / "reference" / f"{STUDY}.csv", schema_overrides={"interval": pl.String})
    return {r["files"]: r["iops"] for r in ref.filter(pl.col("interval") == "avg_2-10").iter_rows(named=True)}


figure_rows = partial(nc.figure_rows, study=STUDY)


summary_of = partial(nc.summary_of, study=STUDY)


check_figure_files = partial(nc.check_figure_files, names=FIGURES, study=STUDY)


def check_measured_points(results: Path, runs: pl.DataFrame) -> None:
    """One measured point per (target, mode, tool, k) in the IOPS figure and per
    k > 1 in the ratio figure, at the medians of the measured runs."""
    want = expected_points(runs)
    for name, value, low, high, keep in (
        ("iops", "iops", "ci_low", "ci_high", lambda k: True),
        ("ratios", "ratio", "ratio_low", "ratio_high", lambda k: k[3] > 1),
    ):
        got = {}
        for r in figure_rows(results, name):
            if r["source"] != "measured":
                continue
            key = (r["target"], r["mode"], r["tool"], r["files"])
            assert key not in got, f"{name}: two measured points for {key}"
            got[key] = r
        assert set(got) == {k for k in want if keep(k)}, name
        for key, r in got.items():
            assert r[value] == pytest.approx(want[key][value], rel=1e-9), (name, key)
            if r[low] is not None or name == "iops":  # a ratio of single runs has no interval
                assert r[low] <= r[value] <= r[high], (name, key)


def check_published_points(results: Path) -> None:
    pub = published()
    iops = [r for r in figure_rows(results, "iops") if r["source"] == "published"]
    assert sorted(r["files"] for r in iops) == [1, 2]
    for r in iops:
        # vdbench's avg_2-10, the mean of seconds 2-10 (published to two decimals)
        assert r["iops"] == pytest.approx(pub[r["files"]], rel=1e-5)
        assert r["ci_low"] <= r["iops"] <= r["ci_high"]
    ratios = [r for r in figure_rows(results, "ratios") if r["source"] == "published"]
    assert [r["files"] for r in ratios] == [2]
    assert ratios[0]["ratio"] == pytest.approx(pub[2] / pub[1], rel=1e-5)
    assert ratios[0]["ratio_low"] <= ratios[0]["ratio"] <= ratios[0]["ratio_high"]


# --- the fixture -------------------------------------------------------------


def test_fixture_comes_from_the_study(fixture_runs):
    from boatload.studies import study

    SCHEMA = study("filecount").table_schema

    assert dict(fixture_runs.schema) == SCHEMA
    assert set(fixture_runs["status"]) == {"ok", "skipped", "error"}


def test_figure_files(run):
    check_figure_files(run["results"])


def test_figure_points(run, fixture_runs):
    check_measured_points(run["results"], fixture_runs)
    rows = {(r["target"], r["mode"], r["tool"], r["files"]): r for r in figure_rows(run["results"], "iops")
            if r["source"] == "measured"}
    for key, medians in FX.IOPS.items():
        for k, median in zip(FX.FILES, medians):
            if (*key, k, 2) == FX.FAILED:
                continue  # two runs left: the median is their mean
            assert rows[(*key, k)]["iops"] == pytest.approx(median), (key, k)
    assert not any(k[0] == "tmpfs" and k[1] == "direct" for k in rows)  # skipped, never plotted
    assert rows[("xfs", "direct", "fio", 3)]["reps"] == FX.REPS - 1


def test_published_points(run):
    check_published_points(run["results"])


def test_table(run, fixture_runs):
    table = pl.read_csv(run["results"] / "tables" / f"{STUDY}.csv")
    assert table.columns[:17] == [
        "target", "filesystem", "mode", "tool", "tool_label", "files", "reps", "sample_kind", "n_samples",
        "iops", "ci_low", "ci_high", "ci_coverage", "cv", "ratio", "ratio_low", "ratio_high",
    ]
    # three runs per point (one where a run failed): sampled by runs, not intervals
    assert set(table["sample_kind"]) == {"runs"} and (table["n_samples"] == table["reps"]).all()
    want = expected_points(fixture_runs)
    assert table.height == len(want)
    for r in table.iter_rows(named=True):
        key = (r["target"], r["mode"], r["tool"], r["files"])
        assert r["iops"] == pytest.approx(want[key]["iops"])
        assert r["ratio"] == pytest.approx(want[key]["ratio"])
        assert r["ci_low"] <= r["iops"] <= r["ci_high"]
        if r["files"] == 1:
            assert r["ratio"] == r["ratio_low"] == r["ratio_high"] == 1.0
    assert set(table["threads"]) == {FX.THREADS} and set(table["xfer"]) == {FX.XFER}


def paired_jobs(runs: pl.DataFrame) -> dict:
    """(target, mode, k) -> [(worker IOPS / fio IOPS, first tool, worker CPU/I/O, fio CPU/I/O)],
    one entry per job in which both tools measured."""
    m = measured(runs)
    job = ["target", "mode", "files", "rep"]
    both = m.filter(pl.col("tool") == WORKER).join(m.filter(pl.col("tool") == "fio"), on=job, suffix="_fio")
    out: dict = {}
    for r in both.iter_rows(named=True):
        out.setdefault((r["target"], r["mode"], r["files"]), []).append(
            (r["iops"] / r["iops_fio"], r["first_tool"], r["cpu_us_per_op"], r["cpu_us_per_op_fio"]))
    return out


def test_peers_table_pairs_rows_of_the_same_job(run, fixture_runs):
    peers = pl.read_csv(run["results"] / "tables" / f"{STUDY}-peers.csv")
    pairs = pl.read_csv(run["results"] / "tables" / f"{STUDY}-pairs.csv")
    want = paired_jobs(fixture_runs)
    assert {(r["target"], r["mode"], r["files"]) for r in peers.iter_rows(named=True)} == set(want)
    assert pairs.height == sum(len(v) for v in want.values())
    for r in peers.iter_rows(named=True):
        jobs = want[(r["target"], r["mode"], r["files"])]
        assert r["pairs"] == len(jobs)
        assert r["worker_over_fio"] == pytest.approx(statistics.median(j[0] for j in jobs))
        assert r["worker_first"] == sum(j[1] == WORKER for j in jobs)
        assert r["worker_cpu_us_per_op"] == pytest.approx(statistics.median(j[2] for j in jobs))
        assert r["fio_cpu_us_per_op"] == pytest.approx(statistics.median(j[3] for j in jobs))
        assert r["low"] <= r["worker_over_fio"] <= r["high"]
    # the failed fio run (xfs, k = 3, O_DIRECT, rep 2) leaves its job's worker run unpaired
    assert peers.filter((pl.col("target") == "xfs") & (pl.col("mode") == "direct") & (pl.col("files") == 3))["pairs"].to_list() == [FX.REPS - 1]
    # each pair: one tool first, the other second, as the job recorded it
    for r in pairs.iter_rows(named=True):
        assert {r["worker_position"], r["fio_position"]} == {1, 2}
        assert (r["worker_position"] == 1) == (r["first_tool"] == WORKER)
    s = summary_of(run["results"])
    assert s["peers"]["all"]["points"] == peers.height
    assert s["peers"]["all"]["min"] == pytest.approx(peers["worker_over_fio"].min())
    assert s["peers"]["jobs"]["points"] == pairs.height
    assert sum(s["peers"]["by_first"][t]["points"] for t in ("worker", "fio")) == pairs.height
    cpu = {(c["target"], c["mode"]): c for c in s["peers"]["cpu"]}
    assert cpu[("ext4", "buffered")]["fio_cpu_over_worker"] == pytest.approx(
        FX.CPU_US_PER_OP["fio"] / FX.CPU_US_PER_OP[WORKER])


def test_summary(run):
    s = summary_of(run["results"])
    assert s["study"] == STUDY and s["n_resamples"] >= 10_000 and s["level"] == 0.95
    pub = published()
    by = {(v["target"], v["mode"]): v for v in s["verdicts"]}
    assert len(by) == len(s["verdicts"]) == len(FX.EXPECTED)
    for key, verdict in FX.EXPECTED.items():
        v = by[key]
        assert v["verdict"] == verdict, (key, v)
        assert v["claim"].startswith("IOPS nearly double going from one file to two")
        assert v["original_ratio"] == pytest.approx(pub[2] / pub[1], rel=1e-5)
        assert {"claim", "original_ratio", "ours", "ours_low", "ours_high", "verdict", "direction", "size",
                "runs_to_settle"} <= set(v)
        assert v["runs_per_side"] in (None, [FX.REPS, FX.REPS])
        if verdict in ("not tested", "not applicable"):
            assert v["ours"] is None
            continue
        medians = FX.IOPS[(*key, WORKER)]
        assert v["ours"] == pytest.approx(medians[1] / medians[0])
        assert v["ours_low"] <= v["ours"] <= v["ours_high"]
        assert v["share_of_original_gain"] == pytest.approx((v["ours"] - 1) / (v["original_ratio"] - 1))
        assert v["fio_ratio"] == pytest.approx(FX.IOPS[(*key, "fio")][1] / FX.IOPS[(*key, "fio")][0])
    setup = s["setup"]
    assert setup["threads"] == FX.THREADS and setup["xfer"] == FX.XFER and setup["read_pct"] == FX.READ_PCT
    assert setup["file_size_mb"] == FX.FILE_SIZE_MB and setup["files"] == FX.FILES
    assert setup["modes"] == ["buffered", "direct"] and setup["tools"] == ["worker", "fio"]
    assert setup["seconds"] == pytest.approx(FX.DURATION_S, abs=0.02)
    # skipped and failed runs listed with their reasons
    nm = s["not_measured"]
    assert s["counts"]["runs_not_measured"] == len(nm) == 2 * len(FX.FILES) * FX.REPS + 1
    assert all(r["reason"] for r in nm)
    assert any(r["status"] == "error" and r["reason"] == FX.FAIL_REASON for r in nm)
    assert s["original"]["iops_1"] == pytest.approx(pub[1], rel=1e-5)
    assert s["original"]["ratio_2_over_1"] == pytest.approx(pub[2] / pub[1], rel=1e-5)


def test_paper_section(run, tmp_path):
    pdf = paper.build_paper(REPO, tmp_path / "paper.pdf", run["results"])
    text = pdf_text(pdf)
    s = summary_of(run["results"])
    assert "File count: more files, more IOPS?" in text
    for v in s["verdicts"]:
        assert v["claim"] in text
    assert "You can see that we double IOPS" in text
    assert "5,410" in text and "10,100" in text  # the original's means, three figures
    assert f"Over the {s['peers']['all']['points']} points measured by both tools" in text
    flat = " ".join(text.split())
    # the measured cause beside the ratio: each tool's CPU per I/O, and the order
    assert "Each tool's CPU time per I/O" in flat and "ext4 buffered 1.60 µs for the worker and 1.90 µs for fio" in flat
    assert "With the worker first the median ratio was" in flat


# --- every run skipped (no root) ------------------------------------------------


def test_all_skipped(skipped):
    results = skipped["results"]
    for name in ("", "-peers"):
        table = (results / "tables" / f"{STUDY}{name}.csv").read_text().splitlines()
        assert table[0].startswith("target,filesystem,") and len(table) == 1
    s = summary_of(results)
    assert s["counts"]["points_measured"] == 0 and s["counts"]["runs_not_measured"] == s["counts"]["runs"]
    assert {v["verdict"] for v in s["verdicts"]} == {"not tested"}
    check_figure_files(results, formats=("svg",))
    for name in FIGURES:
        rows = figure_rows(results, name)
        assert rows and {r["source"] for r in rows} == {"published"}
    check_published_points(results)

    pdf = paper.build_paper(REPO, results / "paper.pdf", results)
    text = pdf_text(pdf)
    assert "No run produced a measurement" in text and "not tested" in text


# --- the real table --------------------------------------------------------------


@pytest.mark.skipif(not REAL, reason="no data/runs/<host>/filecount.parquet")
@pytest.mark.parametrize("data", REAL, ids=lambda p: p.parent.name)
def test_real_data(data, tmp_path):
    out = FX.run_notebook(tmp_path, REPO, data=data)
    results = out["results"]
    runs = pl.read_parquet(data)
    check_figure_files(results, formats=("svg",))
    check_measured_points(results, runs)
    check_published_points(results)
    s = summary_of(results)
    assert len(s["verdicts"]) == max(1, runs.select("target", "mode").unique().height)
    for v in s["verdicts"]:
        assert v["verdict"] in VERDICTS
        if v["ours_low"] is not None:
            assert v["ours_low"] <= v["ours"] <= v["ours_high"]
        else:  # no interval at the level: no verdict either
            assert v["verdict"] in ("too few runs", "not tested", "not applicable")
    assert (results / "tables" / f"{STUDY}-peers.csv").is_file()


# --- the committed notebook --------------------------------------------------------


def test_committed_notebook_is_clean():
    src = nc.clean_notebook_parameters(NOTEBOOK)
    assert "n_resamples = 10_000" in src


pdf_text = partial(nc.pdf_text, plain_quotes=True)


def test_one_repetition_is_sampled_by_intervals(one_rep):
    """One run per point: the worker's points are the mean of their
    per-interval IOPS after the first, with an interval of real width (how
    steady the run was); but a ratio and its verdict rest on runs, not on the
    intervals within one run, so every measured claim is "too few runs"."""
    runs = pl.read_parquet(one_rep[STUDY])
    table = pl.read_csv(one_rep["results"] / "tables" / f"{STUDY}.csv")
    worker = table.filter(pl.col("tool") == WORKER)
    assert worker.height > 0 and set(worker["sample_kind"]) == {"intervals"}
    assert set(table.filter(pl.col("tool") != WORKER)["sample_kind"]) == {"runs"}
    for r in worker.iter_rows(named=True):
        [run_row] = measured(runs).filter(
            (pl.col("target") == r["target"]) & (pl.col("mode") == r["mode"]) & (pl.col("tool") == WORKER)
            & (pl.col("files") == r["files"])
        ).iter_rows(named=True)
        after_first = run_row["interval_iops"][1:]
        assert r["n_samples"] == len(after_first) == 5
        assert r["iops"] == pytest.approx(sum(after_first) / len(after_first), rel=1e-9)
        assert r["ci_low"] < r["iops"] < r["ci_high"]
        if r["files"] > 1:
            assert r["ratio_low"] is None and r["ratio_high"] is None
    s = summary_of(one_rep["results"])
    got = {(v["target"], v["mode"]): v["verdict"] for v in s["verdicts"]}
    assert got == {k: v if v in ("not tested", "not applicable") else "too few runs" for k, v in FX.EXPECTED.items()}
    for v in s["verdicts"]:
        if v["verdict"] == "too few runs":
            assert v["runs_per_side"] == [1, 1] and v["ours_low"] is None and v["runs_to_settle"] >= 4
    # worker against fio: whole runs on both sides (fio has no intervals), no interval of the ratio
    peers = pl.read_csv(one_rep["results"] / "tables" / f"{STUDY}-peers.csv")
    run_iops = {(r["target"], r["mode"], r["tool"], r["files"]): r["iops"] for r in measured(runs).iter_rows(named=True)}
    assert peers.height == 4 * 5
    for r in peers.iter_rows(named=True):
        key = (r["target"], r["mode"], r["files"])
        assert r["worker_over_fio"] == pytest.approx(run_iops[(*key[:2], WORKER, key[2])] / run_iops[(*key[:2], "fio", key[2])])
        assert r["low"] is None and r["high"] is None and r["pairs"] == 1
    # run once, half the points ran fio first (k + rep odd)
    assert peers["worker_first"].sum() == peers.height // 2


def test_paper_section_one_repetition(one_rep, tmp_path):
    text = " ".join(pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", one_rep["results"])).split())
    s = summary_of(one_rep["results"])
    assert s["counts"]["points_by_intervals"] == 20 and s["counts"]["intervals_min"] == 5  # 5 worker series x 4 k
    assert "by the IOPS of each 0.5 s interval of the run after the first" in text
    assert "(20 points)" in text
    assert "too few runs" in {v["verdict"] for v in s["verdicts"]} and "too few runs" in text
