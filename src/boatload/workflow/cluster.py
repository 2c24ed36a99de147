"""The fleet on SLURM: which nodes measure, where each keeps its scratch,
what the Snakemake SLURM executor is told, cleanup on every node, and the
record of runs a node did not finish.

The workflow (workflow/rules/common.smk) reads `executor: slurm` (set by
profiles/slurm) and `cluster:` from the config; `boatload reproduce
--profile slurm` (make reproduce PROFILE=slurm) calls `prepare` before
Snakemake starts and `mark_unfinished` after it ends.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from boatload.base.errors import ConfigError

#: the nodes the workflow's main process chose, for the jobs it submits
#: (sbatch --export=ALL hands the variable to every job's Snakemake)
NODES_ENV = "BOATLOAD_NODES"
DEFAULT_SCRATCH = "/tmp/boatload-scratch/{node}"
# The executor's first status query waits this long (profiles/slurm); squeue
# as the status command needs MinJobAge >= 3 x that (the plugin's own rule).
STATUS_WAIT_S = 5
# A SLURM command that does not answer in this time is a dead controller.
QUERY_TIMEOUT_S = 30
# Node states in which a node takes jobs (sinfo %T, without its flags).
UP_STATES = {"idle", "mixed", "allocated", "completing"}


def fleet(config: dict) -> bool:
    """Whether this run measures on the nodes of a SLURM cluster."""
    return config.get("executor") == "slurm"


def settings(config: dict) -> dict:
    return {k: v for k, v in (config.get("cluster") or {}).items() if v is not None}


def scratch_of(config: dict, node: str) -> str:
    """A node's node-local scratch directory (cluster.scratch with {node} filled in)."""
    return settings(config).get("scratch", DEFAULT_SCRATCH).replace("{node}", node)


