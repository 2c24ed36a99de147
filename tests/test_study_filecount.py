"""The filecount study: its jobs, fio's command and parser, and (as root) a real
ci-scale run of every job with the worker and the fio peer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from boatload.provision import targets
from boatload.measure.peers import fio
from boatload.studies import filecount
from conftest import ROOT, ours_left

IS_ROOT = os.geteuid() == 0


def config(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())


@pytest.mark.parametrize("name", ["ci.yaml", "config.yaml", "full.yaml"])
def test_jobs_cover_every_point_once_with_every_tool(name):
    cfg = config(name)
    study = cfg["studies"]["filecount"]
    jobs = filecount.jobs(cfg)
    reps = study.get("repetitions", cfg["repetitions"])
    tools = {"boatload-worker", *(filecount.TOOLS[p] for p in study.get("peers", []))}
    # the claim's files (1 and 2) in every round (a mode's mode_repetitions where more, but a tmpfs's
    # O_DIRECT points, recorded as skipped), the curve's other points in the first curve_repetitions
    curve = min(study.get("curve_repetitions", reps), reps)
    more = study.get("mode_repetitions", {})

    def claim_rounds(target: str, mode: str) -> int:
        skipped = mode == "direct" and cfg["targets"][target]["fs"] == "tmpfs"
        return reps if skipped else max(reps, more.get(mode, reps))

    assert len(jobs) == sum(claim_rounds(t, m) if k in filecount.CLAIM_FILES else curve
                            for t in study["targets"] for m in study["modes"] for k in study["files"])
    keys = {(j["target"]["name"], j["point"], j["rep"]) for j in jobs}
    assert len(keys) == len(jobs)
    # the peers in the first peer_repetitions rounds (every round without the setting), the worker alone after
    peer_rounds = min(study.get("peer_repetitions", reps), reps)
    for j in jobs:
        assert j["point"] == f"k{j['files']:02d}-{j['mode']}"
        want = tools if j["rep"] <= peer_rounds else {"boatload-worker"}
        assert set(j["tools"]) == want and len(j["tools"]) == len(want)
        assert j["threads"] == study["threads"] and j["read_pct"] == study["read_pct"]
        # the worker first when k + rep is even: repetitions alternate, and so do neighbouring k
        assert (j["tools"][0] == "boatload-worker") == ((j["files"] + j["rep"]) % 2 == 0 or len(want) == 1)
    peered = [j for j in jobs if len(j["tools"]) > 1]
    assert len(peered) == (sum(j["rep"] <= peer_rounds for j in jobs) if len(tools) > 1 else 0)
    if len(tools) > 1 and len(study["files"]) % 2 == 0:  # half the jobs with the peer start with it
        assert sum(j["tools"][0] != "boatload-worker" for j in peered) == len(peered) // 2


def test_study_repetitions_override_the_top_level():
    cfg = config("ci.yaml")
    cfg["repetitions"] = 3
    cfg["studies"]["filecount"]["repetitions"] = 2
    assert {j["rep"] for j in filecount.jobs(cfg)} == {1, 2}


def test_fio_shares_the_same_k_files_among_all_threads(tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("fio not installed")
    argv = fio.randrw_argv(tmp_path, 3, 4 << 20, threads=64, xfer=8192, read_pct=70, duration_s=0.5,
                           direct=True, seed=7)
    assert "--filename=f000:f001:f002" in argv
    assert {"--numjobs=64", "--thread", "--ioengine=psync", "--rw=randrw", "--rwmixread=70", "--bs=8192",
            "--direct=1", "--runtime=500ms", "--file_service_type=random", "--allow_file_create=0",
            "--disable_lat=1", "--clat_percentiles=1", "--disable_bw_measurement=1"} <= set(argv)
    stock = fio.randrw_argv(tmp_path, 3, 4 << 20, threads=64, xfer=8192, read_pct=70, duration_s=0.5,
                            direct=True, seed=7, default_latency=True)
    assert set(argv) - set(stock) == {"--disable_lat=1", "--clat_percentiles=1", "--disable_bw_measurement=1"}
    assert set(stock) < set(argv)
    assert fio.file_names(1001)[-1] == "f1000" and fio.file_names(12)[0] == "f000"


def test_fio_parser_totals_and_mixed_latency():
    # fio --disable_lat=1: clat with percentiles, lat empty
    def side(ios, iops, mean_ns, p99_ns):
        return {"total_ios": ios, "iops": iops, "runtime": 1000, "bw_bytes": iops * 8192,
                "clat_ns": {"N": ios, "mean": mean_ns, "percentile": {"99.000000": p99_ns}},
                "lat_ns": {"N": 0, "mean": 0.0}}

    job = {"error": 0, "read": side(700, 700.0, 1000, 5000), "write": side(300, 300.0, 3000, 9000)}
    got = fio.parse_randrw({"fio version": "fio-3.33", "jobs": [job]})
    assert got["iops"] == 1000 and got["read_pct_measured"] == 70
    assert got["lat_mean_us"] == pytest.approx(1.6) and got["lat_p99_us"] == 9
    job["mixed"] = side(1000, 1000.0, 1600, 6000)
    assert fio.parse_randrw({"jobs": [job]})["lat_p99_us"] == 6
    with pytest.raises(fio.FioError):
        fio.parse_randrw({"jobs": [job, job]})


@pytest.fixture
def scratch(tmp_path, worker, monkeypatch):
    monkeypatch.setenv("BOATLOAD_WORKER", str(worker))
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(tmp_path / "scratch"))
    yield tmp_path
    assert ours_left(tmp_path) == []


def frame(docs) -> pl.DataFrame:
    return pl.DataFrame([r for d in docs for r in filecount.rows(d)], schema=filecount.STUDY.table_schema,
                        orient="row").sort(list(filecount.STUDY.sort))


@pytest.mark.skipif(not IS_ROOT, reason="needs root (mount, loop devices)")
@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_ci_run_worker_and_fio_in_the_same_job(scratch):
    cfg = config("ci.yaml")
    # ci's own targets, and tmpfs (worker against fio there, and "direct" skipped); two
    # repetitions, so that each point runs in both orders
    cfg["studies"]["filecount"]["targets"] = sorted({*cfg["studies"]["filecount"]["targets"], "tmpfs"})
    cfg["studies"]["filecount"]["repetitions"] = 2
    jobs = filecount.jobs(cfg)
    docs = [filecount.run(j) for j in jobs]
    runs = frame(docs)
    # one job, one row per tool
    assert runs.height == 2 * len(jobs)
    per_job = runs.group_by("target", "mode", "files", "rep").agg(
        pl.col("tool").sort(), pl.col("position").sort(), pl.col("first_tool").n_unique().alias("firsts"))
    assert per_job.height == len(jobs)
    assert per_job["tool"].to_list() == [["boatload-worker", "fio"]] * len(jobs)
    assert per_job["position"].to_list() == [[1, 2]] * len(jobs) and (per_job["firsts"] == 1).all()
    # the order alternates between repetitions 1 and 2 of every point
    first = {(r["target"], r["mode"], r["files"], r["rep"]): r["first_tool"] for r in runs.iter_rows(named=True)}
    for (t, m, k, rep), tool in first.items():
        if rep == 1:
            assert first[(t, m, k, 2)] != tool, (t, m, k)
    assert (runs["tool"] == runs["first_tool"]).eq(runs["position"] == 1).all()

    # tmpfs "direct" is not a separate measurement there; it says why, for both tools.
    skipped = runs.filter(pl.col("status") == "skipped")
    assert set(skipped["target"]) <= {"tmpfs"} and set(skipped["mode"]) == {"direct"}
    assert skipped["reason"].str.contains("page cache").all() and set(skipped["tool"]) == {"boatload-worker", "fio"}

    ok = runs.filter(pl.col("status") == "ok")
    assert ok.height == runs.height - skipped.height
    assert (ok["iops"] > 0).all() and (ok["read_iops"] > 0).all() and (ok["write_iops"] > 0).all()
    assert (ok["mb_per_s"] > 0).all() and (ok["lat_mean_us"] > 0).all() and (ok["lat_p99_us"] > 0).all()
    # 70 % reads over the whole run, the worker's and fio's: within 5 standard
    # deviations of a binomial share of `ops` draws (0.72 points at 100,000 ops;
    # a fixed 1.4 failed a 0.5 s run slowed by another user's disk writes)
    off = (ok["read_pct_measured"] - 70).abs()
    allowed = 5 * 100 * (0.7 * 0.3 / ok["ops"]).sqrt()
    assert (ok["ops"] > 0).all() and (off <= allowed).all(), ok.select(
        "target", "files", "mode", "tool", "ops", "read_pct_measured").with_columns(allowed=allowed)
    # CPU per I/O of both tools: their CPU over the timed I/O, at most every CPU for the whole run
    cpu_s = ok["cpu_user_s"] + ok["cpu_sys_s"]
    assert (ok["cpu_sys_s"] > 0).all() and (cpu_s <= (os.cpu_count() or 1) * ok["seconds"] * 1.1).all(), ok.select(
        "target", "mode", "files", "tool", "seconds", "cpu_user_s", "cpu_sys_s")
    assert ok["cpu_us_per_op"].to_list() == pytest.approx((cpu_s / ok["ops"] * 1e6).to_list())
    # a loop target's O_DIRECT goes on to the host's disk
    assert ok.filter(pl.col("target") == "ext4")["loop_direct_io"].all()
    # the worker's per-interval IOPS (the samples of a point run once): whole
    # intervals of the configured length, their ops adding up to the run's
    interval = cfg["studies"]["filecount"]["interval_s"]
    for r in ok.iter_rows(named=True):
        if r["tool"] == "fio":
            assert r["interval_iops"] is None
            continue
        assert r["interval_s"] == interval
        assert len(r["interval_iops"]) >= int(r["seconds"] / interval) - 1 >= 3
        assert all(x > 0 for x in r["interval_iops"])
        assert sum(r["interval_iops"]) * interval == pytest.approx(r["ops"], rel=0.25)

    # Each tool laid out its k files fresh (nothing there before, every byte
    # written), with the previous tool's files gone: both started with the same free space.
    size = cfg["studies"]["filecount"]["file_size_mb"] << 20
    for d in docs:
        r = d["result"]
        if r["status"] != "ok":
            continue
        assert r["order"] == d["job"]["tools"]
        for tool, t in r["tools"].items():
            [prepare] = [p for p in t["worker_result"]["phases"] if p["name"] == "prepare"]
            assert (prepare["ops"], prepare["existing"], prepare["bytes"]) == (
                d["job"]["files"], 0, d["job"]["files"] * size), (tool, prepare)
        free = [t["free_mb_at_start"] for t in r["tools"].values()]
        assert max(free) - min(free) < 0.5 * d["job"]["files"] * cfg["studies"]["filecount"]["file_size_mb"], free
        fio_run = r["tools"]["fio"]
        names = fio.file_names(d["job"]["files"])
        assert f"--filename={':'.join(names)}" in fio_run["fio_command"]
        assert fio_run["fio_result"]["jobs"][0]["job options"]["numjobs"] == str(d["job"]["threads"])
        assert filecount.summary(d).count("IOPS") == 2

    # How close fio and the worker come is a benchmark question (bench/randio.py), not a test's:
    # here both must have measured every point in the same job.
    pivot = ok.pivot(on="tool", index=["target", "files", "mode", "rep"], values="iops")
    assert pivot.height == len(jobs) - skipped.height // 2
    assert (pivot["boatload-worker"] > 0).all() and (pivot["fio"] > 0).all(), pivot


def test_without_root_runs_on_a_plain_directory_marked_substituted(scratch, monkeypatch):
    monkeypatch.setattr(targets, "is_root", lambda: False)
    cfg = config("ci.yaml")
    job = next(j for j in filecount.jobs(cfg) if j["target"]["name"] == "ext4" and j["point"] == "k02-buffered")
    doc = filecount.run(job)
    assert doc["target"]["kind"] == "dir" and doc["target"]["substituted"].startswith("not root")
    assert doc["result"]["status"] == "ok"
    assert all(t["iops"] > 0 for t in doc["result"]["tools"].values())
    rows = filecount.rows(doc)
    assert [r["tool"] for r in rows] == job["tools"]
    assert all(r["status"] == "skipped" and r["reason"].startswith("not root") for r in rows)
    assert not any(Path(scratch, "scratch", "dirs").iterdir())
