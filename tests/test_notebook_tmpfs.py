"""notebooks/tmpfs.ipynb runs under papermill on a fixture made through the
study's own rows() and SCHEMA, and writes the figures, the table and the
summary the paper reads; the paper's tmpfs section builds from them."""

from __future__ import annotations

import statistics
from functools import partial
from pathlib import Path

import polars as pl
import pytest

from boatload.publish import paper
from boatload.studies import tmpfs as tmpfs_study
import notebook_checks as nc
from notebook_checks import load_fixtures

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "tmpfs.ipynb"
STUDY = "tmpfs"
KEY = ("target", "working_set", "tool", "test")
TESTS = [name for name, _ in tmpfs_study.TESTS]


FX = load_fixtures(STUDY)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return FX.run_notebook(tmp_path_factory.mktemp("tmpfs"), REPO, formats=FX.fixturelib.ALL_FORMATS)


@pytest.fixture(scope="module")
def skipped(tmp_path_factory):
    return FX.run_notebook(tmp_path_factory.mktemp("tmpfs-skipped"), REPO, variant="skipped")


@pytest.fixture(scope="module")
def fixture_runs(run):
    return pl.read_parquet(run["tmpfs"])


def measured(runs: pl.DataFrame) -> pl.DataFrame:
    return runs.filter((pl.col("status") == "ok") & pl.col("ops_per_s").is_not_null())


def medians(runs: pl.DataFrame) -> dict:
    agg = measured(runs).group_by(*KEY).agg(pl.col("ops_per_s").median(), pl.len().alias("reps"))
    return {tuple(r[k] for k in KEY): r for r in agg.iter_rows(named=True)}


figure_rows = partial(nc.figure_rows, study=STUDY)


summary_of = partial(nc.summary_of, study=STUDY)


def test_fixture_follows_the_schema(fixture_runs):
    from boatload.studies import study

    SCHEMA = study("tmpfs").table_schema

    assert dict(fixture_runs.schema) == SCHEMA


@pytest.mark.parametrize("name", ["rates", "ratios"])
def test_figure_files(run, name):
    nc.check_figure_files(run["results"], [name], study=STUDY)


def test_rate_points(run, fixture_runs):
    rows = figure_rows(run["results"], "rates")
    ours = [r for r in rows if r.get("source") == "measured" and "ops_per_s" in r]
    want = medians(fixture_runs)
    got = {}
    for r in ours:
        key = tuple(r[k] for k in KEY)
        assert key not in got, f"two measured points for {key}"
        got[key] = r
    assert set(got) == set(want)  # one point per (target, working set, tool, test); +++++ and failed ones absent
    for key, r in want.items():
        assert got[key]["ops_per_s"] == pytest.approx(r["ops_per_s"], rel=1e-12), key
        assert got[key]["ci_low"] <= got[key]["ops_per_s"] <= got[key]["ci_high"], key
        assert got[key]["reps"] == r["reps"], key
    assert ("tmpfs", 0.6, "bonnie++", "sequential_read") not in got  # +++++
    assert got[("ext3", 1.6, "boatload-worker", "random_read")]["reps"] == FX.REPS - 1  # the failed run is left out
    assert {r["marker"] for r in ours} == {"worker", "bonnie++"}

    # the published rates, each beside the working set of its label; +++++ not drawn
    published = [r for r in rows if r.get("source") == "published"]
    reference = pl.read_csv(REPO / "data" / "reference" / "tmpfs.csv")
    pub = {(r["filesystem"], r["working_set_label"], r["test"]): r["ops_per_s"] for r in published}
    assert len(published) == len(pub) == reference["ops_per_s"].drop_nulls().len()
    for r in reference.iter_rows(named=True):
        key = (r["filesystem"], r["working_set"], r["test"])
        assert pub.get(key) == r["ops_per_s"], key
    assert pub[("tmpfs", "fits in RAM", "sequential_read")] == 16163

    # the swap each run used
    swap = {(r["target"], r["working_set"], r["tool"]): r for r in rows if "swap_used_mb" in r}
    assert swap[("tmpfs", 1.6, "boatload-worker")]["swap_used_mb"] == pytest.approx(50.6)
    assert swap[("ext3", 0.6, "bonnie++")]["swap_used_mb"] == 0.0


