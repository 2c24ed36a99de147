import functools
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from workerlib import SHM

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
#: BOATLOAD_FULL=1: every slow test (pytest's `slow` mark) at its full count, and both SLOW_HALVES. Without it
#: (`make test`, CI) each runs a reduced form or a smaller count, and of SLOW_HALVES the half the commit picks.
FULL = os.environ.get("BOATLOAD_FULL") == "1"
WORKER = ROOT / "native" / "build" / "boatload-worker"
# `make test` runs the PARALLEL_FILES and the PAIRED_FILES on three workers (`pytest -m "parallel or paired"
# -n 3 --dist loadgroup`, the longest groups first: LONGEST_FIRST), then the ALONE_FILES one test at a time
# (`pytest -m alone`). A parallel file measures and times nothing, a paired one measures runs but times
# none (its redo off), and each keeps everything it makes its own: files under its tmp_path, its own loop
# devices, mounts, cgroups (named for their scratch directory, so that no other's cleanup takes them) and
# scratch directory, a free port. What two parallel tests cannot each have their own (the
# kernel's swap space) is an xdist group in SHARED_GROUPS: its tests never run at the same time.
# (Every parallel or paired file is a group of its own otherwise: see group_of; SHARED_TESTS puts only some
# tests of a file into a shared group.)
# Every test file is in exactly one of the three sets; tests/test_parallel_set.py checks that, and that
# the source of each alone file shows what it measures or times, that of each parallel file does not, and
# that each paired file turns the interference monitor's redo off.
PARALLEL_FILES = {
    # arithmetic, statistics and the code's shape
    "test_audit.py", "test_intervals.py", "test_paired_intervals.py", "test_sequential.py", "test_stats.py",
    "test_verdict.py", "test_verdict_error_rates.py", "test_settle_record.py", "test_imports.py", "test_layers.py",
    "test_native_layers.py", "test_plan.py", "test_results.py", "test_config.py", "test_config_mutations.py",
    "test_devmodel.py", "test_spread.py", "test_statements.py", "test_parallel_set.py", "test_nix.py",
    "test_fiocheck_turns.py", "test_steal.py", "test_bench_steal.py",
    "test_bootstrap.py", "test_env_bytecode.py",
    # notebooks, paper, blog and compare on the committed fixtures (papermill, typst, chromium; nothing measured)
    "test_notebook_degradation.py", "test_notebook_filecount.py", "test_notebook_journal.py",
    "test_notebook_tmpfs.py", "test_notebook_setup.py", "test_notebooks.py", "test_paper.py",
    "test_paper_layout.py", "test_paper_text.py", "test_paper_own_hardware.py", "test_paper_noise.py",
    "test_blog.py", "test_blog_chromium.py", "test_bench_verdicts.py", "test_bench_quickrun.py",
    "test_bench_fragility.py", "test_bench_known_answers.py", "test_compare.py", "test_compare_chromium.py",
    "test_jupyter_server.py",
    # the worker's and the baselines' outputs checked for content only, in their own temporary directories
    "test_worker_cli.py", "test_worker_tree.py", "test_worker_split.py", "test_creators.py",
    # provisioning: each test attaches its own loop devices and mounts in its own scratch directory
    # (tests/targetlib.py's `scratch`), makes its own cgroups (named by pid) and times nothing
    "test_targets.py", "test_targets_faults.py", "test_mount_targets.py", "test_device_guard.py",
    "test_device_targets.py", "test_devices_cli.py", "test_memlimit.py",
}
# Each why names what the file measures or times: beside another test it would be disturbed or disturb.
ALONE_FILES = {
    # the quiet machine: they assert nothing disturbed a run, or watch the machine's load
    "test_e2e.py": "the whole ci workflow, asserting no run was disturbed or redone",
    "test_interference.py": "the interference monitor, against hogs it starts",
    "test_machineload.py": "waits for a quiet machine beside a hog it starts",
    "test_shield.py": "the CPU share a shielded process gets",
    "test_drop_caches.py": "drops the machine's page cache and measures the cold reads",
    # device models: the stack's cost is measured and a model cheaper than it is refused
    "test_devmodel_stack.py": "service times through the nbdkit stack against the model",
    "test_devmodel_targets.py": "modelled targets, whose stack cost is calibrated under load",
    "test_devmodel_runs.py": "runs on modelled disks",
    "test_calibration_reuse.py": "the stack cost's calibration, measured and reused",
    "test_compare_known.py": "a model twice as slow measured as slower by what it predicts",
    "test_target_up_modelled.py": "modelled targets brought up, their stack cost calibrated",
    "test_tmpfs_swap_disk.py": "swap on a modelled disk, its stack cost calibrated",
    "test_tmpfs_model_requests.py": "a study measured on a modelled disk",
    # studies and workflows measured (the interference monitor redoes runs others disturb)
    "test_study_calibration.py": "the calibration study measured",
    "test_study_degradation.py": "the degradation study measured",
    "test_study_filecount.py": "the filecount study measured",
    "test_study_journal.py": "the journal study measured",
    "test_study_tmpfs.py": "the tmpfs study measured in a memory limit",
    "test_studies_on_devices.py": "studies measured on device targets",
    "test_signals_anywhere.py": "signals timed to land in each step of a measured run",
    # timed assertions on the worker, the runner and the benchmarks
    "test_worker.py": "how soon a signal stops the worker",
    "test_worker_io.py": "a timed phase lasting its duration",
    "test_runner.py": "the runner's wall time",
    "test_bench.py": "bench/randio.py measured by the worker and fio",
    "test_bench_ops.py": "bench/ops.py and scale.py measured",
}
# Files whose tests measure runs but time none and assert nothing of how quiet the machine was: what they
# check (nothing left behind after a signal, a refusal, a node's death and its runs' record, the next run
# completing, what a run made and published) holds beside another test, and each keeps its clone, scratch
# directory, loop devices, mounts, cgroups (its ledger's), Debian root and SLURM cluster its own. Each turns
# the interference monitor's redo and the shield off in every config it runs (PAIRED_INTERFERENCE). Each
# why says what the file checks, and why another test beside it cannot change that.
PAIRED_FILES = {
    "test_slurm.py": "the fleet through SLURM (this machine's only cluster), a node killed mid-run: its runs "
                     "recorded as failed, cleaned up and measured again; a cancelled job's teardown",
    "test_kill_storm.py": "signals at random moments in measured runs leave nothing of its clone behind and the "
                          "next run completes",
    "test_reproduce.py": "the preflight's refusals, the dry-run plan, a second run of a clone refused, a full "
                         "scratch failing one run and keeping the others, a run after a SIGKILL completing: "
                         "its clone's mounts, ledger's cgroups and swaps checked",
    "test_fresh_machine.py": "make reproduce in a fresh Debian root: what bootstrap installed, the paper, the "
                             "runs, and nothing of the run's own left on the host (loop devices, swaps and mounts "
                             "of its root, the cgroups its ledger records)",
    "test_budget.py": "a time budget of 3 s, spent by the first rounds (the sooner beside another test): no "
                      "look's runs chosen, the paper made, a second run doing nothing",
    "test_settle.py": "settle's looks: which points get runs, their rep numbers, each carried claim's look and "
                      "level in the summary and the paper (a native program against a Python interpreter's start: "
                      "decided at 4 runs a side whatever the neighbour)",
    "test_add_study.py": "a sixth study's four files and config line: its runs' rows and columns, its notebook, "
                         "paper section, audit lines and blog page (its memory limit has no swap)",
}
# What a paired file's configs set under `interference`: no redo (a run the neighbour disturbs is kept and
# marked, never measured again) and no shield: a shielded run has 256 times the CPU weight of every other
# process (boatload.provision.shield) and stalls the tests beside it for as long as it computes (a test of
# 3 s took 42 s beside a shielded loop on both cores). tests/test_shield.py checks the shield, its removal
# after a SIGKILL included.
PAIRED_INTERFERENCE = {"redo": 0, "shield": False}
# xdist groups of parallel or paired files whose tests share one thing of the machine's.
SHARED_GROUPS = {
    # swapon: pages of any process may go to any active swap area (the kill storm's, reproduce's and the
    # fresh machine's runs include the tmpfs study's, in a memory limit with a swap file)
    "test_memlimit.py": "swap", "test_device_guard.py": "swap", "test_kill_storm.py": "swap",
    "test_fresh_machine.py": "swap",  # (and two of test_reproduce's: SHARED_TESTS)
    # BOATLOAD_FULL=1: the fleet and the sixth study also measure all of ci.yaml, the tmpfs study included
    **({"test_slurm.py": "swap", "test_add_study.py": "swap"} if FULL else {}),
}


