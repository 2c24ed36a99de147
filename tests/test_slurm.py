"""The fleet on a real SLURM cluster (scripts/slurm-cluster.sh: Debian's munge,
slurmctld and two slurmd, node1 and node2, each in a UTS namespace of its own
on this machine), driven through profiles/slurm as `make reproduce
PROFILE=slurm` drives it.

CI runs journal of config/ci.yaml (loop images, an XFS log inside, with
and without flushes, and outside, in /dev/shm) on both nodes, kills node2 (its slurmd and every process
of its jobs) in the middle of its measurements, brings it back and completes
the fleet; BOATLOAD_FULL=1 also runs all of ci.yaml on both nodes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import FULL, PAIRED_INTERFERENCE, ROOT
from notebook_checks import pdf_text

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NODES = ["node1", "node2"]
SCRIPT = ROOT / "scripts" / "slurm-cluster.sh"


def _debian_root() -> str | None:
    if os.geteuid() != 0:
        return "the test cluster needs root (munged, slurmd, /etc/slurm)"
    if not shutil.which("apt-get") and not shutil.which("slurmctld"):
        return "no apt-get to install Debian's slurm packages"
    if not Path("/sys/fs/cgroup").is_dir():
        return "no cgroup file system"
    return None


pytestmark.append(pytest.mark.skipif(_debian_root() is not None, reason=str(_debian_root())))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not alive
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _cluster(env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout)


def _pids(status: str) -> dict[str, int]:
    out = {}
    for line in status.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in {"munged", "slurmctld"} | {f"slurmd-{n}" for n in NODES} and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The test cluster, up for the module; down at the end, even on failure, every daemon by its pid."""
    state = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "BOATLOAD_SLURM_DIR": str(state)}
    started: dict[str, int] = {}
    try:
        up = _cluster(env, "up", str(len(NODES)))
        started.update(_pids(_cluster(env, "status").stdout))
        assert up.returncode == 0, up.stdout + up.stderr
        assert set(started) == {"munged", "slurmctld", "slurmd-node1", "slurmd-node2"}, started
        yield {"env": env, "state": state, "pids": started}
    finally:
        started.update(_pids(_cluster(env, "status").stdout))  # a node started again by a test
        down = _cluster(env, "down")
        left = {name: pid for name, pid in started.items() if _alive(pid)}
        for pid in left.values():  # never leave a daemon behind, whatever the script did
            os.kill(pid, 9)
        assert down.returncode == 0, down.stdout + down.stderr
        assert left == {}, f"daemons still alive after down: {left}"


def _leftovers(scratch: Path) -> list[str]:
    """Mounts, loop devices, swaps, cgroups and log images of runs in `scratch` (as kill_storm.leftovers)."""
    scratch = scratch.resolve()
    shm = Path("/dev/shm") / f"boatload-{hashlib.sha256(os.fsencode(str(scratch))).hexdigest()[:16]}"
    found = [f"mount {line.split()[4]}" for line in Path("/proc/self/mountinfo").read_text().splitlines()
             if str(scratch) in line.split()[4]]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.splitlines()
    found += [f"loop {line}" for line in loops if str(scratch) in line or str(shm) in line]
    found += [f"swap {line.split()[0]}" for line in Path("/proc/swaps").read_text().splitlines()[1:] if str(scratch) in line]
    ledger = scratch / "ledger.jsonl"
    if ledger.is_file():
        for line in ledger.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("op") == "create" and entry.get("kind") == "cgroup" and Path(str(entry.get("path"))).is_dir():
                found.append(f"cgroup {entry['path']}")
    found += [f"log images {p}" for p in shm.glob("*")] if shm.is_dir() else []
    return sorted(set(found))