def test_ratio_points(run, fixture_runs):
    rows = figure_rows(run["results"], "ratios")
    want = medians(fixture_runs)
    ours = {(r["working_set"], r["tool"], r["test"]): r for r in rows if r["source"] == "measured"}
    expected = {
        (w, tool, test)
        for (target, w, tool, test) in want
        if target == "tmpfs" and ("ext3", w, tool, test) in want
    }
    assert set(ours) == expected
    rates = {k: g["ops_per_s"].to_list() for k, g in measured(fixture_runs).group_by(*KEY)}
    for (w, tool, test), r in ours.items():
        ratio = nc.hl_ratio(rates[("tmpfs", w, tool, test)], rates[("ext3", w, tool, test)])
        assert r["ratio"] == pytest.approx(ratio, rel=1e-12)
        assert r["low"] <= r["ratio"] <= r["high"]
    published = {(r["working_set_label"], r["test"]): r["ratio"] for r in rows if r["source"] == "published"}
    assert published[("fits in RAM", "sequential_read")] == pytest.approx(16163 / 325)
    assert published[("beyond RAM", "random_read")] == pytest.approx(49 / 70)
    assert ("fits in RAM", "sequential_delete") not in published  # tmpfs printed +++++
    assert len(published) == 11


def test_table(run, fixture_runs):
    table = pl.read_csv(run["results"] / "tables" / f"{STUDY}.csv")
    assert table.columns == [
        "target", "filesystem", "working_set", "working_set_label", "files", "tool", "step", "test", "reps",
        "ops_per_s", "ci_low", "ci_high", "ci_coverage", "cv", "tmpfs_vs_ext3", "ratio_low", "ratio_high",
        "cpu_pct", "memory_limit_mb", "swap_used_mb", "peak_mb", "loop_direct_io",
    ]
    assert table.height == len(medians(fixture_runs))
    row = table.filter(
        (pl.col("target") == "tmpfs") & (pl.col("working_set") == 0.6) & (pl.col("tool") == "boatload-worker")
        & (pl.col("test") == "sequential_read")
    ).row(0, named=True)
    assert row["ops_per_s"] == pytest.approx(90_000.0)
    assert row["tmpfs_vs_ext3"] == pytest.approx(3.0)
    assert row["working_set_label"] == "fits in RAM"
    assert table.filter(pl.col("filesystem") == "ext3")["tmpfs_vs_ext3"].is_null().all()
    assert table.filter(pl.col("filesystem") == "ext3")["loop_direct_io"].all()


def test_summary(run, fixture_runs):
    s = summary_of(run["results"])
    assert s["study"] == STUDY and s["level"] == 0.95 and s["n_resamples"] >= 10_000
    assert [v["verdict"] for v in s["verdicts"]] == FX.EXPECTED
    assert s["verdict"] == s["verdicts"][0]
    for v in s["verdicts"]:
        assert set(v) >= {"claim", "original_ratio", "ours", "ours_low", "ours_high", "verdict", "direction", "size"}
        assert v["ours_low"] <= v["ours"] <= v["ours_high"]
        assert "\u201c" in v["claim"]  # quotes the original's words
        # the fixture ran on this machine: tmpfs in its RAM, ext3 on a loop image
        assert (v["hardware"], v["modelled"]) == ("this machine", False) and v["claim"].endswith(", on this machine")
    assert s["verdicts"][0]["original_ratio"] == pytest.approx(16163 / 325)
    assert s["verdicts"][0]["ours"] == pytest.approx(3.0)
    assert s["verdicts"][3]["original_ratio"] == pytest.approx(245 / 78)  # ext3 / tmpfs beyond RAM
    assert s["verdicts"][0]["bonnie"] is None  # bonnie++ could not time tmpfs inside the limit
    assert s["verdicts"][3]["bonnie"]["verdict"] == "reproduced"
    assert s["fits_working_set"] == 0.6 and s["beyond_working_set"] == 1.6
    assert s["memory_limit_mb"] == [FX.LIMIT_MB]

    swap = {(x["target"], x["working_set"], x["tool"]): x for x in s["swap"]}
    assert swap[("tmpfs", 1.6, "worker")]["swap_used_mb"] == pytest.approx(50.6)
    assert s["ext3_direct_io"]["on"] == s["ext3_direct_io"]["runs"] > 0

    not_ok = fixture_runs.filter(~((pl.col("status") == "ok") & pl.col("ops_per_s").is_not_null()))
    assert s["counts"]["rows_not_measured"] == not_ok.height == len(s["not_measured"])
    assert s["counts"]["rows_too_fast"] == not_ok.filter(pl.col("status") == "ok").height > 0
    assert all(r["reason"] for r in s["not_measured"])
    errors = [g for g in s["not_measured_groups"] if g["status"] == "error"]
    assert errors == [{"target": "ext3", "working_set": 1.6, "tool": "worker", "status": "error",
                       "reason": errors[0]["reason"], "reps": [2], "tests": ["random_read", "random_delete"]}]


