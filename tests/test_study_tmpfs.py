"""The tmpfs study: its jobs and sizes, bonnie++'s CSV, real ci-sized runs in a memory limit, no root."""

import json
import os
import re
import subprocess

import pytest
import yaml

from boatload.provision import memlimit, targets
from boatload.studies.config import ConfigError
from boatload.measure.peers import bonnie
from boatload.studies import tmpfs
from boatload.analysis.tidy import tidy
from conftest import ROOT

root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
needs_bonnie = pytest.mark.skipif(bonnie.executable() is None, reason="bonnie++ is not installed")
TESTS = ["sequential_create", "sequential_read", "sequential_delete", "random_create", "random_read", "random_delete"]


def config(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


def job_for(cfg, target, w, rep=1, with_bonnie=False):
    if with_bonnie:  # ci.yaml runs no peers; the same sizes with bonnie++ as the peer
        cfg["studies"]["tmpfs"]["peers"] = ["bonnie"]
        cfg["studies"]["tmpfs"]["repetitions"] = max(rep, 2)
    return next(j for j in tmpfs.jobs(cfg) if j["target"]["name"] == target and j["working_set"] == w
                and j["rep"] == rep)


def _tidy(docs, tmp_path):
    raw = []
    for i, doc in enumerate(docs):
        path = tmp_path / f"raw{i}.json"
        path.write_text(json.dumps(doc))
        raw.append(path)
    return tidy("tmpfs", raw, tmp_path / "tmpfs.parquet")


# -- jobs and sizes ------------------------------------------------------------


@pytest.mark.parametrize("name", ["ci.yaml", "config.yaml", "full.yaml"])
def test_jobs_target_by_working_set_by_repetition_with_every_tool(name):
    cfg = config(name)
    study = cfg["studies"]["tmpfs"]
    jobs = tmpfs.jobs(cfg)
    reps = study.get("repetitions", cfg["repetitions"])
    with_bonnie = "bonnie" in study.get("peers", [])
    assert len(jobs) == len(study["targets"]) * len(study["working_set"]) * reps
    assert len({(j["target"]["name"], j["point"], j["rep"]) for j in jobs}) == len(jobs)
    for j in jobs:
        # a target's own settings (per_target) over the study's
        own = {**study, **study.get("per_target", {}).get(j["target"]["name"], {})}
        limit = own["memory_limit_mb"]
        assert re.fullmatch(r"[A-Za-z0-9._-]+", j["point"]) and j["point"] == f"ws{j['working_set']:g}"
        n = round(j["working_set"] * limit * 2**20 / (own["size_max"] / 2))
        assert j["files"] == n and j["memory_limit_mb"] == limit and j["swap_mb"] == own["swap_mb"]
        if with_bonnie and "bonnie" in own["peers"]:
            assert j["bonnie_files"] == max(1, round(n / 1024)) * 1024 == j["bonnie_files_k"] * 1024
            # the worker first in odd repetitions, bonnie++ in even ones; in the first peer_repetitions
            # rounds (every round without the setting), the worker alone after them
            alone = j["rep"] > study.get("peer_repetitions", reps)
            assert j["tools"] == (["worker"] if alone else ["worker", "bonnie"] if j["rep"] % 2 else ["bonnie", "worker"])
        else:
            assert j["tools"] == ["worker"] and j["bonnie_files"] is None


def test_the_full_scale_is_the_originals_20k_and_about_50k_files():
    jobs = {j["working_set"]: j for j in tmpfs.jobs(config("full.yaml"))}
    assert jobs[0.6]["bonnie_files_k"] == 20
    assert 48 <= jobs[1.6]["bonnie_files_k"] <= 55
    assert jobs[1.6]["size_max"] == 250000 and jobs[1.6]["dirs"] == 1000


def test_a_target_too_small_for_the_working_set_is_a_config_error_naming_the_field():
    cfg = config("ci.yaml")
    cfg["targets"]["tmpfs"]["size_mb"] = 96  # holds 0.6 x 64 MiB of files, not 1.6 x
    with pytest.raises(ConfigError, match=r"targets\.tmpfs\.size_mb: 96 MiB cannot hold .*working_set 1\.6"):
        tmpfs.jobs(cfg)
    cfg = config("ci.yaml")
    cfg["studies"]["tmpfs"]["swap_mb"] = 0
    with pytest.raises(ConfigError, match=r"studies\.tmpfs\.swap_mb"):
        tmpfs.jobs(cfg)


# -- bonnie++'s CSV ------------------------------------------------------------

# A format-1.98 line as bonnie++ 2.00a prints it (-n 50:250000:0:1000: field 24
# empty, the directories in 25), with numbers, "+++++" and latencies in us/ms/s.
LINE = ("1.98,2.00a,box,1,1700000000,,,,,,,,,,,,,,,,,50,250000,,,1000,"
        "409,6,78,2,+++++,+++,416,11,49,2,62921,97,,,,,,,12ms,350us,87us,2s,1.5ms,400us")


def test_bonnie_csv_fields_and_too_fast():
    r = bonnie.parse_csv(LINE + "\n")[0]
    assert (r["bonnie_version"], r["files"], r["max_size"], r["min_size"], r["num_dirs"]) == ("2.00a", 51200, 250000, 0, 1000)
    tests = {t["test"]: t for t in r["tests"]}
    assert list(tests) == TESTS
    assert (tests["sequential_create"]["ops_per_s"], tests["sequential_create"]["cpu_pct"]) == (409, 6)
    assert (tests["sequential_read"]["ops_per_s"], tests["random_read"]["ops_per_s"]) == (78, 49)
    assert tests["sequential_delete"] == {"test": "sequential_delete", "csv_name": "seq_del", "ops_per_s": None,
                                          "cpu_pct": None, "too_fast": True, "latency_max_us": 87.0}
    assert tests["random_delete"]["ops_per_s"] == 62921 and not tests["random_delete"]["too_fast"]
    assert [t["latency_max_us"] for t in r["tests"]] == [12000, 350, 87, 2e6, 1500, 400]
    rows = tmpfs.bonnie_tests(r)
    assert [t["ops_per_s"] for t in rows] == [409, 78, None, 416, 49, 62921]
    with pytest.raises(bonnie.BonnieError, match="format version"):
        bonnie.parse_csv("1.03d,box,...\n")
    with pytest.raises(bonnie.BonnieError, match="no CSV line"):
        bonnie.parse_csv("# nothing\n")


def _text_table(text):
    """bonnie++'s own text table (stderr with -q): the six tests' /sec and %CP."""
    for line in text.splitlines():
        if re.match(r"\s*\d+(:\d+:\d+)?(/\d+)?\s", line):
            return line.split()[1:]
    raise AssertionError(f"no result line in:\n{text}")


@root
@needs_bonnie
@pytest.mark.parametrize("n", ["1:4096:0:4", "8:0:0:1"])
def test_bonnie_parser_on_real_output_agrees_with_its_text_table(tmp_path, n):
    files_k, size_max, _, dirs = map(int, n.split(":"))
    d = tmp_path / "b"
    d.mkdir()
    proc = subprocess.run(bonnie.argv(d, files_k, size_max, dirs, seed=7), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    r = bonnie.parse_csv(proc.stdout)[0]
    assert (r["files"], r["max_size"], r["num_dirs"], r["seed"]) == (files_k * 1024, size_max or None, dirs, 7)
    # The text table says which tests were too fast and their %CP as the CSV does.
    # (Its /sec is not the CSV's: 2.00a prints files per one second there.)
    text = _text_table(proc.stderr)
    for i, t in enumerate(r["tests"]):
        rate, cpu = text[2 * i], text[2 * i + 1]
        if rate.startswith("+"):
            assert t["too_fast"] and t["ops_per_s"] is None and t["cpu_pct"] is None
        else:
            assert not t["too_fast"] and t["ops_per_s"] > 0 and t["cpu_pct"] == float(cpu)
        assert t["latency_max_us"] > 0
    assert list(d.iterdir()) == []  # bonnie++ cleans up after itself


# -- the worker's bonnie -------------------------------------------------------


class NoLimit:
    """Limit.run without a limit: for the parts that do not need a cgroup."""

    provenance = {"none": True}

    def run(self, argv, **kwargs):
        return subprocess.run(argv, **kwargs)

    def stats(self):
        return {}


def test_the_worker_does_bonnies_six_tests_in_bonnies_order(worker, tmp_path, monkeypatch):
    monkeypatch.setenv("BOATLOAD_WORKER", str(worker))
    job = job_for(config("ci.yaml"), "tmpfs", 0.6)
    d = tmp_path / "w"
    d.mkdir()
    doc = tmpfs.run_worker("meta", tmpfs.worker_args(d, job), limit=NoLimit())
    assert doc["status"] == "ok"
    assert [(p["name"], p["order"][:3]) for p in doc["phases"]] == [
        ("create", "seq"), ("stat", "seq"), ("read", "seq"), ("delete", "seq"),
        ("create", "ran"), ("stat", "ran"), ("read", "ran"), ("delete", "ran")]
    tests = tmpfs.worker_tests(doc, job["files"])
    assert [t["test"] for t in tests] == TESTS
    stat, read = doc["phases"][1], doc["phases"][2]
    seq_read = tests[1]
    # bonnie's "Read" is stat + read of each file: one rate over both phases' time
    assert seq_read["seconds"] == pytest.approx(stat["seconds"] + read["seconds"])
    assert seq_read["ops_per_s"] == pytest.approx(job["files"] / (stat["seconds"] + read["seconds"]))
    assert seq_read["p50_us"] == pytest.approx(stat["latency_us"]["p50"] + read["latency_us"]["p50"])
    for t in tests:
        assert t["ops"] == job["files"] and t["ops_per_s"] > 0 and 0 < t["cpu_pct"] <= 100 * 1.05
    # CPU per file: both phases' CPU over the files
    assert seq_read["cpu_us_per_op"] == pytest.approx(
        sum(p["cpu_user_s"] + p["cpu_sys_s"] for p in (stat, read)) / job["files"] * 1e6)
    assert list(d.iterdir()) == []


# -- real runs -----------------------------------------------------------------


@root
def test_ci_runs_in_the_memory_limit_inside_and_beyond_it(study_scratch, tmp_path):
    cfg = config("ci.yaml")
    docs = {}
    for target in ("tmpfs", "ext3"):
        for w in (0.6, 1.6):
            doc = tmpfs.run(job_for(cfg, target, w))
            assert doc["result"]["status"] == "ok", doc["result"]["reason"]
            docs[(target, w)] = doc
            rows = tmpfs.rows(doc)
            assert [r["test"] for r in rows] == TESTS
            for r in rows:
                assert r["status"] == "ok" and r["ops"] == r["files"] and r["ops_per_s"] > 0, r
                assert r["tool"] == "boatload-worker" and r["memory_limit_mb"] == cfg["studies"]["tmpfs"]["memory_limit_mb"]
                assert r["position"] == 1 and r["first_tool"] == "boatload-worker" and r["cpu_us_per_op"] > 0
                assert r["working_set_label"] == ("fits in RAM" if w < 1 else "beyond RAM")
                # ext3's loop image is read with direct I/O: from the disk, not the host's page cache
                assert r["loop_direct_io"] is (True if target == "ext3" else None) and r["reason"] is None
            assert rows[0]["peak_mb"] <= cfg["studies"]["tmpfs"]["memory_limit_mb"] * 1.01
    # Beyond the limit, tmpfs pages go to the swap file; inside it they stay in memory.
    assert tmpfs.rows(docs[("tmpfs", 1.6)])[0]["swap_used_mb"] > 0
    assert (tmpfs.rows(docs[("tmpfs", 0.6)])[0]["swap_used_mb"] or 0) < tmpfs.rows(docs[("tmpfs", 1.6)])[0]["swap_used_mb"]
    table = _tidy(list(docs.values()), tmp_path)
    assert tmpfs.STUDY.table_schema.items() <= dict(table.schema).items() and table.height == 4 * 6


@root
@needs_bonnie
def test_ci_worker_and_bonnie_in_the_same_job_in_the_memory_limit(study_scratch, tmp_path):
    cfg = config("ci.yaml")
    # files of up to 16 KiB, not ci's 64: four times as many in the same working
    # set, so that bonnie++'s reads beyond the limit take over a second (ci's
    # 3,072 files read in 0.46-0.77 s, around its 500 ms "+++++" line)
    cfg["studies"]["tmpfs"]["size_max"] = 16384
    docs = [tmpfs.run(job_for(cfg, "tmpfs", 1.6, rep, with_bonnie=True)) for rep in (1, 2)]
    firsts = []
    for doc in docs:
        job, r = doc["job"], doc["result"]
        assert r["status"] == "ok", r["reason"]
        k = job["bonnie_files_k"]
        assert k == round(job["files"] / 1024) and job["bonnie_files"] == k * 1024
        assert r["order"] == job["tools"] and set(r["tools"]) == {"worker", "bonnie"}
        worker, bon = r["tools"]["worker"], r["tools"]["bonnie"]
        assert bon["bonnie"]["argv"][1:5] == ["-s", "0", "-n", f"{k}:16384:0:10"]
        assert bon["bonnie"]["result"]["files"] == job["bonnie_files"]
        assert [p["ops"] for p in worker["worker_result"]["phases"]] == [job["files"]] * 8
        # each tool in a memory limit of its own, the same size, beyond which both swapped
        assert worker["memory_limit"] != bon["memory_limit"]
        assert worker["memory"]["swap_used_mb"] > 0 and bon["memory"]["swap_used_mb"] > 0
        # each found the target as the other left it: its files gone (the same free space)
        assert abs(worker["free_mb_at_start"] - bon["free_mb_at_start"]) < 1, (worker["free_mb_at_start"], bon["free_mb_at_start"])
        rows = tmpfs.rows(doc)
        assert [(r["tool"], r["test"]) for r in rows] == [
            (tmpfs.TOOLS[t], test) for t in job["tools"] for test in TESTS]
        firsts.append(rows[0]["first_tool"])
        for row in rows:
            assert row["status"] == "ok" and row["position"] == 1 + job["tools"].index(
                "worker" if row["tool"] == "boatload-worker" else "bonnie")
            if row["ops_per_s"] is None:  # bonnie++: "+++++", said so
                assert "+++++" in row["reason"] and row["cpu_us_per_op"] is None
                continue
            assert row["ops_per_s"] > 0 and row["cpu_us_per_op"] > 0
            # CPU per file is the CPU share of the test's time over its rate
            assert row["cpu_us_per_op"] == pytest.approx(row["cpu_pct"] / 100 / row["ops_per_s"] * 1e6, rel=1e-9)
        timed = [row for row in rows if row["tool"] == "bonnie++" and row["ops_per_s"] is not None]
        assert timed, "bonnie++ timed none of its tests beyond the limit"
        assert "then" in tmpfs.summary(doc)
    assert firsts == ["boatload-worker", "bonnie++"]  # the order alternates by repetition
    table = _tidy(docs, tmp_path)
    assert tmpfs.STUDY.table_schema.items() <= dict(table.schema).items() and table.height == 2 * 2 * 6


def test_without_root_the_job_is_skipped_with_the_reason(study_scratch, monkeypatch, tmp_path):
    monkeypatch.setattr(targets, "is_root", lambda: False)
    docs = [tmpfs.run(job_for(config("ci.yaml"), "tmpfs", 0.6, with_bonnie=bonnie_too)) for bonnie_too in (False, True)]
    for doc in docs:
        assert doc["result"]["status"] == "skipped" and "not root" in doc["result"]["reason"]
        assert doc["target_provenance"] is None
    table = _tidy(docs, tmp_path)
    assert tmpfs.STUDY.table_schema.items() <= dict(table.schema).items()
    assert table.height == 18 and set(table["status"]) == {"skipped"}
    assert table["ops_per_s"].null_count() == 18
    assert set(table["tool"]) == {"boatload-worker", "bonnie++"}


def test_reclaim_gave_up_only_for_an_oom_kill_with_swap_room():
    assert tmpfs.reclaim_gave_up({"oom_events": 1, "swap_used_mb": 40.0}, 192)
    assert not tmpfs.reclaim_gave_up({"oom_events": 1, "swap_used_mb": 180.0}, 192)  # swap (nearly) full
    assert not tmpfs.reclaim_gave_up({"oom_events": 0, "swap_used_mb": 40.0}, 192)
    assert not tmpfs.reclaim_gave_up({"oom_events": None, "swap_used_mb": None}, 192)
    assert not tmpfs.reclaim_gave_up({"oom_events": 1, "swap_used_mb": None}, 192)  # unknown: not retried


@root
def test_an_oom_kill_with_swap_room_is_run_again_and_kept(study_scratch, monkeypatch):
    # cgroup v1 swappiness 0: the cgroup may not swap, so beyond the limit the
    # kernel OOM-kills with the swap file empty, as a reclaim that gives up does
    if memlimit.choose().hierarchy.version != 1:
        pytest.skip("needs cgroup v1 (memory.swappiness)")
    monkeypatch.setattr(memlimit, "V1_SWAPPINESS", 0)
    job = job_for(config("ci.yaml"), "tmpfs", 1.6)
    doc = tmpfs.run(job)
    assert doc["result"]["status"] == "error" and "OOM event(s)" in doc["result"]["reason"]
    r = doc["result"]["tools"]["worker"]
    assert r["status"] == "error" and "OOM event(s)" in r["reason"]
    assert len(r["reclaim_gave_up"]) == tmpfs.RECLAIM_ATTEMPTS - 1
    for gave_up in r["reclaim_gave_up"]:
        assert gave_up["memory"]["oom_events"] >= 1 and gave_up["memory"]["swap_used_mb"] < 1
        assert "OOM event(s)" in gave_up["reason"]
    assert r["memory"]["oom_events"] >= 1 and r["memory_limit"]["cgroup_swappiness"] == 0
    assert f"run again after {tmpfs.RECLAIM_ATTEMPTS - 1} OOM kill(s) with swap room" in tmpfs.summary(doc)


@root
@pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="a modelled disk needs /dev/fuse")
def test_tmpfs_beyond_the_limit_swaps_to_its_modelled_disk(study_scratch):
    """The quick config's tmpfs-hdd, with files of up to 1 MB (a fifth as many):
    its memory limit's swap file is on the modelled disk, the pages beyond the
    limit went there and came back from it (the model counts the reads)."""
    cfg = config("config.yaml")
    cfg["studies"]["tmpfs"]["size_max"] = 1_000_000
    job = next(j for j in tmpfs.jobs(cfg) if j["target"]["name"] == "tmpfs-hdd" and j["working_set"] > 1)
    doc = tmpfs.run(job)
    r = doc["result"]
    assert r["status"] == "ok", r["reason"]
    worker = r["tools"]["worker"]
    swap_file = worker["memory_limit"]["swap_file"]
    assert r["swap_on"] and swap_file.startswith(r["swap_on"] + "/swap/")
    assert worker["memory_limit"]["swap_backing_fs"] == "ext2/ext3"  # statfs: the ext family shares one magic
    assert worker["memory"]["swap_used_mb"] > 0.2 * job["memory_limit_mb"]
    model = doc["target_provenance"]["model"]
    at_attach, final = model["counts_at_attach"], model["counts"]
    # what was swapped out was read back through the model: its reads beyond the
    # attach's and the ext4's mount at least one per swapped MiB
    assert final["reads"] - at_attach["reads"] >= worker["memory"]["swap_used_mb"], (at_attach, final)
    assert {row["hardware"] for row in tmpfs.rows(doc)} == {"hdd-7200"}


def test_a_claims_points_are_its_sides_on_its_own_hardware():
    """The points a look measures for a claim (settle: claim_points): a claim on this machine's disk names
    "tmpfs", one on the modelled disk "tmpfs on hdd-7200", as the notebook groups the runs; each gets the
    points of its own hardware alone."""
    jobs = tmpfs.jobs(config("config.yaml"))
    beyond_over_inside = {"numerator": {"filesystem": "tmpfs", "working_set": 1.6},
                          "denominator": {"filesystem": "tmpfs", "working_set": 0.6}}
    assert tmpfs.claim_points(beyond_over_inside, jobs) == {("tmpfs", "ws1.6"), ("tmpfs", "ws0.6")}
    modelled = {side: {**s, "filesystem": "tmpfs on hdd-7200"} for side, s in beyond_over_inside.items()}
    assert tmpfs.claim_points(modelled, jobs) == {("tmpfs-hdd", "ws1.6"), ("tmpfs-hdd", "ws0.6")}
    ext3_over_tmpfs = {"numerator": {"filesystem": "ext3 on hdd-7200", "working_set": 1.6},
                       "denominator": {"filesystem": "tmpfs on hdd-7200", "working_set": 1.6}}
    assert tmpfs.claim_points(ext3_over_tmpfs, jobs) == {("ext3-hdd", "ws1.6"), ("tmpfs-hdd", "ws1.6")}