# The groups that take longest, in that order: the session ends when the last group to start does, so they
# start first (their durations: bench/README.md, "One session on three workers for all that needs no quiet
# machine"). Every other group comes after them, those with more tests first.
LONGEST_FIRST = ["swap", "test_slurm.py", "test_config_mutations.py", "test_settle.py", "test_budget.py",
                 "test_reproduce.py", "test_add_study.py", "test_jupyter_server.py", "test_notebook_tmpfs.py"]


# Tests of a paired file that share a group while the file's other tests need not: those keep the file's own
# group (and may run beside the shared group's tests). Only for a file without module-scoped fixtures.
SHARED_TESTS = {
    # its killed run and its refused second Snakemake run the tmpfs study (small_config); its preflight
    # refusals, its dry run and its full scratch (forest alone) turn no swap on
    "test_reproduce.py::test_sigkill_mid_measurement_then_clean_mounts_then_reproduce_completes": "swap",
    "test_reproduce.py::test_a_second_bare_snakemake_is_refused_naming_the_first": "swap",
}


def group_of(name: str) -> str:
    """The xdist group of a parallel or paired file's tests: its shared group, else the file itself, so that its
    module-scoped fixtures (a notebook or the paper run once for the file) are made on one worker, once."""
    return SHARED_GROUPS.get(name, name)