def _fleet_config(workdir: Path, studies: list[str] | None, targets: dict | None = None,
                  settings: dict | None = None) -> str:
    config = yaml.safe_load((workdir / "config" / "ci.yaml").read_text())
    if studies is not None:
        config["studies"] = {name: config["studies"][name] for name in studies}
    for name, chosen in (targets or {}).items():
        study = config["studies"][name]
        study["targets"] = chosen
        # a target's own settings go with it (the config check names a per_target entry of no target)
        if study.get("per_target"):
            study["per_target"] = {t: v for t, v in study["per_target"].items() if t in chosen}
    for name, fields in (settings or {}).items():
        config["studies"][name].update(fields)
    # Both nodes are this machine's two cores: each disturbs the other, and a
    # redo would only triple the time (the record still says so).
    config["interference"] = dict(PAIRED_INTERFERENCE)
    config["cluster"] = {"partition": "boatload", "hosts": NODES,
                         "scratch": str(workdir / "results" / "scratch" / "{node}")}
    (workdir / "config" / "fleet.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return "config/fleet.yaml"


def _reproduce(workdir: Path, env: dict, configfile: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "boatload.workflow.cli", "reproduce", "--configfile", configfile, "--profile", "slurm"],
        cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )


def _env(workdir: Path, cluster: dict) -> dict:
    # the jobs' Snakemake and `boatload run` come from this environment (sbatch --export=ALL)
    return {**os.environ, "BOATLOAD_SLURM_DIR": cluster["env"]["BOATLOAD_SLURM_DIR"],
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "BOATLOAD_ROOT": str(workdir)}


def _finish(proc: subprocess.Popen, timeout: float, log: Path) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 2)
        out, _ = proc.communicate(timeout=60)
        log.write_text(out)
        pytest.fail(f"the fleet run did not end within {timeout:.0f} s:\n{out[-6000:]}")
    log.write_text(out)
    return out


@pytest.fixture
def fleet_workdir(workdir):
    """The clone; whatever a test leaves on a node's scratch (a killed node's mounts) is undone
    before the clone's own check that nothing is left."""
    yield workdir
    for node in NODES:
        scratch = workdir / "results" / "scratch" / node
        if scratch.is_dir() and _leftovers(scratch):
            subprocess.run([sys.executable, "-m", "boatload.workflow.cli", "cleanup", "--force", "--scratch", str(scratch)],
                           capture_output=True, text=True, timeout=120)


def _assert_fleet_complete(workdir: Path, names: list[str]) -> None:
    """Every node's tidy tables, each raw run measured on its node, the fleet summary,
    the paper's fleet section naming each node, the blog's, and nothing left on any node."""
    for node in NODES:
        runs = workdir / "data" / "runs" / node
        for name in names:
            table = pl.read_parquet(runs / f"{name}.parquet")
            assert table.height > 0, (node, name)
            assert (table["status"] == "ok").all(), (node, name, table.filter(pl.col("status") != "ok"))
        # each raw result was measured on its node: the job's hostname is the node's
        raw = [json.loads(p.read_text()) for p in runs.rglob("rep*.json") if "archive" not in p.parts]
        assert raw and {d["machine"]["host"] for d in raw} == {node}, (node, {d["machine"]["host"] for d in raw})
        assert _leftovers(workdir / "results" / "scratch" / node) == []
    # the other node's notebooks and provenance, and the fleet summary
    assert json.loads((workdir / "results" / "hosts" / "node2" / "provenance.json").read_text())["host"] == "node2"
    fleet = json.loads((workdir / "results" / "tables" / "fleet-summary.json").read_text())
    assert fleet["hosts"] == NODES and fleet["claims"]
    assert all(set(c["hosts"]) == set(NODES) for c in fleet["claims"])
    assert fleet["failed"] == {"node1": 0, "node2": 0}
    text = pdf_text(workdir / "results" / "paper" / "paper.pdf")
    assert "The fleet" in text and "Verdicts by host" in text
    for node in NODES:
        assert node in text
    page = (workdir / "results" / "blog" / f"{names[0]}.html").read_text()
    assert "Across the fleet" in page and all(node in page for node in NODES)


