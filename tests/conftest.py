import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from workerlib import SHM

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "native" / "build" / "boatload-worker"
# What a workflow run needs from the clone; everything else it makes itself.
# The test files that neither measure nor time anything, attach no loop device, mount, cgroup or swap,
# open no port and keep every file under their own tmp_path (distinct per xdist worker): `make test`
# runs them on two workers (`pytest -m parallel -n 2`), then the rest alone (`-m "not parallel"`).
# A file not named here runs alone: add one only when all of the above holds for every test in it
# (tests/test_parallel_set.py checks the source of each for the obvious signs).
PARALLEL_FILES = {
    # arithmetic, statistics and the code's shape
    "test_audit.py", "test_intervals.py", "test_paired_intervals.py", "test_sequential.py", "test_stats.py",
    "test_verdict.py", "test_verdict_error_rates.py", "test_settle_record.py", "test_imports.py",
    "test_native_layers.py", "test_plan.py", "test_results.py", "test_config.py", "test_config_mutations.py",
    "test_devmodel.py",
    # notebooks, paper and blog on the committed fixtures (papermill, typst; nothing measured)
    "test_notebook_degradation.py", "test_notebook_filecount.py", "test_notebook_journal.py",
    "test_notebook_tmpfs.py", "test_notebook_setup.py", "test_notebooks.py", "test_paper.py",
    "test_paper_layout.py", "test_paper_text.py", "test_paper_own_hardware.py", "test_blog.py",
    "test_bench_verdicts.py",
    # the worker's and the baselines' outputs checked for content only, in their own temporary directories
    "test_worker_cli.py", "test_worker_tree.py", "test_creators.py",
}
WORKFLOW_FILES = ["Snakefile", "profiles", "workflow", "config", "notebooks", "paper", "data/reference",
                  "data/devmodels.yaml", "uv.lock", "pyproject.toml"]


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in PARALLEL_FILES:
            item.add_marker(pytest.mark.parallel)


@pytest.fixture(scope="session")
def forest_fixture_run(tmp_path_factory) -> dict[str, Path]:
    """The forest notebook run once per session on the fixture
    (tests/fixtures/make_fixtures.py): {"results", "executed", "forest",
    "provenance"}. Tests that only read its results share it; a test that
    changes them works on a copy."""
    from notebook_checks import load_fixtures

    return load_fixtures("fixtures").run_forest_notebook(tmp_path_factory.mktemp("forest-fixture"), ROOT)


@pytest.fixture(scope="session")
def journal_fixture_run(tmp_path_factory) -> dict[str, Path]:
    """The journal notebook run once per session on its fixture
    (tests/fixtures/make_journal.py: this machine's disk and the modelled
    raid-hdd): {"results", "executed", "journal", "provenance"}, read only."""
    from notebook_checks import load_fixtures

    return load_fixtures("journal").run_notebook(tmp_path_factory.mktemp("journal-fixture"), ROOT)


@pytest.fixture(scope="session")
def worker() -> Path:
    if not WORKER.exists():
        subprocess.run(["make", "-C", str(ROOT / "native")], check=True, capture_output=True)
    return WORKER


@pytest.fixture
def shm_dir(tmp_path):
    """A fresh directory on tmpfs (/dev/shm) when there is one, else under tmp_path."""
    d = Path(tempfile.mkdtemp(prefix="boatload-test.", dir=SHM or tmp_path))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def ours_left(scratch: Path) -> list[str]:
    """Mounts and loop devices that point into `scratch`: there must be none after a run."""
    left = [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(scratch) in line]
    if shutil.which("losetup"):
        loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
        left += [line for line in loops.splitlines() if str(scratch) in line]
    return left


@pytest.fixture
def study_scratch(tmp_path, worker, monkeypatch) -> Path:
    """The scratch directory of the studies a test runs (`<tmp>/scratch`, with
    the worker built for the tests); nothing may be left mounted or attached
    in it. (targetlib's `scratch` is the provisioning tests' own.)"""
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("BOATLOAD_WORKER", str(worker))
    yield tmp_path / "scratch"
    assert ours_left(tmp_path / "scratch") == []


@pytest.fixture
def workdir(tmp_path, worker, monkeypatch) -> Path:
    """A copy of the workflow in a temporary clone, with its own scratch and results."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in WORKFLOW_FILES:
        src = ROOT / name
        dst = clone / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    monkeypatch.setenv("BOATLOAD_ROOT", str(clone))
    monkeypatch.setenv("BOATLOAD_WORKER", str(worker))
    monkeypatch.setenv("BOATLOAD_DEVMODEL_DIR", str(worker.parent))  # the device-model filter, built beside it
    monkeypatch.setenv("BOATLOAD_SCRATCH", str(clone / "results" / "scratch"))
    yield clone
    assert ours_left(clone) == []
