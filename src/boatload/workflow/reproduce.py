"""`boatload reproduce`: the whole workflow, as `make reproduce` and
`nix run .#reproduce` run it.

Before Snakemake starts: a second run of the same clone is refused in one
line naming the first one's pid; a Snakemake lock that no live process of
this clone holds (a run killed by a signal) is removed, saying so; resources
of runs that died are undone. While it runs, Snakemake's output passes
through, and after each finished measurement one line gives the runs done of
the total, the time elapsed and an estimate of the time left. At the end
every resource is undone, and the last line names the PDF.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from boatload.workflow import plan
from boatload.measure import procfs
from boatload.analysis import settle_record
from boatload.studies.config import ConfigError, load, validate
from boatload.workflow.preflight import estimates, tail_seconds
from boatload.base.system import hostname

PDF = Path("results/paper/paper.pdf")
LOCKS = Path(".snakemake/locks")
# Held (flock) for as long as a `boatload reproduce` of this clone lives; the
# kernel drops it with the process, however it ends.
RUN_LOCK = Path(".snakemake/boatload-reproduce.lock")
# How long Snakemake may take to stop after a signal before it is pushed (see _snakemake).
STOP_GRACE_S = 30.0
STEPS_LINE = re.compile(r"^\d+ of \d+ steps")
# `boatload run` says so when a run failed (cli._cmd_run); the last line repeats it.
FAILED_RUN = re.compile(r"^boatload run: (?P<what>.* failed: .*)$")
# The SLURM executor's word on a job that failed (NODE_FAIL, TIMEOUT, CANCELLED, ...).
SLURM_FAILED = re.compile(r"SLURM-job '\d+' failed[^.]*, SLURM status is: '[A-Z_]+'")
# Snakemake's word on a measurement job of the fleet that failed (a node's chain is one group job).
MEASURE_FAILED = re.compile(r"Error in (group|rule) measure\b")


def _say(line: str) -> None:
    print(f"boatload: {line}", file=sys.stderr, flush=True)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    return f"{h}h{rest // 60:02d}m" if h else f"{rest // 60}m{rest % 60:02d}s"


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1:
        out.add(pid)
        ppid = procfs.parent(pid)
        if ppid is None:
            break
        pid = ppid
    return out


def live_runs(root: Path) -> list[int]:
    """Snakemake processes working in this clone, other than this process and its parents."""
    mine = _ancestors()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in mine:
            continue
        pid = int(entry)
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
        if cwd == root and procfs.is_snakemake(pid):
            found.append(pid)
    return sorted(found)


def take_run_lock(root: Path):
    """The clone's run lock, or SystemExit naming the run that holds it."""
    path = root / RUN_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        raise SystemExit(f"boatload: another run of this clone is in progress (boatload reproduce pid {holder}); "
                         "wait for it to end or stop it first") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def clear_stale_lock(root: Path) -> None:
    """Refuse beside a live Snakemake of this clone; else remove the lock a killed one left."""
    others = live_runs(root)
    if others:
        raise SystemExit(f"boatload: another run of this clone is in progress (snakemake pid {others[0]}); "
                         "wait for it to end or stop it first")
    locks = sorted((root / LOCKS).glob("*.lock")) if (root / LOCKS).is_dir() else []
    for lock in locks:
        lock.unlink(missing_ok=True)
    if locks:
        _say(f"removed a stale Snakemake lock ({LOCKS}, {len(locks)} file{'s' if len(locks) > 1 else ''}): "
             "no snakemake process of this clone is alive")


def locks_matter(argv: list[str]) -> bool:
    """Whether a Snakemake with these arguments takes the lock: not a dry run, not --unlock
    (which removes it), not a report or a summary of what exists."""
    readonly = {"--dry-run", "--dryrun", "--unlock", "--report", "--summary", "--detailed-summary",
                "--list-rules", "--list", "--dag", "--rulegraph", "--filegraph", "--lint"}
    for arg in argv[1:]:
        if arg in readonly or (arg.startswith("-") and not arg.startswith("--") and "n" in arg[1:]):
            return False
    return True


