"""The newcomer path: the preflight refuses before any mount, `make dry-run`
prints the plan, and a run killed by SIGKILL does not block the next one."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from boatload.provision.ledger import Ledger
from boatload.workflow import plan
from conftest import PAIRED_INTERFERENCE, ROOT, ours_left

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mounts, loop devices, cgroups)")


def snakemake(workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=workdir, capture_output=True,
                          text=True, env=env)


def write_config(workdir: Path, name: str, edit) -> str:
    config = yaml.safe_load((workdir / "config" / "ci.yaml").read_text())
    # Beside another test (tests/conftest.py's PAIRED_FILES): a run it disturbs is kept and marked, not
    # measured again (on a quiet machine nothing is redone either way; the e2e test checks that).
    config["interference"] = dict(PAIRED_INTERFERENCE)
    edit(config)
    (workdir / "config" / name).write_text(yaml.safe_dump(config))
    return f"config/{name}"


def refusal(out: subprocess.CompletedProcess) -> list[str]:
    """The preflight's problem lines."""
    assert out.returncode != 0, out.stderr[-2000:]
    assert "boatload: preflight found" in out.stderr, out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    return [line.strip()[2:] for line in out.stderr.splitlines() if line.startswith("  - ")]


@pytest.fixture
def small_scratch(tmp_path, monkeypatch):
    """A real 64 MiB tmpfs as the scratch directory."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "boatload-test", str(scratch)], check=True)
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(scratch))
    try:
        yield scratch
    finally:
        subprocess.run(["umount", str(scratch)], check=True)


@needs_root
def test_preflight_refuses_images_larger_than_the_free_scratch_space(workdir, small_scratch):
    def forest_on_ext4(config):
        config["studies"] = {"forest": {**config["studies"]["forest"], "targets": ["ext4"]}}

    configfile = write_config(workdir, "big.yaml", forest_on_ext4)
    out = snakemake(workdir, "--configfile", configfile)
    problems = refusal(out)
    assert len(problems) == 1, problems
    assert problems[0].startswith("targets.ext4.size_mb: "), problems
    assert "256 MiB" in problems[0] or "0.2 GiB" in problems[0]
    # Nothing was provisioned: the scratch tmpfs is as it was, nothing mounted below it, no run recorded.
    assert list(small_scratch.iterdir()) == []
    assert [m for m in ours_left(small_scratch) if f" {small_scratch} " not in m] == []
    assert not (workdir / "data" / "runs").exists()


@needs_root
def test_preflight_lists_every_problem_at_once_with_a_memory_limit_above_ram(workdir):
    ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
    free_mb = shutil.disk_usage(workdir).free >> 20

    def too_much(config):
        config["studies"] = {"degradation": {**config["studies"]["degradation"], "memory_limit_mb": ram_mb + 1024}}
        # Large enough for the degradation study's own check, larger than the disk.
        config["targets"]["ext4"]["size_mb"] = max(free_mb * 2, 4 * ram_mb + 8192)

    configfile = write_config(workdir, "ram.yaml", too_much)
    out = snakemake(workdir, "--configfile", configfile, "--dry-run")
    problems = refusal(out)
    fields = [p.split(":")[0] for p in problems]
    assert "studies.degradation.memory_limit_mb" in fields, problems
    assert "targets.ext4.size_mb" in fields, problems
    assert f"{ram_mb + 1024} MiB is not below this machine's RAM" in out.stderr


@needs_root
def test_preflight_names_a_missing_tool_and_its_package(workdir, tmp_path):
    # A PATH with every command of this machine but fio (sbin is searched anyway).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in os.environ["PATH"].split(":"):
        if not os.path.isdir(d) or d.endswith("sbin"):
            continue
        for name in os.listdir(d):
            if name != "fio" and not (bin_dir / name).exists():
                (bin_dir / name).symlink_to(Path(d) / name)
    env = {**os.environ, "PATH": str(bin_dir)}
    out = snakemake(workdir, "--configfile", "config/ci.yaml", "--dry-run", env=env)
    problems = refusal(out)
    assert problems == ["tool fio (Debian package fio, nixpkgs fio) is not installed; filecount need it"], problems


def test_dry_run_prints_the_plan(workdir):
    out = snakemake(workdir, "--configfile", "config/ci.yaml", "--dry-run")
    assert out.returncode == 0, out.stderr[-2000:]
    config = yaml.safe_load((workdir / "config" / "ci.yaml").read_text())
    runs = plan.runs(config)
    rows = {line.split()[0]: line.split() for line in out.stderr.splitlines() if re.match(r"^[a-z]+ +\d+ +\d+ ", line)}
    for name in plan.studies(config):
        count = sum(r.study == name for r in runs)
        assert rows[name][1:3] == [str(count), str(count)], rows[name]
    assert rows["all"][1:3] == [str(len(runs))] * 2
    assert re.search(r"^  scratch: .* free$", out.stderr, re.M)
    # The same plan as the rule the jobs come from.
    assert any(line.split() == ["measure", str(len(runs))] for line in out.stdout.splitlines()), out.stdout


# --------------------------------------------------------------------------
# a killed run


@pytest.fixture
def make_clone(workdir):
    """The workflow clone with the Makefile, the bootstrap and the worker's sources, and this
    checkout's synced environment, so that `make reproduce` runs there as a user runs it."""
    for name in ("Makefile", "scripts", "native", "src"):
        src, dst = ROOT / name, workdir / name
        shutil.copytree(src, dst, symlinks=True) if src.is_dir() else shutil.copy2(src, dst)
    # this checkout's environment, but make's stamps of its own: the clone's `make env` compiles the clone's
    # sources and touches its stamp, which must not tell this checkout's make that its own are compiled
    venv = workdir / ".venv"
    venv.mkdir()
    for entry in (ROOT / ".venv").iterdir():
        if entry.name.startswith("."):
            shutil.copy2(entry, venv / entry.name)
        else:
            (venv / entry.name).symlink_to(entry)
    return workdir


