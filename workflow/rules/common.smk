# Names, validation and every helper the rules share (as snakemake-workflows'
# common.smk): the host, where runs go, the worker every experiment is pinned
# to, the run list and the chain of pending runs, the figures of each study.

import json
import os
import re
import shlex
import sys
from glob import glob

from boatload.workflow import cluster, plan
from boatload.analysis import settle_record
from boatload.base.errors import ConfigError
from boatload.workflow.notebooks import notebook_arguments
from boatload.studies import registry
from boatload.base.system import hostname

HOST = config.get("host") or hostname()
# The fleet (profiles/slurm sets `executor: slurm`): every node of the config's
# `cluster` measures every run into data/runs/<node>/ through the SLURM
# executor; analysis and the paper run here. Otherwise this host alone.
FLEET = cluster.fleet(config)
try:
    HOSTS = cluster.nodes(config) if FLEET else [HOST]
except ConfigError as exc:
    sys.exit(f"boatload: {exc}")
# The first host's notebooks write results/ (the paper's study sections); the
# others' write results/hosts/<host>/, which the fleet section compares.
PRIMARY = HOSTS[0]
OTHER_HOSTS = HOSTS[1:]
RUNS = f"data/runs/{PRIMARY}"
# In the rules' file names: this host's name, or the {host} wildcard in the fleet.
HOST_PART = "{host}" if FLEET else HOST


def host_of(w):
    return getattr(w, "host", PRIMARY)


def runs_dir(host):
    return f"data/runs/{host}"


def results_of(host):
    """Where a host's notebooks write: results/ for the first, results/hosts/<host>/ for the others."""
    return "results" if host == PRIMARY else f"results/hosts/{host}"


def logs(kind):
    """The log folder of a rule: results/logs/<kind>, per host in the fleet."""
    return f"results/logs/{{host}}/{kind}" if FLEET else f"results/logs/{kind}"
CONFIGFILE = os.path.relpath(str((workflow.overwrite_configfiles or ["config/config.yaml"])[-1]))
# The studies this config asks for and this version of boatload can run, in the paper's order.
STUDIES = plan.studies(config)
# Studies whose notebook exists: each brings a table, a summary and figures to the paper.
ANALYSED = [name for name in STUDIES if os.path.exists(f"notebooks/{name}.ipynb")]

# Every notebook's settings from the config: the verdict rule's (boatload.analysis.verdict.Rule's defaults
# otherwise) and the figure files it writes (figure_formats: the SVGs are the rules' declared outputs).
NOTEBOOK_PARAMS = " ".join(shlex.quote(a) for a in notebook_arguments(config))

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
# The repetitions `boatload reproduce --settle` added belong to the plan from then on.
RUN_LIST = plan.runs(config, PLAN_ERRORS, added=settle_record.added_reps(RUNS, config))
# What counts as a disturbed timed phase (a study's own `interference:` over the config's); every job
# carries it, so a raw run says what it was held to.
JOBS = {run.key: {**run.job, "interference": plan.interference(config, run.study)} for run in RUN_LIST}


def raw_run(name, target, point, rep, host=PRIMARY):
    """data/runs/<host>/<study>/<target>/<point>/rep<N>.json"""
    return plan.raw_run(runs_dir(host), name, target, point, rep)


def raw_runs(name, host=PRIMARY):
    """A study's raw runs, in a fixed order (not the run order, which follows the seed)."""
    return sorted(run.raw(runs_dir(host)) for run in RUN_LIST if run.study == name)


def all_raw_runs(host=PRIMARY):
    return [run for name in STUDIES for run in raw_runs(name, host)]


# The runs still to measure form one chain in that order: each waits for the
# pending run before it. So exactly one measurement is ever ready, it is
# running, and Snakemake's scheduler has nothing to select and sleeps until
# it ends (with many ready jobs it wakes every second and re-evaluates all of
# them, using CPU beside the measurement). Only runs whose raw result is
# missing are linked: a run that exists is never made to wait or to rerun
# because another one is measured again (a link to a run that will be made
# counts as an updated input, `ancient` or not). A run measured again while
# its result exists (changed params, --forcerun) is not in the chain.
# In the fleet each node has its own chain (one measurement at a time per node).
PENDING_OF = {host: [run.key for run in plan.pending(RUN_LIST, runs_dir(host))] for host in HOSTS}
PREVIOUS_PENDING_OF = {host: dict(zip(keys[1:], keys)) for host, keys in PENDING_OF.items()}


def previous_run(w):
    host, key = host_of(w), (w.study, w.target, w.point, int(w.rep))
    before = PREVIOUS_PENDING_OF[host].get(key)
    return raw_run(*before, host=host) if before else []


def measure_job(w):
    """The job of one run, as the study's `jobs` made it, for `boatload run --job`."""
    return json.dumps(JOBS[(w.study, w.target, w.point, int(w.rep))], sort_keys=True)


# While any run is still to measure, the analysis (every tidy table, and so
# every notebook) waits for the last of them, so nothing of ours runs beside a
# measurement; with nothing to measure it waits for nothing. In the fleet, a
# node's tables wait for that node's last run.
LAST_PENDING_RUN_OF = {host: raw_run(*keys[-1], host=host) if keys else [] for host, keys in PENDING_OF.items()}


def last_pending_run(w):
    return LAST_PENDING_RUN_OF[host_of(w)]


# The fleet: SLURM resources of a measurement (its node, partition, account,
# time limit) and its node-local scratch. Each node's chain of measurements
# is one SLURM job (profiles/slurm puts rule measure in one group, and a
# group job is one connected chain).
CLUSTER = cluster.settings(config)
RUN_ESTIMATE_S = {run.key: plan.estimate_s(run) for run in RUN_LIST} if FLEET else {}


def measure_runtime(w):
    """Minutes: cluster.runtime_min, else 4 x the run's estimate plus 5."""
    if CLUSTER.get("runtime_min"):
        return int(CLUSTER["runtime_min"])
    return 5 + int(4 * RUN_ESTIMATE_S.get((w.study, w.target, w.point, int(w.rep)), 60) / 60)


# Only in the fleet, so a single host's measurements keep their recorded params.
FLEET_PARAMS = {"scratch": lambda w: cluster.scratch_of(config, w.host)} if FLEET else {}
FLEET_CONSTRAINTS = {"host": "|".join(map(re.escape, HOSTS))} if FLEET else {}
FLEET_RESOURCES = (
    {
        # the node, and nobody else's jobs on it while it measures
        "slurm_extra": lambda w: f"--nodelist={w.host} --exclusive",
        "runtime": measure_runtime,
        "cpus_per_task": 1,
        "mem_mb": 1000,
        **({"slurm_partition": CLUSTER["partition"]} if CLUSTER.get("partition") else {}),
        **({"slurm_account": CLUSTER["account"]} if CLUSTER.get("account") else {}),
    }
    if FLEET
    else {}
)


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
        localrule: True
        log:
            "results/logs/build_worker.log",
        shell:
            "make -C native > {log:q} 2>&1"