class Progress:
    """Runs done of those pending at the start, elapsed time and time left."""

    def __init__(self, config: dict, root: Path, hosts: list[str] | None = None) -> None:
        # the fleet: every node measures every run, each node's runs count
        self.hosts = hosts or [config.get("host") or hostname()]
        everything = plan.runs(config, added=settle_record.added_reps(root / "data" / "runs" / self.hosts[0], config))
        self.pending_of = {h: plan.pending(everything, str(root / "data" / "runs" / h)) for h in self.hosts}
        self.pending = [r for h in self.hosts for r in self.pending_of[h]]
        self.estimate = estimates(self.pending_of[self.hosts[0]], root / "data" / "runs" / self.hosts[0])
        self.analysis_s = tail_seconds(root / "results", plan.studies(config))
        self.root = root
        # the claims the analyses so far decided (none before the first): fixed for this Snakemake,
        # which measures and analyses, while the looks between two of them decide
        self.claims = settle_record.decided_so_far(root / "results", root / "data" / "runs" / self.hosts[0])
        self.started = time.monotonic()
        self.done = 0
        self.constant: dict[str, bool] = {}  # raw result -> kept under a constant load

    def line(self) -> str | None:
        """A new progress line when a run has finished since the last one, else None."""
        done = [r for h in self.hosts for r in self.pending_of[h]
                if os.path.exists(r.raw(str(self.root / "data" / "runs" / h)))]
        if len(done) == self.done:
            return None
        self.done = len(done)
        elapsed = time.monotonic() - self.started
        expected_done = sum(self.estimate.get(r.key, 0.0) for r in done) / len(self.hosts)
        left = sum(self.estimate.get(r.key, 0.0) for r in self.pending) / len(self.hosts) - expected_done
        # The estimates are rough; the runs so far say how rough on this machine.
        pace = min(4.0, max(0.25, elapsed / expected_done)) if expected_done > 0 else 1.0
        remaining = left * pace + self.analysis_s
        constant = self._constant([r.raw(str(self.root / "data" / "runs" / h))
                                   for h in self.hosts for r in self.pending_of[h]])
        return (f"progress: {self.done}/{len(self.pending)} runs measured, {_clock(elapsed)} elapsed, "
                f"about {_clock(remaining)} left"
                + (f"; {self.claims[0]} of {self.claims[1]} claims tested decided so far" if self.claims else "")
                + (f"; {constant} kept disturbed by a constant load (not measured again)" if constant else ""))

    def _constant(self, raws: list[str]) -> int:
        """How many finished runs were kept under a constant load (each raw result read once)."""
        for path in raws:
            if path not in self.constant and os.path.exists(path):
                try:
                    record = json.loads(Path(path).read_text()).get("interference") or {}
                except (OSError, ValueError):
                    continue
                self.constant[path] = record.get("disturbance") == "constant"
        return sum(self.constant.values())


def _snakemake(argv: list[str], progress: Progress | None, failures: list[str]) -> int:
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)

    # Signals to the process group (Ctrl-C, make, timeout, a batch system)
    # reach Snakemake directly; this process does not pass them on again.
    # Snakemake's SIGTERM handler takes its scheduler's lock, which the main
    # thread may hold at that moment (a job dying of the same signal): it then
    # never returns (seen in kill storms through make). So after any signal,
    # a Snakemake that has not ended within STOP_GRACE_S gets SIGINT (its
    # KeyboardInterrupt path cancels the jobs), and then SIGKILL.
    def watchdog():
        for escalate in (signal.SIGINT, signal.SIGKILL):
            try:
                child.wait(timeout=STOP_GRACE_S)
                return
            except subprocess.TimeoutExpired:
                _say(f"snakemake (pid {child.pid}) has not stopped {STOP_GRACE_S:.0f} s after the signal; "
                     f"sending it {escalate.name}")
                child.send_signal(escalate)

    def stop(signum, frame):
        if child.poll() is None and not stopping.is_set():
            stopping.set()
            if os.getpgid(child.pid) != os.getpgrp():
                child.send_signal(signum)
            threading.Thread(target=watchdog, daemon=True).start()

    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    for line in child.stdout:
        sys.stderr.write(line)
        if failed := FAILED_RUN.match(line.rstrip("\n")):
            failures.append(failed["what"])
        elif failed := SLURM_FAILED.search(line) or MEASURE_FAILED.search(line):
            failures.append(failed.group(0).rstrip(". "))
        if progress and STEPS_LINE.match(line):
            update = progress.line()
            if update:
                _say(update)
    return child.wait()


def _cleanup(when: str) -> None:
    """Undo what dead runs left (a killed earlier run, or this one's jobs)."""
    from boatload.provision.cleanup import cleanup
    from boatload.base.paths import scratch_dir
    from boatload.provision.targets import TargetError

    if not scratch_dir().exists():
        return
    try:
        for line in cleanup(scratch_dir()):
            _say(f"cleanup {when}: {line}")
    except TargetError as exc:
        _say(f"cleanup {when}: {exc}; `make clean-mounts` as root undoes it")


def _profile(root: Path, profile: str | None) -> tuple[list[str], bool]:
    """Snakemake's arguments for a profile (a name under profiles/, or a folder), and whether
    it is the fleet (its config.yaml sets `config: {executor: slurm}`)."""
    if not profile:
        return [], False
    folder = root / "profiles" / profile if (root / "profiles" / profile).is_dir() else Path(profile)
    settings = folder / "config.yaml"
    if not settings.is_file():
        known = ", ".join(sorted(p.name for p in (root / "profiles").iterdir() if p.is_dir()))
        raise SystemExit(f"boatload reproduce: --profile {profile}: no {settings} (profiles: {known})")
    import yaml

    data = yaml.safe_load(settings.read_text()) or {}
    return ["--workflow-profile", str(folder)], (data.get("config") or {}).get("executor") == "slurm"