def _run(argv: list[str], timeout: float = QUERY_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def _missing_client() -> str | None:
    for command in ("sbatch", "squeue", "sinfo", "srun", "scontrol"):
        if shutil.which(command) is None:
            return command
    return None


def node_states(partition: str | None = None) -> dict[str, str]:
    """Every node sinfo knows (of `partition`), with its state (idle, down, drained, ...)."""
    argv = ["sinfo", "-h", "-N", "-o", "%N %T"] + (["-p", partition] if partition else [])
    try:
        out = _run(argv)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"cluster: sinfo did not answer in {QUERY_TIMEOUT_S} s (is slurmctld up?)") from None
    if out.returncode != 0:
        raise ConfigError(f"cluster: sinfo failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    states = {}
    for line in out.stdout.splitlines():
        if len(parts := line.split()) == 2:
            states.setdefault(parts[0], parts[1].rstrip("*~#!%$@^-").lower())
    return states


def nodes(config: dict) -> list[str]:
    """The nodes that measure: the main process resolves them (cluster.hosts, or
    every idle node of cluster.partition) and hands them to its jobs in
    $BOATLOAD_NODES, so a job's Snakemake sees the same list while nodes are busy."""
    if os.environ.get(NODES_ENV):
        return os.environ[NODES_ENV].split(",")
    cluster = settings(config)
    if cluster.get("hosts"):
        return list(cluster["hosts"])
    if missing := _missing_client():
        raise ConfigError(f"cluster: {missing} is not installed; the SLURM profile needs the SLURM client (slurm-client)")
    idle = sorted(n for n, s in node_states(cluster.get("partition")).items() if s == "idle")
    if not idle:
        where = f"partition {cluster['partition']}" if cluster.get("partition") else "the default partition"
        raise ConfigError(f"cluster.hosts: none given and no node of {where} is idle")
    return idle


def check_nodes(config: dict, names: list[str]) -> list[str]:
    """Problems with the nodes that are to measure: unknown, down or drained
    (a job pinned to such a node would wait for ever)."""
    cluster = settings(config)
    states = node_states(cluster.get("partition"))
    problems = []
    for name in names:
        if name not in states:
            where = f" of partition {cluster['partition']}" if cluster.get("partition") else ""
            problems.append(f"cluster.hosts: {name} is not a node{where} (sinfo knows {', '.join(sorted(states)) or 'none'})")
        elif states[name] not in UP_STATES:
            problems.append(f"cluster.hosts: {name} is {states[name]}; it would never run its jobs")
    return problems


def min_job_age() -> int | None:
    try:
        out = _run(["scontrol", "show", "config"])
    except subprocess.TimeoutExpired:
        return None
    m = re.search(r"^MinJobAge\s*=\s*(\d+)", out.stdout, re.M)
    return int(m.group(1)) if m else None


def status_args() -> list[str]:
    """How the executor asks for job status so that it never waits for ever:
    squeue (no accounting database needed) while finished jobs stay in
    squeue long enough (MinJobAge >= 3 x the first status wait), else sacct
    if accounting answers; ConfigError when neither can work."""
    age = min_job_age()
    if age is not None and age >= 3 * STATUS_WAIT_S:
        return ["--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", str(STATUS_WAIT_S)]
    try:
        sacct = _run(["sacct", "-n", "-X", "-j", "1"]) if shutil.which("sacct") else None
    except subprocess.TimeoutExpired:
        sacct = None
    if sacct is not None and sacct.returncode == 0:
        return ["--slurm-status-command", "sacct"]
    raise ConfigError(f"cluster: SLURM keeps finished jobs {age} s (MinJobAge) and has no job accounting "
                      f"(sacct fails): Snakemake could not learn that a job ended; set MinJobAge >= "
                      f"{3 * STATUS_WAIT_S} in slurm.conf or enable slurmdbd")


def executor_args(config: dict) -> list[str]:
    """Command-line settings of the SLURM executor that depend on the cluster."""
    args = status_args()
    if not settings(config).get("account"):
        args.append("--slurm-no-account")
    return args


@dataclass
class Prepared:
    nodes: list[str]
    args: list[str]


def prepare(config: dict) -> Prepared:
    """Before Snakemake starts: the nodes (checked: known and up), and the
    executor's arguments. Sets $BOATLOAD_NODES for the workflow and its jobs."""
    if missing := _missing_client():
        raise ConfigError(f"cluster: {missing} is not installed; the SLURM profile needs the SLURM client (slurm-client)")
    os.environ.pop(NODES_ENV, None)
    names = nodes(config)
    if problems := check_nodes(config, names):
        raise ConfigError("; ".join(problems))
    os.environ[NODES_ENV] = ",".join(names)
    return Prepared(names, executor_args(config))


def srun_argv(config: dict, node: str, command: list[str], minutes: int = 5) -> list[str]:
    """`command` as one task on `node`; srun gives up after 30 s if the node cannot take it
    (down, or busy), rather than waiting for ever."""
    cluster = settings(config)
    argv = ["srun", "-N1", "-n1", f"--nodelist={node}", f"--time={minutes}", "--immediate=30",
            "--job-name=boatload-cleanup"]
    if cluster.get("partition"):
        argv.append(f"--partition={cluster['partition']}")
    if cluster.get("account"):
        argv.append(f"--account={cluster['account']}")
    return argv + command


def cleanup_nodes(config: dict, names: list[str], *, force: bool, timeout: float = 300) -> list[tuple[str, int, str]]:
    """`boatload cleanup` on each node, in its scratch, through srun: (node, exit status, output lines)."""
    out = []
    for node in names:
        command = ["boatload", "cleanup", "--scratch", scratch_of(config, node)] + (["--force"] if force else [])
        try:
            done = _run(srun_argv(config, node, command), timeout=timeout)
            text = (done.stdout + done.stderr).strip()
            out.append((node, done.returncode, text))
        except subprocess.TimeoutExpired:
            out.append((node, 124, f"srun did not finish in {timeout:.0f} s"))
    return out


def mark_unfinished(config: dict, names: list[str], pending_before: dict[str, list], reasons: list[str]) -> dict[str, int]:
    """After a fleet run: each run that was to be measured on a node and has
    no raw result is recorded as failed under data/runs/<node>/archive/failed/
    with the node's state and the executor's reason. Returns {node: runs marked}."""
    from boatload.base.results import archive_path, write_atomic

    states = {}
    try:
        states = node_states(settings(config).get("partition"))
    except ConfigError:
        pass
    marked = {}
    for node in names:
        runs_dir = Path("data/runs") / node
        missing = [r for r in pending_before.get(node, []) if not os.path.exists(r.raw(str(runs_dir)))]
        if not missing:
            continue
        state = states.get(node, "unknown")
        why = [r for r in reasons if node in r or "SLURM" in r] or reasons
        reason = (f"not measured: node {node} is {state} after the run"
                  + (f" ({why[-1]})" if why else ""))
        for run in missing:
            doc = {"study": run.study, "job": run.job, "node": node, "node_state": state,
                   "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "result": {"status": "error", "reason": reason}}
            path = archive_path(runs_dir, Path("failed") / run.study / run.target / run.point / f"rep{run.rep}.json")
            write_atomic(path, json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
        marked[node] = len(missing)
    return marked


def failed_runs(runs_dir: Path) -> list[dict]:
    """The failure records under <runs_dir>/archive/failed/ (a run that errored, or a node that failed)."""
    out = []
    for path in sorted((Path(runs_dir) / "archive" / "failed").rglob("*.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out