def small_config(config):
    """Two studies in well under a minute: loop images, a memory cgroup and a swap file among them."""
    studies = config["studies"]
    studies["forest"]["methods"] = ["worker-1t", "python", "tar"]
    config["studies"] = {name: studies[name] for name in ("forest", "tmpfs")}


def cgroups_made(clone: Path) -> list[str]:
    """The cgroups the clone's runs made (its scratch's ledger records each before making it); not
    every boatload-* cgroup on the machine: another clone's run may hold its own meanwhile."""
    return [r.path for r in Ledger(clone / "results" / "scratch").resources().values() if r.kind == "cgroup"]


def cgroups_left(clone: Path) -> list[str]:
    return [path for path in cgroups_made(clone) if Path(path).is_dir()]


def swaps_in(path: Path) -> list[str]:
    return [line for line in Path("/proc/swaps").read_text().splitlines() if str(path) in line]


def wait_for(what, timeout: float, proc: subprocess.Popen, log: Path):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = what()
        if found:
            return found
        assert proc.poll() is None, (f"the run ended (exit {proc.returncode}) before the moment to kill it:\n"
                                     f"{log.read_text()[-3000:]}")
        time.sleep(0.05)
    raise AssertionError("timed out waiting for a measurement")


@needs_root
@pytest.mark.e2e
def test_sigkill_mid_measurement_then_clean_mounts_then_reproduce_completes(make_clone, tmp_path):
    configfile = write_config(make_clone, "small.yaml", small_config)
    env = {**os.environ, "PATH": f"{make_clone / '.venv' / 'bin'}:{os.environ['PATH']}"}
    stamps = {p: p.stat().st_mtime_ns for p in (ROOT / ".venv").glob(".*") if p.is_file()}
    log = open(tmp_path / "first.log", "w")
    first = subprocess.Popen(["make", "reproduce", f"CONFIG={configfile}"], cwd=make_clone, env=env,
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    runs = make_clone / "data" / "runs"
    # Mid-measurement: one run done and the next one's target mounted.
    wait_for(lambda: any(runs.rglob("rep*.json")) and ours_left(make_clone), 300, first, tmp_path / "first.log")

    # A second run of the same clone meanwhile is refused, naming the first.
    second = subprocess.run(["make", "reproduce", f"CONFIG={configfile}"], cwd=make_clone, env=env,
                            capture_output=True, text=True)
    assert second.returncode != 0
    assert re.search(r"boatload: another run of this clone is in progress \((boatload reproduce|snakemake) pid \d+\)",
                     second.stderr), second.stderr[-2000:]

    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    time.sleep(0.5)  # the kernel reaps the group
    assert list((make_clone / ".snakemake" / "locks").glob("*.lock")), "the kill left no Snakemake lock to clear"

    clean = subprocess.run(["make", "clean-mounts"], cwd=make_clone, env=env, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stderr[-2000:]
    assert ours_left(make_clone) == []
    assert cgroups_left(make_clone) == []
    assert swaps_in(make_clone) == []

    again = subprocess.run(["make", "reproduce", f"CONFIG={configfile}"], cwd=make_clone, env=env,
                           capture_output=True, text=True, timeout=1200)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "boatload: removed a stale Snakemake lock" in again.stderr
    assert again.stderr.rstrip().splitlines()[-1].endswith(": results/paper/paper.pdf")
    assert (make_clone / "results" / "paper" / "paper.pdf").read_bytes().startswith(b"%PDF")
    assert re.search(r"^boatload: progress: (\d+)/\1 runs measured", again.stderr, re.M), again.stderr[-3000:]
    assert cgroups_made(make_clone), "the tmpfs study's memory limit made no cgroup"
    assert ours_left(make_clone) == [] and cgroups_left(make_clone) == [] and swaps_in(make_clone) == []
    # the clone's make stamped its own environment, not this checkout's (tests/test_env_bytecode.py reads those)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


@needs_root
@pytest.mark.e2e
def test_a_second_bare_snakemake_is_refused_naming_the_first(workdir, tmp_path):
    configfile = write_config(workdir, "small.yaml", small_config)
    log = tmp_path / "first.log"
    first = subprocess.Popen([sys.executable, "-m", "snakemake", "--configfile", configfile], cwd=workdir,
                             stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: ours_left(workdir), 300, first, log)
        second = snakemake(workdir, "--configfile", configfile)
        assert second.returncode != 0
        refused = [line for line in second.stderr.splitlines() if "another run of this clone" in line]
        assert refused == [f"boatload: another run of this clone is in progress (snakemake pid {first.pid}); "
                           "wait for it to end or stop it first"], second.stderr[-2000:]
        # A dry run beside it is fine: it takes no lock.
        assert snakemake(workdir, "--configfile", configfile, "-n").returncode == 0
    finally:
        os.killpg(first.pid, signal.SIGINT)
        first.wait(timeout=120)
    assert ours_left(workdir) == []


@needs_root
@pytest.mark.e2e
def test_a_full_scratch_fails_its_run_keeps_the_others_and_says_why(workdir, tmp_path, monkeypatch):
    # A real tmpfs scratch with room for 2,000 inodes: a plain-directory target
    # there fills it long before its 10,000 files; a tmpfs target is its own mount.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,nr_inodes=2000", "boatload-test", str(scratch)],
                   check=True)
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(scratch))
    try:
        def forest_on(*targets):
            def edit(config):
                config["targets"]["plain"] = {"kind": "dir", "fs": "dir"}
                # no scale curve: the run that fills the scratch is worker-1t's, and only it
                config["studies"] = {"forest": {**config["studies"]["forest"], "targets": list(targets),
                                                "methods": ["worker-1t"], "shape": [10, 1000], "scale_files": []}}
            return edit

        def reproduce(configfile, *snakemake_args):
            return subprocess.run([sys.executable, "-m", "boatload.workflow.cli", "reproduce", "--configfile", configfile,
                                   "--", *snakemake_args], cwd=workdir, capture_output=True, text=True, timeout=900)

        # The measurements only (no notebook or paper), to have results from before.
        first = reproduce(write_config(workdir, "roomy.yaml", forest_on("tmpfs")), "--until", "tidy")
        assert first.returncode == 0, first.stderr[-3000:]
        host = next((workdir / "data" / "runs").iterdir())
        earlier = {p: p.read_bytes() for p in (host / "forest").rglob("rep*.json")}
        assert earlier

        second = reproduce(write_config(workdir, "full.yaml", forest_on("tmpfs", "plain")))
        assert second.returncode != 0
        last = second.stderr.rstrip().splitlines()[-1]
        assert re.match(r"boatload: stopped after \S+: forest \S+/forest/plain/worker-1t/rep1\.json failed: "
                        r".*(No space left on device|ENOSPC).* \(kept in \S+\)$", last), last
        kept = Path(re.search(r"\(kept in (\S+)\)$", last).group(1))
        doc = yaml.safe_load((workdir / kept if not kept.is_absolute() else kept).read_text())
        assert doc["result"]["status"] == "error"
        assert 0 < doc["result"]["files"] < 10_000  # the files made before the scratch was full
        assert {p: p.read_bytes() for p in (host / "forest").rglob("rep*.json")} == earlier
        assert not (host / "forest" / "plain").exists()
        assert [m for m in ours_left(scratch) if f" {scratch} " not in m] == []
        plain_dirs = scratch / "dirs"  # the plain-directory target, torn down
        assert not plain_dirs.exists() or list(plain_dirs.iterdir()) == []
    finally:
        subprocess.run(["umount", str(scratch)], check=True)