def test_all_skipped(skipped):
    results = skipped["results"]
    table = (results / "tables" / f"{STUDY}.csv").read_text().splitlines()
    assert table[0].startswith("target,filesystem,working_set") and len(table) == 1
    s = summary_of(results)
    assert s["counts"]["groups_measured"] == 0 and s["counts"]["rows_skipped"] == s["counts"]["rows"] > 0
    assert {v["verdict"] for v in s["verdicts"]} == {"not tested"}
    assert all(r["reason"].startswith("not root") for r in s["not_measured"])
    for name in ("rates", "ratios"):
        assert (results / "figures" / f"{STUDY}-{name}.svg").stat().st_size > 1000
        rows = figure_rows(results, name)
        assert rows and all(r["source"] == "published" for r in rows)


pdf_text = nc.pdf_text


def test_paper_section(run, tmp_path):
    pdf = paper.build_paper(REPO, tmp_path / "paper.pdf", run["results"])
    text = pdf_text(pdf)
    assert "tmpfs: faster than ext3 in memory" in text
    s = summary_of(run["results"])
    for v in s["verdicts"]:
        assert v["verdict"] in text
    assert "49.7" in text  # the original's sequential read ratio inside RAM, formatted from the summary
    assert "3.00× (95% CI" in text  # ours: 90,000 / 30,000
    assert "16,163" in text  # the published table, exact
    assert "50.6 MiB (tmpfs, worker" in text  # swap
    assert "64 MiB" in text  # the memory limit
    assert "ext3 at 1.6×, worker, run 2, random read and random delete" in text
    # the appendix: worker ÷ bonnie++ of the same jobs, with each tool's CPU per file
    peers = s["peers"]
    assert f"On the {peers['tests']} tests with a rate from both" in text
    assert "CPU µs per file" in " ".join(text.split()) and "What each operation is" in text


def test_paper_section_without_measurements(skipped, tmp_path):
    text = pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", skipped["results"]))
    assert "No run produced a measurement" in text and "not tested" in text


def test_committed_notebook_is_clean():
    nc.clean_notebook_parameters(NOTEBOOK)


REAL = sorted((REPO / "data" / "runs").glob(f"*/{STUDY}.parquet"))


@pytest.mark.skipif(not REAL, reason="no measured tmpfs table in data/runs")
@pytest.mark.parametrize("data", REAL, ids=[p.parent.name for p in REAL])
def test_real_data(data, tmp_path):
    out = FX.run_notebook(tmp_path, REPO, data=data)
    runs = pl.read_parquet(data)
    s = summary_of(out["results"])
    groups = len(medians(runs))
    assert s["counts"]["groups_measured"] == groups
    ours = [r for r in figure_rows(out["results"], "rates") if r.get("source") == "measured" and "ops_per_s" in r]
    assert len(ours) == groups
    def models(fs):
        return set(runs.filter(pl.col("filesystem") == fs)["hardware"] if "hardware" in runs.columns else []) - {
            "this machine", None}
    # on each model all five claims again where tmpfs swapped to it, else the four about ext3
    again = sum(5 if m in models("tmpfs") else 4 for m in models("ext3") | models("tmpfs"))
    assert len(s["verdicts"]) == 5 + again


