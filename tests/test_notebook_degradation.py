"""notebooks/degradation.ipynb runs under papermill on a fixture made through
the study's own rows() and SCHEMA (and on the real table when there is one),
and writes the figures, the table and the summary the paper reads; the
paper's degradation section builds from them."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import polars as pl
import pytest

from boatload.publish import paper
from boatload.analysis.intervals import paired_ratio_interval
from boatload.analysis.verdict import VERDICTS
import notebook_checks as nc
from notebook_checks import load_fixtures

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "degradation.ipynb"
STUDY = "degradation"
REAL = sorted((REPO / "data" / "runs").glob(f"*/{STUDY}.parquet"))
FIGURES = ("throughput", "ratios")


FX = load_fixtures(STUDY)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return FX.run_notebook(tmp_path_factory.mktemp("degradation"), REPO, formats=FX.fixturelib.ALL_FORMATS)


@pytest.fixture(scope="module")
def skipped(tmp_path_factory):
    return FX.run_notebook(tmp_path_factory.mktemp("degradation-skipped"), REPO, variant="skipped")


@pytest.fixture(scope="module")
def fixture_runs(run):
    return pl.read_parquet(run[STUDY])


def measured(runs: pl.DataFrame) -> pl.DataFrame:
    return runs.filter((pl.col("status") == "ok") & pl.col("mb_per_s").is_not_null())


def expected_points(runs: pl.DataFrame) -> dict:
    """(target, op, stage) -> median MB/s over the measured runs, and the
    ratio of medians to stage 0, computed here independently of the notebook."""
    med = measured(runs).group_by("target", "op", "stage").agg(pl.col("mb_per_s").median())
    by = {(r["target"], r["op"], r["stage"]): r["mb_per_s"] for r in med.iter_rows(named=True)}
    return {k: {"mb_per_s": v, "ratio": v / by[(k[0], k[1], 0)]} for k, v in by.items()}


def published_points() -> dict:
    ref = pl.read_csv(REPO / "data" / "reference" / f"{STUDY}.csv")
    med = ref.group_by("extra_files", "op").agg(pl.col("mb_per_s").median())
    return {(r["op"], r["extra_files"]): r["mb_per_s"] for r in med.iter_rows(named=True)}


def published_ratio(op: str, extra_files: int) -> float:
    """The original's Hodges-Lehmann ratio of a stage's five runs over the empty file system's."""
    ref = pl.read_csv(REPO / "data" / "reference" / f"{STUDY}.csv").filter(pl.col("op") == op)
    runs = {e: g["mb_per_s"].to_list() for (e,), g in ref.group_by("extra_files")}
    return nc.hl_ratio(runs[extra_files], runs[0])


figure_rows = partial(nc.figure_rows, study=STUDY)


summary_of = partial(nc.summary_of, study=STUDY)


check_figure_files = partial(nc.check_figure_files, names=FIGURES, study=STUDY)


def check_measured_points(results: Path, runs: pl.DataFrame) -> None:
    """One measured point per (target, op, stage) in the throughput figure and
    per stage > 0 in the ratio figure, at the medians of the measured runs."""
    want = expected_points(runs)
    for name, stages, value in (("throughput", {0, 1, 2}, "mb_per_s"), ("ratios", {1, 2}, "ratio")):
        got = {}
        for r in figure_rows(results, name):
            if r["source"] != "measured":
                continue
            key = (r["target"], r["op"], r["stage"])
            assert key not in got, f"{name}: two measured points for {key}"
            got[key] = r
        assert set(got) == {k for k in want if k[2] in stages}, name
        for key, r in got.items():
            assert r[value] == pytest.approx(want[key][value], rel=1e-9), (name, key)
            low, high = ("ci_low", "ci_high") if value == "mb_per_s" else ("ratio_low", "ratio_high")
            if r[low] is not None or name == "throughput":  # a ratio of too few repetitions has no interval
                assert r[low] <= r[value] <= r[high], (name, key)