# The slowest whole checks, in two halves of about the same time (their seconds in a CI run: bench/README.md
# "CI nearer 15 minutes: the slowest checks in two halves"; those added since, in their commit's message and
# beside them). Without BOATLOAD_FULL=1 a session runs one half: the one the checked-out commit
# picks (its hash, mod 2), so that every other commit runs each; BOATLOAD_SLOW_HALF=0 or 1 picks one. What
# each checks whole, smaller tests that always run check piece by piece (a signal at each step, a node's
# record, bootstrap's list of tools, the SSD's reads), or the other half checks another way (the e2e's
# studies on config/ci.yaml in half 0, each study's own ci run in half 1; the fresh machine's make reproduce
# in half 0, a SIGKILL then reproduce in half 1); keys are "file::test" or "file::test[param]".
SLOW_HALVES = {
    # the shared session (seconds of one test, its setup included, on this 2-core VM, 7 Dec 2026)
    "test_fresh_machine.py::test_make_reproduce_on_a_fresh_debian_machine": 0,  # (no debootstrap here; CI: 201)
    "test_budget.py::test_a_spent_budget_chooses_no_points_finishes_the_paper_and_a_second_run_does_nothing": 0,  # 26
    "test_add_study.py::test_a_sixth_study_is_four_files_and_a_config_line": 0,  # 20
    "test_config_mutations.py::test_mutations_that_pass_dry_run_in_snakemake": 0,  # 20
    "test_jupyter_server.py::test_make_lab_serves_the_notebooks_and_runs_one_in_its_kernel": 0,  # 15
    "test_settle.py::test_settle_adds_repetitions_only_to_open_claims_points_and_records_their_runs": 0,  # 38
    "test_compare.py::test_fail_on_slower_gates_on_a_slower_point": 0,  # 24
    "test_reproduce.py::test_a_second_bare_snakemake_is_refused_naming_the_first": 0,  # 15
    "test_kill_storm.py::test_kill_storm_leaves_nothing_and_the_next_run_completes": 1,  # 101
    "test_slurm.py::test_a_node_dies_mid_run_is_marked_comes_back_and_the_fleet_completes": 1,  # 122
    "test_reproduce.py::test_sigkill_mid_measurement_then_clean_mounts_then_reproduce_completes": 1,  # 36 by itself
    "test_reproduce.py::test_a_full_scratch_fails_its_run_keeps_the_others_and_says_why": 1,  # 15
    # the alone tier
    "test_e2e.py::test_ci_run_builds_the_paper_then_has_nothing_to_do": 0,  # about 150
    "test_devmodel_stack.py::test_random_reads_take_the_models_mean_service_time[raid-hdd]": 0,
    "test_devmodel_stack.py::test_a_sequential_read_runs_at_the_zone_rate[hdd-7200-outer]": 0,
    "test_devmodel_runs.py::test_an_io_error_mid_run_fails_that_run_alone": 0,  # 5
    "test_target_up_modelled.py::test_target_up_keeps_a_modelled_device_served_until_down[ssd]": 0,  # 5
    "test_target_up_modelled.py::test_the_shell_that_ran_target_up_getting_a_signal_leaves_it_served[SIGINT]": 0,  # 6
    "test_worker.py::test_signal_gives_partial_json_and_exit_130[SIGINT]": 0,  # 3
    # one signal of each in each half, at that half of its steps or moments (SLOW_CASES)
    "test_signals_anywhere.py::test_a_signal_while_each_step_runs_leaves_nothing[INT to the group]": 0,  # 17
    "test_signals_anywhere.py::test_a_signal_at_any_moment_leaves_nothing[INT to the group]": 0,  # 13
    "test_signals_anywhere.py::test_a_signal_while_a_device_target_runs_leaves_nothing[INT to the group]": 0,  # 7
    "test_signals_anywhere.py::test_a_signal_while_a_modelled_target_runs_leaves_nothing[INT to the group]": 0,  # 10
    "test_signals_anywhere.py::test_a_signal_while_each_step_runs_leaves_nothing[TERM to the run]": 1,  # 17
    "test_signals_anywhere.py::test_a_signal_at_any_moment_leaves_nothing[TERM to the run]": 1,  # 10
    "test_signals_anywhere.py::test_a_signal_while_a_device_target_runs_leaves_nothing[TERM to the run]": 1,  # 4
    "test_signals_anywhere.py::test_a_signal_while_a_modelled_target_runs_leaves_nothing[TERM to the run]": 1,  # 6
    "test_devmodel_stack.py::test_random_reads_take_the_models_mean_service_time[hdd-7200]": 1,  # 10
    "test_devmodel_stack.py::test_random_reads_take_the_models_mean_service_time[ssd-2008-2ms]": 1,  # 10
    "test_devmodel_stack.py::test_a_sequential_read_runs_at_the_zone_rate[raid-hdd-2-disks-inner]": 1,  # 8
    "test_devmodel_stack.py::test_a_read_the_model_makes_cheaper_than_the_stack_costs_what_the_stack_costs": 1,  # 14
    "test_compare_known.py::test_twice_the_seek_time_is_slower_by_what_the_model_predicts": 1,  # 29, both:
    "test_compare_known.py::test_a_real_set_compared_with_itself": 1,  # (their module's runs)
    "test_tmpfs_model_requests.py::test_a_run_on_the_modelled_disk_keeps_what_each_phase_sent_it": 1,  # 21
    "test_study_filecount.py::test_ci_run_worker_and_fio_in_the_same_job": 1,  # 21
    "test_study_tmpfs.py::test_ci_worker_and_bonnie_in_the_same_job_in_the_memory_limit": 1,  # 15
    "test_study_tmpfs.py::test_tmpfs_beyond_the_limit_swaps_to_its_modelled_disk": 1,  # 11
    "test_study_tmpfs.py::test_ci_runs_in_the_memory_limit_inside_and_beyond_it": 1,  # 9
    "test_study_journal.py::test_a_modelled_run_records_what_reached_the_model": 1,  # 5
    "test_study_journal.py::test_durable_creates_reach_the_external_log_in_the_timed_phase": 1,  # 3
    "test_study_degradation.py::test_ci_run_three_stages_inside_the_memory_limit": 1,  # 4
    "test_study_calibration.py::test_the_known_effect_on_real_modelled_disks": 1,  # 3
    "test_target_up_modelled.py::test_target_up_keeps_a_modelled_device_served_until_down[hdd]": 1,  # 7
    "test_target_up_modelled.py::test_target_up_keeps_a_modelled_device_served_until_down[raid]": 1,  # 6
    "test_target_up_modelled.py::test_the_shell_that_ran_target_up_getting_a_signal_leaves_it_served[SIGHUP]": 1,  # 6
    "test_calibration_reuse.py::test_a_cost_kept_from_a_busy_moment_is_measured_again_before_a_model_is_refused": 1,
    "test_machineload.py::test_waiting_for_quiet_ends_when_the_hog_does": 1,  # 4
    "test_worker.py::test_signal_gives_partial_json_and_exit_130[SIGTERM]": 1,  # 3
}


