# Names, validation and every helper the rules share (as snakemake-workflows'
# common.smk): the host, where runs go, the worker every experiment is pinned
# to, the run list and the chain of pending runs, the figures of each study.

import json
import os
from glob import glob

from boatload import plan
from boatload.interference import DEFAULTS as INTERFERENCE_DEFAULTS
from boatload.studies import registry
from boatload.system import hostname

HOST = config.get("host") or hostname()
RUNS = f"data/runs/{HOST}"
CONFIGFILE = os.path.relpath(str((workflow.overwrite_configfiles or ["config/config.yaml"])[-1]))
# The studies this config asks for and this version of boatload can run, in the paper's order.
STUDIES = plan.studies(config)
# Studies whose notebook exists: each brings a table, a summary and figures to the paper.
ANALYSED = [name for name in STUDIES if os.path.exists(f"notebooks/{name}.ipynb")]

# What counts as a disturbed timed phase; every job carries it, so a raw run says what it was held to.
INTERFERENCE = {**INTERFERENCE_DEFAULTS, **config.get("interference", {})}

# Nix puts the worker in the store and says where; otherwise we build it here.
WORKER = os.environ.get("BOATLOAD_WORKER") or "native/build/boatload-worker"
# Every experiment depends on the worker build and on the locked environment,
# so a new worker or a new lock reruns the measurements that used the old one.
PINNED = {"worker": WORKER, "lock": "uv.lock"}


# Every run, in the order shuffled with the config's seed, so that no target or
# study is always measured first (warm caches, a filling disk, a heating CPU).
# A study whose settings cannot make runs is named in PLAN_ERRORS, which the
# preflight lists with every other problem.
PLAN_ERRORS = []
RUN_LIST = plan.runs(config, PLAN_ERRORS)
JOBS = {run.key: {**run.job, "interference": INTERFERENCE} for run in RUN_LIST}


def raw_run(name, target, point, rep):
    """data/runs/<host>/<study>/<target>/<point>/rep<N>.json"""
    return plan.raw_run(RUNS, name, target, point, rep)


def raw_runs(name):
    """A study's raw runs, in a fixed order (not the run order, which follows the seed)."""
    return sorted(run.raw(RUNS) for run in RUN_LIST if run.study == name)


def all_raw_runs():
    return [run for name in STUDIES for run in raw_runs(name)]


# The runs still to measure form one chain in that order: each waits for the
# pending run before it. So exactly one measurement is ever ready, it is
# running, and Snakemake's scheduler has nothing to select and sleeps until
# it ends (with many ready jobs it wakes every second and re-evaluates all of
# them, using CPU beside the measurement). Only runs whose raw result is
# missing are linked: a run that exists is never made to wait or to rerun
# because another one is measured again (a link to a run that will be made
# counts as an updated input, `ancient` or not). A run measured again while
# its result exists (changed params, --forcerun) is not in the chain.
PENDING = [run.key for run in plan.pending(RUN_LIST, RUNS)]
PREVIOUS_PENDING = dict(zip(PENDING[1:], PENDING))


def previous_run(w):
    key = (w.study, w.target, w.point, int(w.rep))
    return raw_run(*PREVIOUS_PENDING[key]) if key in PREVIOUS_PENDING else []


def measure_job(w):
    """The job of one run, as the study's `jobs` made it, for `boatload run --job`."""
    return json.dumps(JOBS[(w.study, w.target, w.point, int(w.rep))], sort_keys=True)


# While any run is still to measure, the analysis (every tidy table, and so
# every notebook) waits for the last of them, so nothing of ours runs beside a
# measurement; with nothing to measure it waits for nothing.
LAST_PENDING_RUN = raw_run(*PENDING[-1]) if PENDING else []


def figure_files(name, ext="svg"):
    """The figures a study's notebook writes: results/figures/<study>-<figure>.<ext>."""
    return [f"results/figures/{name}-{fig}.{ext}" for fig in registry()[name].figures]


def all_figure_files(ext="svg"):
    return [path for name in ANALYSED for path in figure_files(name, ext)]


if WORKER == "native/build/boatload-worker":

    rule build_worker:
        input:
            sources=sorted(glob("native/src/*.[ch]")),
            makefile="native/Makefile",
        output:
            WORKER,
        log:
            "results/logs/build_worker.log",
        shell:
            "make -C native > {log:q} 2>&1"