def check_published_points(results: Path) -> None:
    pub = published_points()
    extras = sorted({e for _, e in pub})
    for name, stages in (("throughput", {0, 1, 2}), ("ratios", {1, 2})):
        rows = [r for r in figure_rows(results, name) if r["source"] == "published"]
        assert {(r["op"], r["stage"]) for r in rows} == {(op, s) for op in ("write_odirect", "read") for s in stages}
        for r in rows:
            assert r["extra_files"] == extras[r["stage"]]
            assert r["mb_per_s"] == pytest.approx(pub[(r["op"], r["extra_files"])])
            assert r["ratio"] == pytest.approx(published_ratio(r["op"], r["extra_files"]))
            assert r["ci_low"] <= r["mb_per_s"] <= r["ci_high"]


# --- the fixture -------------------------------------------------------------


def test_fixture_comes_from_the_study(fixture_runs):
    from boatload.studies import study

    SCHEMA = study("degradation").table_schema

    assert dict(fixture_runs.schema) == SCHEMA
    assert set(fixture_runs["status"]) == {"ok", "error"}


def test_figure_files(run):
    check_figure_files(run["results"])


def test_figure_points(run, fixture_runs):
    check_measured_points(run["results"], fixture_runs)
    # the fixture's chosen medians, exactly (the failed job's far-off runs left out)
    rows = {(r["target"], r["op"], r["stage"]): r for r in figure_rows(run["results"], "throughput")
            if r["source"] == "measured"}
    for target, ops in FX.RATES.items():
        for op, medians in ops.items():
            for stage, median in enumerate(medians):
                assert rows[(target, op, stage)]["mb_per_s"] == pytest.approx(median), (target, op, stage)
    assert rows[("xfs", "read", 0)]["runs"] == (FX.REPS - 1) * FX.RUNS  # all repetitions but the failed one
    assert rows[("ext4", "read", 0)]["runs"] == FX.REPS * FX.RUNS


def test_published_points(run):
    check_published_points(run["results"])


def test_table(run, fixture_runs):
    table = pl.read_csv(run["results"] / "tables" / f"{STUDY}.csv")
    assert table.columns == [
        "target", "filesystem", "op", "op_label", "stage", "extra_files", "files_on_disk", "reps", "runs",
        "mb_per_s", "ci_low", "ci_high", "ci_coverage", "cv", "ratio", "ratio_low", "ratio_high",
        "memory_limit_mb", "file_bytes", "block", "loop_direct_io",
    ]
    want = expected_points(fixture_runs)
    assert table.height == len(want)
    for r in table.iter_rows(named=True):
        assert r["mb_per_s"] == pytest.approx(want[(r["target"], r["op"], r["stage"])]["mb_per_s"])
        assert r["ci_low"] <= r["mb_per_s"] <= r["ci_high"]
        assert r["extra_files"] == r["stage"] * FX.N
        if r["stage"] == 0:
            assert r["ratio"] == r["ratio_low"] == r["ratio_high"] == 1.0
    assert set(table.filter(pl.col("op") == "write_odirect")["block"]) == {FX.BLOCK}
    assert set(table.filter(pl.col("op") == "read")["block"]) == {512}


def rep_medians(target: str, op: str, stage: int) -> tuple[list[float], list[float]]:
    """Each repetition's median rate at `stage` and on the empty file system, of the
    repetitions that measured both, in the fixture's table (as the notebook pairs them)."""
    runs = FX.table().filter((pl.col("status") == "ok") & (pl.col("target") == target) & (pl.col("op") == op))
    med = {s: dict(runs.filter(pl.col("stage") == s).group_by("rep").agg(pl.col("mb_per_s").median()).iter_rows())
           for s in (stage, 0)}
    shared = sorted(set(med[stage]) & set(med[0]))
    return [med[stage][r] for r in shared], [med[0][r] for r in shared]