# Tests that loop over many cases (a signal at each step of a run, at each of its moments): in CI each runs
# the cases of the session's half (half_of_cases), so that two commits picking different halves run all of
# them; BOATLOAD_FULL=1 runs every case. Keys as SLOW_HALVES's; each says what its cases are.
SLOW_CASES = {
    "test_signals_anywhere.py::test_a_signal_while_each_step_runs_leaves_nothing": "the steps of a tmpfs run",
    "test_signals_anywhere.py::test_a_signal_at_any_moment_leaves_nothing": "moments of a tmpfs run",
    "test_signals_anywhere.py::test_a_signal_while_a_device_target_runs_leaves_nothing": "the steps on a device",
    "test_signals_anywhere.py::test_a_signal_while_a_modelled_target_runs_leaves_nothing": "the steps on a model",
}


@functools.cache
def slow_half() -> int | None:
    """The half of SLOW_HALVES this session runs: None (both) with BOATLOAD_FULL=1, else BOATLOAD_SLOW_HALF's,
    else the checked-out commit's (its hash mod 2; 0 outside a git checkout)."""
    if FULL:
        return None
    if os.environ.get("BOATLOAD_SLOW_HALF") in ("0", "1"):
        return int(os.environ["BOATLOAD_SLOW_HALF"])
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return int(head.stdout.strip(), 16) % 2 if head.returncode == 0 and head.stdout.strip() else 0


