"""bench/randio.py's job, run for real by both tools at a small scale: the
comparison is only worth something if fio runs as many jobs as the worker
has threads, on the files the worker laid out, with the same read share."""

import os
import shutil
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from randio import READ_PCT, Job  # noqa: E402

import benchlib as bl  # noqa: E402
from boatload.measure.peers import fio as fio_peer  # noqa: E402

pytestmark = pytest.mark.skipif(not shutil.which("fio"), reason="fio is not installed")


def read_share_fits(reads: int, writes: int) -> bool:
    """The read share within 5 standard deviations of a binomial share of
    reads + writes draws at READ_PCT (7.2 points at 1,000 I/Os, 0.72 at 100,000)."""
    n, p = reads + writes, READ_PCT / 100
    return abs(reads / n - p) <= 5 * (p * (1 - p) / n) ** 0.5


def test_worker_and_fio_run_the_same_job_on_the_same_files(tmp_path, worker):
    job = Job(files=6, file_size=1 << 20, duration=0.5, direct=0, threads=8)
    job.prepare(worker, tmp_path)
    laid_out = sorted(p.name for p in tmp_path.iterdir())
    assert laid_out == job.names()
    assert {p.stat().st_size for p in tmp_path.iterdir()} == {job.file_size}

    run = bl.run_timed(job.worker_argv(worker, tmp_path))
    reads, writes, secs = job.parse("worker", run.out)
    assert 0.4 <= secs <= 2.0
    assert reads + writes > 1000
    assert read_share_fits(reads, writes)

    run = bl.run_timed(job.fio_argv(tmp_path))
    reads, writes, secs = job.parse("fio", run.out)
    assert 0.4 <= secs <= 2.0
    assert reads + writes > 1000
    assert read_share_fits(reads, writes)
    # the same command without --group_reporting: each of the 8 jobs did I/O
    # (with --filename_format and --nrfiles, fio 3.33 ran only the first)
    per_job = bl.run_timed([a for a in job.fio_argv(tmp_path) if a != "--group_reporting"])
    jobs = bl.json_doc(per_job.out)["jobs"]
    assert len(jobs) == 8
    assert all(j["read"]["total_ios"] + j["write"]["total_ios"] > 0 for j in jobs)
    # fio measured each I/O once, as the worker does: completion latency with
    # percentiles, no total latency
    doc = bl.json_doc(run.out)["jobs"][0]
    assert doc["read"]["clat_ns"]["N"] == reads and doc["read"]["lat_ns"]["N"] == 0
    assert fio_peer.parse_randrw(bl.json_doc(run.out))["lat_p99_us"] > 0
    # fio+lat (information): fio's default, both statistics
    stock = bl.run_timed(job.fio_argv(tmp_path, default_latency=True))
    reads, writes, secs = job.parse("fio", stock.out)
    doc = bl.json_doc(stock.out)["jobs"][0]
    assert doc["read"]["clat_ns"]["N"] == doc["read"]["lat_ns"]["N"] == reads > 0
    # fio wrote nothing of its own next to them
    assert sorted(p.name for p in tmp_path.iterdir()) == laid_out


def test_fio_parse_rejects_a_run_with_fewer_jobs(tmp_path):
    job = Job(files=2, file_size=1 << 16, duration=0.1, direct=0, threads=8)
    out = '{"jobs": [{"error": 0, "job options": {"numjobs": "1"}, "read": {}, "write": {}}]}'
    with pytest.raises(bl.RunError, match="ran 1 jobs, expected 8"):
        job.parse("fio", out)


def test_profile_sorts_perf_samples_into_kernel_own_code_libc_vdso():
    from randio_profile import samples_by_part

    # `perf report --sort dso --show-nr-samples --stdio -g none` of an fio run
    report = """# Samples: 60K of event 'cpu-clock:pppH'
#
# Overhead       Samples  Shared Object
# ........  ............  ...................
#
    86.31%         51624  [kernel.kallsyms]
    10.00%          5981  fio
     2.85%          1702  libc.so.6
     0.74%           445  [vdso]
     0.09%            54  ld-linux-x86-64.so.2
     0.01%             3  libceph-common.so.2
"""
    assert samples_by_part(report, "fio") == {"kernel": 51624, "own code": 5981, "libc": 1702, "vdso": 445,
                                              "other": 57}
    # the worker's own binary is the tool's, not "other"
    assert samples_by_part(report.replace("fio", "boatload-worker"), "boatload-worker")["own code"] == 5981
    with pytest.raises(bl.RunError, match="no samples"):
        samples_by_part("# Samples: 0\n", "fio")


# bonnie++ 2.00a's CSV line for -n 2:0:0:2 (2 x 1024 empty files in 2 directories):
# field 24 empty, the directories in 25, "+++++" for a test under 0.5 s
BONNIE_LINE = ("1.98,2.00a,box,1,1700000000,,,,,,,,,,,,,,,,,2,0,,,2,"
               "+++++,+++,31000,12,+++++,+++,15000,9,45000,40,+++++,+++,,,,,,,12ms,350us,87us,2s,1.5ms,400us")


def test_bonnie_rates_are_the_peers_parse():
    rates = bl.bonnie_rates(BONNIE_LINE + "\n", 2, 2)
    assert rates == {"seq_create": None, "seq_stat": 31000, "seq_del": None,
                     "ran_create": 15000, "ran_stat": 45000, "ran_del": None}
    with pytest.raises(bl.RunError, match="expected 3x1024 in 3"):
        bl.bonnie_rates(BONNIE_LINE, 3, 3)
    with pytest.raises(bl.RunError, match="no CSV line"):
        bl.bonnie_rates("", 2, 2)
    with pytest.raises(bl.RunError, match="format version"):
        bl.bonnie_rates("1.03d,box,,,\n", 2, 2)


@pytest.mark.skipif(not shutil.which("bonnie++", path="/usr/local/sbin:/usr/sbin:/sbin:" + (os.environ.get("PATH") or ""))
                    or os.geteuid() != 0, reason="needs bonnie++ and root (-u root)")
def test_bonnie_rates_of_a_real_run(tmp_path):
    from boatload.measure.peers import bonnie

    run = bl.run_timed(bonnie.argv(tmp_path, 1, 0, 2))
    rates = bl.bonnie_rates(run.out, 1, 2)
    assert list(rates) == ["seq_create", "seq_stat", "seq_del", "ran_create", "ran_stat", "ran_del"]
    assert all(r is None or r > 0 for r in rates.values())
    assert list(tmp_path.iterdir()) == []  # bonnie++ removed what it made