def test_summary(run):
    s = summary_of(run["results"])
    assert s["study"] == STUDY and s["n_resamples"] >= 10_000 and s["level"] == 0.95
    pub = published_points()
    by = {(v["id"], v["target"]): v for v in s["verdicts"]}
    assert len(by) == len(s["verdicts"]) == 6
    for cid, targets in FX.EXPECTED.items():
        for target, verdict in targets.items():
            v = by[(cid, target)]
            assert v["verdict"] == verdict, (cid, target, v)
            assert v["ours_low"] <= v["ours"] <= v["ours_high"]
            op, stage = v["op"], v["stage"]
            assert (op, stage) == {"write_falls": ("write_odirect", 2), "read_falls": ("read", 2),
                                   "read_steady": ("read", 1)}[cid]
            assert v["test"] == ("no difference" if cid == "read_steady" else "effect")
            assert v["original_ratio"] == pytest.approx(published_ratio(op, [0, 1_000_000, 2_000_000][stage]))
            if v["pairs"] is None:  # the fixture's noise makes the unpaired Hodges-Lehmann ratio exact
                assert v["ours"] == pytest.approx(FX.RATES[target][op][stage] / FX.RATES[target][op][0])
            else:  # paired by repetition (enough of them for the claim's level): the signed-rank estimate
                assert v["ours"] == pytest.approx(paired_ratio_interval(*rep_medians(target, op, stage)).ratio)
            assert {"claim", "original_ratio", "ours", "ours_low", "ours_high", "verdict", "direction", "size",
                    "runs_to_settle"} <= set(v)
            # runs to settle: only for an inconclusive claim with an effect seen (ext4's reads do not change)
            assert (v["runs_to_settle"] is not None) == (verdict == "inconclusive" and v["ours"] != pytest.approx(1))
    assert by[("write_falls", "ext4")]["claim"].startswith("O_DIRECT write throughput falls as small files accumulate")
    assert by[("read_falls", "ext4")]["claim"].startswith("Buffered read throughput falls")
    # every claim says which hardware it was measured on: the fixture's targets are loop images
    for v in s["verdicts"]:
        assert (v["hardware"], v["modelled"]) == ("this machine", False)
        assert v["claim"].endswith(f"({v['target']}, on this machine's disk)")
    setup = s["setup"]
    assert setup["extra_files_per_stage"] == FX.N
    assert setup["memory_limit_mb"] == FX.MEMORY_MB and setup["file_bytes"] == FX.FILE_BYTES
    assert setup["write_block"] == FX.BLOCK and setup["read_block"] == 512
    assert setup["runs_per_stage"] == FX.RUNS
    assert setup["reps"] == {"ext4": FX.REPS, "xfs": FX.REPS - 1}
    assert setup["loop_direct_io"] == {"ext4": True, "xfs": True}
    # the failed job is listed with its reason, not measured
    assert s["counts"]["jobs"] == 2 * FX.REPS and s["counts"]["jobs_not_measured"] == 1
    (bad,) = s["not_measured"]
    assert (bad["target"], bad["rep"], bad["status"]) == ("xfs", 3, "error") and bad["reason"] == FX.FAIL_REASON
    assert s["original"]["extra_files_per_stage"] == 1_000_000 and s["original"]["runs_per_stage"] == 5
    assert s["last_run_at"] >= s["first_run_at"]


def test_claims_on_a_modelled_disk_name_it(fixture_runs, tmp_path):
    """A target on a device model (the tidy table's hardware column) gives claims
    that name the model, in their text and their hardware field."""
    data = tmp_path / "modelled.parquet"
    fixture_runs.with_columns(pl.lit("hdd-7200").alias("hardware")).write_parquet(data)
    out = FX.run_notebook(tmp_path, REPO, data=data)
    s = summary_of(out["results"])
    assert s["verdicts"]
    for v in s["verdicts"]:
        assert (v["hardware"], v["modelled"], v["hardware_label"]) == ("hdd-7200", True, "modelled hdd-7200")
        assert v["claim"].endswith(f"({v['target']}, on modelled hdd-7200)")


def test_paper_section(run, tmp_path):
    pdf = paper.build_paper(REPO, tmp_path / "paper.pdf", run["results"])
    text = pdf_text(pdf)
    s = summary_of(run["results"])
    assert "Degradation: a big file among many small ones" in text
    for v in s["verdicts"]:
        # the claim, then the hardware it names (a table cell may wrap between them)
        claim, _ = v["claim"].rsplit(" (", 1)
        assert claim in text
        assert text.count("on this machine's disk)") >= len(s["verdicts"])
    assert "50,000 and 100,000 small files against the original's 1,000,000 and 2,000,000" in text
    assert "cgroup limited to 256 MiB" in text
    assert "xfs repetition 3 (error:" in text


# --- every job skipped (no root) ------------------------------------------------