def half_of_cases(key: str, cases: Sequence[T]) -> list[T]:
    """The cases a test that loops over many runs this session, in their order: every one with
    BOATLOAD_FULL=1, else slow_half()'s half of a split of them seeded by `key` (the test's SLOW_CASES key:
    the same split every session: case_halves), so that two commits picking different halves run every
    case between them."""
    if key not in SLOW_CASES:
        raise KeyError(f"{key}: not in tests/conftest.py's SLOW_CASES")
    half = slow_half()
    return list(cases) if half is None else [cases[i] for i in sorted(case_halves(key, len(cases))[half])]


def case_halves(key: str, n: int) -> tuple[set[int], set[int]]:
    """The indices of n cases in half 0 and in half 1: of each two neighbours (0 and 1, 2 and 3, ...) one in
    each half, which one a coin seeded by `key` says (the last of an odd count in half 0). Neighbours are
    alike (the steps of a run in their order, moments 1.5 s apart), so each half has some of every part and
    takes about as long as the other."""
    coin = random.Random(key)
    zero = {i if i + 1 == n or coin.random() < 0.5 else i + 1 for i in range(0, n, 2)}
    return zero, set(range(n)) - zero


def half_of_test(test: str) -> int | None:
    """The SLOW_HALVES half of a test "file::test[param]", by its name with or without its parameters."""
    return SLOW_HALVES.get(test, SLOW_HALVES.get(test.split("[", 1)[0]))