def _fleet_cleanup(config: dict, nodes: list[str], when: str) -> None:
    """`boatload cleanup` on every node (through srun), saying what it did or could not."""
    from boatload.workflow import cluster

    try:
        states = cluster.node_states(cluster.settings(config).get("partition"))
    except ConfigError:
        states = {}
    down = [n for n in nodes if states.get(n) not in cluster.UP_STATES]
    for node in down:
        _say(f"cleanup {when} on {node}: not possible, the node is {states.get(node, 'unknown')}; "
             "`make clean-mounts PROFILE=slurm` undoes what its runs left when it is back")
    for node, code, text in cluster.cleanup_nodes(config, [n for n in nodes if n not in down], force=False):
        lines = [line.removeprefix("boatload cleanup: ") for line in text.splitlines()]
        if code != 0:
            _say(f"cleanup {when} on {node}: could not run ({lines[-1] if lines else f'exit {code}'}); "
                 "`make clean-mounts PROFILE=slurm` undoes it when the node is back")
            continue
        for line in lines:
            if not line.startswith("nothing"):
                _say(f"cleanup {when} on {node}: {line}")


def main(configfile: str, extra: list[str], dry_run: bool = False, profile: str | None = None,
         studies: list[str] | None = None) -> int:
    root = Path.cwd().resolve()
    if not (root / "Snakefile").is_file():
        raise SystemExit(f"boatload reproduce: run it from the root of a boatload clone (no Snakefile in {root})")
    try:
        config = load(Path(configfile))
        if studies:
            # the workflow reads it from --config; the progress line from here
            config["only_studies"] = ",".join(studies)
            validate(config)
            extra = [*extra, "--config", f"only_studies={config['only_studies']}"]  # after any target or list
    except ConfigError as exc:
        raise SystemExit(f"boatload: {exc}") from None
    profile_args, fleet = _profile(root, profile)
    nodes: list[str] = []
    if fleet:
        from boatload.workflow import cluster

        config["executor"] = "slurm"
        try:
            prepared = cluster.prepare(config)  # the nodes, checked up; $BOATLOAD_NODES for the jobs
        except ConfigError as exc:
            raise SystemExit(f"boatload: {exc}") from None
        nodes = prepared.nodes
        profile_args += prepared.args
        _say(f"the fleet: {', '.join(nodes)} through SLURM; data in data/runs/<node>/")
    # one value (=): a target or list after it in `extra` is not taken for another config file
    argv = ["snakemake", f"--configfile={configfile}", *profile_args, *extra]
    if dry_run:
        return subprocess.call([*argv, "--dry-run", "--quiet", "rules"])
    lock = take_run_lock(root)
    clear_stale_lock(root)
    started = time.monotonic()
    _cleanup("before the run")
    if fleet:
        _fleet_cleanup(config, nodes, "before the run")
    try:
        progress = Progress(config, root, nodes or None)
    except ConfigError:
        progress = None  # the workflow's preflight says what is wrong
    failures: list[str] = []
    status = _snakemake(argv, progress, failures)
    _cleanup("after the run")
    marked: dict[str, int] = {}
    if fleet:
        _fleet_cleanup(config, nodes, "after the run")
        # a node that failed (or a SLURM job of it): its runs still missing are recorded
        if progress is not None and status != 0 and any(SLURM_FAILED.search(f) or MEASURE_FAILED.search(f)
                                                         for f in failures):
            marked = cluster.mark_unfinished(config, nodes, progress.pending_of, failures)
            for node, count in marked.items():
                _say(f"{node}: {count} run{'s' if count > 1 else ''} not measured, recorded as failed in "
                     f"data/runs/{node}/archive/failed/")
    lock.close()
    took = _clock(time.monotonic() - started)
    if status == 0 and (root / PDF).is_file():
        _say(f"done in {took}: {PDF}")
    elif marked:
        done = [n for n in nodes if n not in marked]
        _say(f"stopped after {took}: {', '.join(marked)} did not finish {'its' if len(marked) == 1 else 'their'} runs"
             + (f"; {', '.join(done)} finished {'its' if len(done) == 1 else 'theirs'} (data/runs/<node>/)"
                if done else ""))
    elif failures:
        # a run's own reason (boatload run's line) says more than Snakemake's "Error in rule measure" after it
        specific = [f for f in failures if not MEASURE_FAILED.fullmatch(f)]
        _say(f"stopped after {took}: {(specific or failures)[-1]}")
    else:
        _say(f"stopped after {took} (snakemake exit {status}); the paper was not made")
    return status