def test_ext3_on_a_modelled_disk_gives_its_claims_again(fixture_runs, tmp_path):
    """ext3 on a device model (the tidy table's hardware column) is a group of its
    own: the four claims about ext3 come again, naming the model, beside this
    machine's five."""
    modelled = fixture_runs.filter(pl.col("target") == "ext3").with_columns(
        pl.lit("ext3-hdd").alias("target"), pl.lit("hdd-7200").alias("hardware"))
    data = tmp_path / "modelled.parquet"
    pl.concat([fixture_runs, modelled]).write_parquet(data)
    out = FX.run_notebook(tmp_path, REPO, data=data)
    s = summary_of(out["results"])
    ours, model = s["verdicts"][:5], s["verdicts"][5:]
    # tmpfs did not swap to the model: the paper says its claims pair two disks
    text = " ".join(pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", out["results"])).split())
    assert "compare a disk of 2008 with this machine" in text and "tmpfs swapping to" not in text
    assert [v["verdict"] for v in ours] == FX.EXPECTED and {v["hardware"] for v in ours} == {"this machine"}
    assert len(model) == 4
    for v in model:
        assert (v["hardware"], v["modelled"], v["hardware_label"]) == ("hdd-7200", True, "modelled hdd-7200")
        assert v["claim"].endswith(", on modelled hdd-7200") and "ext3 on hdd-7200" in v["filesystem"]
        # the same runs under another name: the same ratio as this machine's claim
        twin = next(t for t in ours if t["claim"].rsplit(", on ", 1)[0] == v["claim"].rsplit(", on ", 1)[0])
        assert v["ours"] == pytest.approx(twin["ours"]) and v["verdict"] == twin["verdict"]


def test_ext3_and_tmpfs_on_one_modelled_disk_pair_with_each_other(fixture_runs, tmp_path):
    """With tmpfs swapping to the same model as ext3 (tmpfs-hdd beside ext3-hdd),
    all five claims come again on the model, each side on it: ext3 on the disk
    against tmpfs swapping to it, never against this machine's tmpfs."""
    on_model = [fixture_runs.filter(pl.col("target") == t).with_columns(
        pl.lit(f"{t}-hdd").alias("target"), pl.lit("hdd-7200").alias("hardware")) for t in ("ext3", "tmpfs")]
    data = tmp_path / "modelled.parquet"
    pl.concat([fixture_runs, *on_model]).write_parquet(data)
    out = FX.run_notebook(tmp_path, REPO, data=data)
    s = summary_of(out["results"])
    ours, model = s["verdicts"][:5], s["verdicts"][5:]
    assert len(model) == 5 and {v["hardware"] for v in model} == {"hdd-7200"}
    for v in model:
        sides = (v["numerator"]["filesystem"], v["denominator"]["filesystem"])
        assert all(side.endswith(" on hdd-7200") for side in sides), sides
        twin = next(t for t in ours if t["claim"].rsplit(", on ", 1)[0] == v["claim"].rsplit(", on ", 1)[0])
        assert v["ours"] == pytest.approx(twin["ours"]) and v["verdict"] == twin["verdict"]
    targets = {m["target"]: m for m in s["modelled_targets"]}
    assert set(targets) == {"ext3-hdd", "tmpfs-hdd"} and all(m["partner_on_model"] for m in targets.values())
    assert (targets["tmpfs-hdd"]["fs"], targets["ext3-hdd"]["fs"]) == ("tmpfs", "ext3")
    # each read rate beside the original's of its own file system
    beyond = [r for r in targets["tmpfs-hdd"]["reads"] if r["label"] == "beyond RAM"]
    pub = {(r["filesystem"], r["working_set"], r["test"]): r["ops_per_s"] for r in s["original"]["table"]}
    assert beyond and all(r["original"] == pub[("tmpfs", "beyond RAM", r["test"])] for r in beyond)
    # the paper says where each side ran, and that the pairing is the original's
    text = " ".join(pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", out["results"])).split())
    assert "tmpfs-hdd is tmpfs swapping to the modelled hdd-7200" in text
    assert "pair ext3 on the disk with tmpfs swapping to the same disk" in text
    assert "not on the model" not in text and "compare a disk of 2008 with this machine" not in text


def test_the_paper_says_what_the_sequential_read_sent_the_modelled_disk(fixture_runs, tmp_path):
    """What a modelled disk's per-phase counts (tests/test_tmpfs_model_requests.py) come to in the notebook
    (medians over the worker's runs) and in the paper, beside ext3's sequential read rate on the model."""
    ext3 = fixture_runs.filter(pl.col("target") == "ext3").with_columns(
        pl.lit("ext3-hdd").alias("target"), pl.lit("hdd-7200").alias("hardware"))
    seq = (pl.col("test") == "sequential_read") & (pl.col("working_set_label") == "beyond RAM") & (
        pl.col("tool") == "boatload-worker") & (pl.col("status") == "ok")
    # each run's counts differ with its rep, so the medians are of something
    n = pl.col("files")
    ext3 = ext3.with_columns(
        pl.when(seq).then((n * (1.5 + 0.1 * pl.col("rep"))).cast(pl.Int64)).otherwise(None).alias("model_reads"))
    ext3 = ext3.with_columns(
        pl.when(seq).then((pl.col("model_reads") // 10).cast(pl.Int64)).otherwise(None).alias("model_seq_reads"),
        pl.when(seq).then(pl.col("model_reads") * 64.0).otherwise(None).alias("model_read_kib"),
        pl.when(seq).then(pl.col("seconds") * 1000 * 0.8).otherwise(None).alias("model_read_ms"),
        pl.when(seq).then(pl.lit(3.5)).otherwise(None).alias("loop_queue_depth"))
    data = tmp_path / "modelled.parquet"
    pl.concat([fixture_runs, ext3], how="vertical_relaxed").write_parquet(data)
    out = FX.run_notebook(tmp_path, REPO, data=data)
    s = summary_of(out["results"])
    m = next(m for m in s["modelled_targets"] if m["target"] == "ext3-hdd")
    got = next(r for r in m["reads"] if r["test"] == "sequential_read" and r["label"] == "beyond RAM")["requests"]
    runs = ext3.filter(seq).to_dicts()
    assert got["runs"] == len(runs) > 1
    assert got["reads_per_file"] == pytest.approx(statistics.median(r["model_reads"] / r["files"] for r in runs))
    assert got["seq_share"] == pytest.approx(statistics.median(r["model_seq_reads"] / r["model_reads"] for r in runs))
    assert got["mean_kib"] == pytest.approx(64.0) and got["time_share"] == pytest.approx(0.8)
    assert got["queue_depth"] == pytest.approx(3.5)
    # the random read had no counts: nothing is said of it
    assert all(r["requests"] is None for r in m["reads"] if r["test"] != "sequential_read")
    text = " ".join(pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", out["results"])).split())
    share = f"only {round(got['seq_share'] * 100)}% of them starting where the request before them ended"
    assert f"Its sequential read sent the disk {got['reads_per_file']:.2f} reads a file" in text and share in text


def test_worker_and_bonnie_paired_within_each_job(run, fixture_runs):
    """The peers table pairs the worker's and bonnie++'s rows of the same job
    (target, working set, repetition) test by test, never medians of separate runs."""
    results = run["results"]
    peers = pl.read_csv(results / "tables" / f"{STUDY}-peers.csv")
    pairs = pl.read_csv(results / "tables" / f"{STUDY}-pairs.csv")
    m = measured(fixture_runs)
    job = ["target", "working_set", "rep", "test"]
    joined = m.filter(pl.col("tool") == "boatload-worker").join(
        m.filter(pl.col("tool") == "bonnie++"), on=job, suffix="_b")
    want: dict = {}
    for r in joined.iter_rows(named=True):
        want.setdefault((r["target"], r["working_set"], r["test"]), []).append(
            (r["ops_per_s"] / r["ops_per_s_b"], r["cpu_us_per_op"], r["cpu_us_per_op_b"]))
    assert {(r["target"], r["working_set"], r["test"]) for r in peers.iter_rows(named=True)} == set(want)
    assert pairs.height == joined.height
    for r in peers.iter_rows(named=True):
        got = want[(r["target"], r["working_set"], r["test"])]
        assert r["pairs"] == len(got)
        assert r["worker_over_bonnie"] == pytest.approx(statistics.median(g[0] for g in got))
        assert r["worker_cpu_us_per_op"] == pytest.approx(statistics.median(g[1] for g in got))
        assert r["bonnie_cpu_us_per_op"] == pytest.approx(statistics.median(g[2] for g in got))
        if r["pairs"] >= 2:
            assert r["low"] <= r["worker_over_bonnie"] <= r["high"]
    # the failed worker run (ext3 1.6, rep 2) leaves its job's bonnie++ rows unpaired
    assert peers.filter((pl.col("target") == "ext3") & (pl.col("working_set") == 1.6)
                        & (pl.col("test") == "random_read"))["pairs"].to_list() == [FX.REPS - 1]
    # one tool first, the other second, as the job recorded
    for r in pairs.iter_rows(named=True):
        assert {r["worker_position"], r["bonnie_position"]} == {1, 2}
        assert (r["worker_position"] == 1) == (r["first_tool"] == "boatload-worker")
    s = summary_of(results)["peers"]
    assert s["tests"] == peers.height and s["min"] == pytest.approx(peers["worker_over_bonnie"].min())
    assert [t["test"] for t in s["by_test"]] == [t for t in TESTS if t in set(peers["test"])]