def half_of(item) -> int | None:
    """The SLOW_HALVES half of a collected test."""
    return half_of_test(f"{item.path.name}::{item.name}")


def pytest_report_header(config):
    half = slow_half()
    return ("slow tests: all at their full count (BOATLOAD_FULL=1)" if half is None else
            f"slow tests: reduced counts, and half {half} of tests/conftest.py's SLOW_HALVES and of its SLOW_CASES "
            f"(half {1 - half} on the next commit that picks it; BOATLOAD_FULL=1 runs both)")


# What a workflow run needs from the clone; everything else it makes itself.
WORKFLOW_FILES = ["Snakefile", "profiles", "workflow", "config", "notebooks", "paper", "data/reference",
                  "data/devmodels.yaml", "uv.lock", "pyproject.toml"]


def pytest_collection_modifyitems(config, items):
    half = slow_half()
    other = [item for item in items if half is not None and half_of(item) not in (None, half)]
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = [item for item in items if item not in other]
    for item in items:
        name = item.path.name
        if name in ALONE_FILES:
            item.add_marker(pytest.mark.alone)
        elif name in PARALLEL_FILES:
            item.add_marker(pytest.mark.parallel)
        elif name in PAIRED_FILES:
            item.add_marker(pytest.mark.paired)


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`: each worker takes whole groups (group_of), one at a time. (An xdist_group mark
    does not do it here: xdist 3.8 puts the group into the test's `_nodeid`, which pytest 9 no longer
    reads, so every test was a group of its own and the swap group's files ran side by side.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            self.workqueue.move_to_end(min(self.workqueue, key=start_rank), last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node) -> None:
            # A worker runs a test once it has the next (pytest's teardown needs it): one test left waiting
            # is the moment for its next group, not three (xdist's default), so that a long group's last
            # tests do not hold a group the other worker could have started.
            if self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
                return
            super()._reschedule(node)

    return ByGroup(config, log)


def start_rank(group: str) -> int:
    """Where a group comes in the order groups start: LONGEST_FIRST's, then every other group."""
    return LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)


def scope_of(nodeid: str) -> str:
    """The group a test (`tests/test_x.py::test_y[z]`) is scheduled with."""
    path, _, test = nodeid.partition("::")
    name = Path(path).name
    return SHARED_TESTS.get(f"{name}::{test.split('[', 1)[0]}") or group_of(name)


@pytest.fixture(scope="session")
def forest_fixture_run(tmp_path_factory) -> dict[str, Path]:
    """The forest notebook run once per session on the fixture
    (tests/fixtures/make_fixtures.py): {"results", "executed", "forest",
    "provenance"}. Tests that only read its results share it; a test that
    changes them works on a copy."""
    from notebook_checks import load_fixtures

    fixtures = load_fixtures("fixtures")
    return fixtures.run_forest_notebook(tmp_path_factory.mktemp("forest-fixture"), ROOT,
                                        formats=fixtures.fixturelib.ALL_FORMATS)


@pytest.fixture(scope="session")
def journal_fixture_run(tmp_path_factory) -> dict[str, Path]:
    """The journal notebook run once per session on its fixture
    (tests/fixtures/make_journal.py: this machine's disk and the modelled
    raid-hdd): {"results", "executed", "journal", "provenance"}, read only."""
    from notebook_checks import load_fixtures

    journal = load_fixtures("journal")
    return journal.run_notebook(tmp_path_factory.mktemp("journal-fixture"), ROOT, formats=journal.fixturelib.ALL_FORMATS)


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