@pytest.mark.skipif(not FULL, reason="all of ci.yaml on the fleet: BOATLOAD_FULL=1 (CI's share is the next test)")
def test_fleet_measures_all_of_ci_on_every_node(fleet_workdir, cluster):
    workdir = fleet_workdir
    configfile = _fleet_config(workdir, None)
    names = list(yaml.safe_load((workdir / configfile).read_text())["studies"])
    started = time.monotonic()
    proc = _reproduce(workdir, _env(workdir, cluster), configfile)
    out = _finish(proc, timeout=1800, log=workdir / "reproduce-1.log")
    assert proc.returncode == 0, out[-8000:]
    print(f"all of ci.yaml on {len(NODES)} nodes: {time.monotonic() - started:.0f} s")
    _assert_fleet_complete(workdir, names)
    # Nothing to do the second time (the fleet's chains and groups are stable).
    again = _reproduce(workdir, _env(workdir, cluster), configfile)
    out = _finish(again, timeout=300, log=workdir / "reproduce-2.log")
    assert again.returncode == 0, out[-4000:]
    assert "Nothing to be done" in out, out[-3000:]


def test_a_node_dies_mid_run_is_marked_comes_back_and_the_fleet_completes(fleet_workdir, cluster):
    """CI's fleet test: journal (XFS, its log inside with and without flushes and outside, in /dev/shm) on two nodes;
    node2 dies mid-run, node1 finishes and node2's runs are marked; node2 comes back, `make
    clean-mounts PROFILE=slurm` undoes what its killed run left, and the next run measures only
    node2's missing runs and makes the paper with its fleet section."""
    workdir = fleet_workdir
    # three runs a node: node2 dies after its first, busy with its second or third
    configfile = _fleet_config(workdir, ["journal"], targets={
        "journal": ["xfs-log-internal", "xfs-log-internal-noflush", "xfs-log-external"]},
        settings={"journal": {"durability": ["none"]}})  # the original create only: three runs a node
    env = _env(workdir, cluster)
    started = time.monotonic()
    proc = _reproduce(workdir, env, configfile)
    node2 = workdir / "data" / "runs" / "node2"
    scratch2 = workdir / "results" / "scratch" / "node2"
    # node2 dies once it has measured one run and is busy with the next
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        done = [p for p in node2.rglob("rep*.json") if "archive" not in p.parts] if node2.is_dir() else []
        if done and _leftovers(scratch2):
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before node2 could be killed:\n" + proc.stdout.read()[-6000:]
    killed = _cluster(cluster["env"], "kill-node", "node2")
    assert killed.returncode == 0, killed.stderr
    killed_at = time.monotonic()
    out = _finish(proc, timeout=300, log=workdir / "reproduce-kill.log")
    ended = time.monotonic() - killed_at
    print(f"node2 killed {killed_at - started:.0f} s into the run; the workflow ended {ended:.0f} s later")
    assert proc.returncode != 0, out[-6000:]
    assert ended < 240, out[-6000:]

    # node1 finished everything, tidy table included
    config = yaml.safe_load((workdir / configfile).read_text())
    from boatload.workflow import plan
    from boatload.studies.config import validate

    runs = plan.runs(validate(config))
    node1 = workdir / "data" / "runs" / "node1"
    assert all(Path(r.raw(str(node1))).is_file() for r in runs), out[-6000:]
    assert pl.read_parquet(node1 / "journal.parquet")["target"].n_unique() == len(runs)
    # node2's runs: measured before it died, or recorded as failed
    measured = [r for r in runs if Path(r.raw(str(node2))).is_file()]
    failed = [json.loads(p.read_text()) for p in (node2 / "archive" / "failed").rglob("*.json")]
    assert len(measured) + len(failed) == len(runs), (len(measured), failed)
    assert failed and all(d["node"] == "node2" and "node2" in d["result"]["reason"] for d in failed)
    assert "node2: " in out and "recorded as failed" in out, out[-4000:]
    print("\n".join(line for line in out.splitlines() if line.startswith("boatload: ")))

    # The node comes back; `make clean-mounts PROFILE=slurm` undoes what its killed run left there.
    back = _cluster(cluster["env"], "start-node", "node2")
    assert back.returncode == 0, back.stderr
    left = _leftovers(scratch2)  # what the killed run had mounted (almost always something)
    clean = subprocess.run([sys.executable, "-m", "boatload.workflow.cli", "cleanup", "--force", "--profile", "slurm",
                            "--configfile", configfile], cwd=workdir, env=env, capture_output=True, text=True,
                           timeout=300)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    for node in NODES:
        assert _leftovers(workdir / "results" / "scratch" / node) == [], clean.stdout
    if any(item.startswith("mount") for item in left):
        assert "node2: " in clean.stdout and "unmounted" in clean.stdout, clean.stdout

    # The next run measures node2's missing runs only, and the fleet is complete.
    node1_runs = {p: p.stat().st_mtime_ns for p in node1.rglob("rep*.json") if "archive" not in p.parts}
    again = _reproduce(workdir, env, configfile)
    out = _finish(again, timeout=300, log=workdir / "reproduce-after.log")
    assert again.returncode == 0, out[-8000:]
    assert {p: p.stat().st_mtime_ns for p in node1_runs} == node1_runs
    print(f"the whole test: {time.monotonic() - started:.0f} s")
    _assert_fleet_complete(workdir, ["journal"])