def test_all_skipped(skipped):
    results = skipped["results"]
    table = (results / "tables" / f"{STUDY}.csv").read_text().splitlines()
    assert table[0].startswith("target,filesystem,op") and len(table) == 1
    s = summary_of(results)
    assert s["counts"]["points"] == 0 and s["counts"]["jobs_not_measured"] == s["counts"]["jobs"] == 2 * FX.REPS
    assert {v["verdict"] for v in s["verdicts"]} == {"not tested"}
    assert all(r["reason"].startswith("not root") for r in s["not_measured"])
    check_figure_files(results, formats=("svg",))
    for name in FIGURES:
        rows = figure_rows(results, name)
        assert rows and {r["source"] for r in rows} == {"published"}
    check_published_points(results)

    pdf = paper.build_paper(REPO, results / "paper.pdf", results)
    text = pdf_text(pdf)
    assert "No job produced a measurement" in text and "not tested" in text


# --- the real table --------------------------------------------------------------


@pytest.mark.skipif(not REAL, reason="no data/runs/<host>/degradation.parquet")
@pytest.mark.parametrize("data", REAL, ids=lambda p: p.parent.name)
def test_real_data(data, tmp_path):
    out = FX.run_notebook(tmp_path, REPO, data=data)
    results = out["results"]
    runs = pl.read_parquet(data)
    check_figure_files(results, formats=("svg",))
    check_measured_points(results, runs)
    check_published_points(results)
    s = summary_of(results)
    targets = runs["target"].unique().to_list()
    assert len(s["verdicts"]) == 3 * max(1, len(targets))
    for v in s["verdicts"]:
        assert v["verdict"] in VERDICTS
        if v["ours_low"] is not None:
            assert v["ours_low"] <= v["ours"] <= v["ours_high"]
        else:  # no interval at the level: no verdict either
            assert v["verdict"] in ("too few runs", "not tested")


# --- the committed notebook --------------------------------------------------------


def test_committed_notebook_is_clean():
    src = nc.clean_notebook_parameters(NOTEBOOK)
    assert "n_resamples = 10_000" in src


pdf_text = partial(nc.pdf_text, plain_quotes=True)


@pytest.fixture(scope="module")
def host_noise(tmp_path_factory):
    """The fixture's runs with the host's moment on each stage's reads: alone, and paired with a reference."""
    return {v: FX.run_notebook(tmp_path_factory.mktemp(f"degradation-{v}"), REPO, variant=v)
            for v in ("host-noise", "referenced")}


def test_the_claims_compare_each_run_against_its_reference(host_noise):
    """Each stage's reads and writes moved by up to 25 % by the host's moment: alone, read and write
    claims come out other than on the quiet fixture; paired with a reference file the same moment moved,
    each comes out as on the quiet fixture, and the rates shown stay the big file's own."""
    got = {}
    for variant, run in host_noise.items():
        s = summary_of(run["results"])
        got[variant] = {(v["id"], v["target"]): v for v in s["verdicts"]}
        referenced = variant == "referenced"
        reads = [v for v in got[variant].values() if v["op"] == "read"]
        writes = [v for v in got[variant].values() if v["op"] == "write_odirect"]
        assert len(reads) == 4 and len(writes) == 2
        assert all(v["against_reference"] == referenced for v in reads + writes)
        for key in ("read_reference_runs", "write_reference_runs"):
            assert s["counts"][key] == (s["counts"]["rows_measured"] // 2 if referenced else 0)
    for op, at_least in (("read", 2), ("write_odirect", 1)):
        assert sum(v["verdict"] != FX.EXPECTED[cid][t] for (cid, t), v in got["host-noise"].items()
                   if v["op"] == op) >= at_least, op
    for (cid, target), v in got["referenced"].items():
        assert v["verdict"] == FX.EXPECTED[cid][target], (cid, target, v)
        # the reference constant, so the ratio of the stages' ratios is the rates'
        assert v["ours"] == pytest.approx(got["host-noise"][(cid, target)]["ours"], rel=0.3)
    table = pl.read_parquet(host_noise["referenced"][STUDY])
    assert (table["mb_per_s"] == table["bytes"] / 1e6 / table["seconds"]).all()  # its own turns' time