def test_scancel_of_a_measurement_tears_its_target_down(fleet_workdir, cluster):
    """`scancel` sends SIGTERM to every process of the job (SIGKILL only KillWait = 30 s
    later): `boatload run` unmounts and detaches its target long before that, and publishes nothing."""
    import shlex

    from boatload.workflow import plan
    from boatload.studies.config import validate

    workdir = fleet_workdir
    config = yaml.safe_load((workdir / "config" / "ci.yaml").read_text())
    config["targets"]["ext4"]["size_mb"] = 256
    # 50,000 files one touch at a time: far longer than the test waits
    # no scale curve, so the first run is the slow one
    config["studies"] = {"forest": {**config["studies"]["forest"], "shape": [50, 1000], "methods": ["touch-each"],
                                    "targets": ["ext4"], "time_cap_s": 120, "scale_files": []}}
    run = plan.runs(validate(config))[0]
    scratch = workdir / "results" / "scratch" / "node1"
    runs_dir = workdir / "data" / "runs" / "node1"
    out = Path(run.raw(str(runs_dir)))
    command = (f"BOATLOAD_SCRATCH={shlex.quote(str(scratch))} boatload run forest "
               f"--job {shlex.quote(json.dumps(run.job))} --out {shlex.quote(str(out))} --runs-dir {shlex.quote(str(runs_dir))}")
    env = _env(workdir, cluster)
    submit = subprocess.run(["sbatch", "--parsable", "--nodelist=node1", "--partition=boatload", f"--chdir={workdir}",
                             f"--output={workdir / 'scancel-job.log'}", "--wrap", command],
                            env=env, capture_output=True, text=True, timeout=30)
    assert submit.returncode == 0, submit.stderr
    job = submit.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 90
        while not any(x.startswith("mount") for x in _leftovers(scratch)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert any(x.startswith("mount") for x in _leftovers(scratch)), (workdir / "scancel-job.log").read_text()[-3000:]
        time.sleep(1)  # the worker is making files now
        cancelled = time.monotonic()
        assert subprocess.run(["scancel", job], env=env, timeout=30).returncode == 0
        while _leftovers(scratch) and time.monotonic() - cancelled < 25:
            time.sleep(0.2)
        took = time.monotonic() - cancelled
        assert _leftovers(scratch) == [], (workdir / "scancel-job.log").read_text()[-3000:]
        print(f"scancel: target torn down {took:.1f} s after the cancel")
        assert took < 25  # SIGTERM did it, not the SIGKILL 30 s later
        assert not out.exists()
    finally:
        subprocess.run(["scancel", job], env=env, timeout=30)
