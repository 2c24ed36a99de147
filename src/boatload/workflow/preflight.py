"""Before the first measurement: can this machine run what the config asks,
and what will it take?

`check()` looks at everything at once (root, the cgroup memory controller,
swap files on the scratch file system, loop devices, every tool, free space
against the largest run, memory limits against RAM) and returns every
problem, each naming the config field or the tool. `plan_lines()` is the plan
the workflow prints before it starts (and `make dry-run` prints): studies,
runs, estimated time and disk. Only the runs still to measure are checked, so
redrawing a figure from data already measured needs none of it.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from boatload.measure import interference, machineload
from boatload.provision import memlimit
from boatload.workflow import plan
from boatload.base import system, tools
from boatload.base.paths import repo_root
from boatload.studies import registry, study
from boatload.provision.hostops import existing_ancestor, statfs_type  # statfs_type: the names NO_SWAP_FS uses
from boatload.provision.swapfiles import NO_SWAP_FS
from boatload.provision.capacity import spec_of
from boatload.provision.targets import refusals

GiB = 1 << 30
# Raw results (a JSON document per run, intervals and interference records
# included) and the analysis outputs, generously: they are small beside images.
RESULT_BYTES_PER_RUN = 512 << 10
ANALYSIS_BYTES = 64 << 20


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    machine: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)

    def refusal(self) -> str:
        head = f"boatload: preflight found {len(self.problems)} problem{'s' if len(self.problems) > 1 else ''}; nothing was mounted or measured:"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])


def _free(path: Path) -> tuple[int, int]:
    """(free bytes for us, st_dev) of the file system holding `path`."""
    where = existing_ancestor(path)
    st = os.statvfs(where)
    return st.f_bavail * st.f_frsize, os.stat(where).st_dev


def _size(n: float) -> str:
    return f"{n / GiB:.1f} GiB" if n >= GiB else f"{n / (1 << 20):.0f} MiB"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _fallback_studies() -> set[str]:
    """Studies that, without root, measure a plain directory instead of being skipped."""
    return {name for name, s in registry().items() if s.measures_without_root}


def loop_devices() -> str | None:
    """Why loop devices cannot be used, or None."""
    if not Path("/dev/loop-control").exists():
        return "/dev/loop-control is missing (load the loop module: modprobe loop)"
    if not os.access("/dev/loop-control", os.R_OK | os.W_OK):
        return "/dev/loop-control is not writable"
    return None


def check(config: dict, pending: list[plan.Run], scratch: Path, results: Path, *, euid: int | None = None) -> Report:
    """Every problem that would stop or spoil the pending runs, and the facts of the machine."""
    report = Report()
    root = (os.geteuid() if euid is None else euid) == 0
    ram = system.memory_bytes()
    scratch_fs = statfs_type(existing_ancestor(scratch)) or "unknown"
    report.machine.append(f"root: {'yes' if root else 'no (stand-ins and skips, see below)'}")
    report.machine.append(f"RAM {_size(ram)}, {os.cpu_count()} CPUs")
    if not pending:
        return report
    needs = {run.key: plan.needs(run) for run in pending}
    measured = [r for r in pending if root or r.study in _fallback_studies()]
    if not root:
        skipped = sorted({r.study for r in pending} - _fallback_studies())
        standins = sorted({r.study for r in measured})
        report.machine.append(
            "not root: nothing can be mounted and no memory limit set; "
            f"{', '.join(standins) or 'no study'} will measure a plain directory (marked as stand-ins), "
            f"{', '.join(skipped) or 'none'} will be recorded as skipped"
        )

    # Tools: each named with its package, and the runs that need it.
    wanted: dict[str, set[str]] = defaultdict(set)
    for run in measured:
        commands = needs[run.key].tools if root else study(run.study).tools(run.job)
        for command in commands:
            wanted[command].add(run.study)
    absent = sorted(c for c in wanted if tools.find(c) is None)
    for command in absent:
        tool = tools.BY_COMMAND.get(command)
        package = f" (Debian package {tool.debian}, nixpkgs {tool.nix})" if tool else ""
        report.problems.append(f"tool {command}{package} is not installed; {', '.join(sorted(wanted[command]))} need it")
    report.machine.append(f"tools: {len(wanted) - len(absent)} of {len(wanted)} needed found")

    _check_targets(report, pending, scratch, os.geteuid() if euid is None else euid)
    if root:
        _check_kernel(report, pending, needs, scratch, scratch_fs)
    _check_memory(report, config, pending, ram)
    if not root:
        dropping = sorted({r.study for r in measured if r.job.get("drop_caches")})
        report.problems += [f"studies.{name}.drop_caches: needs root (writing /proc/sys/vm/drop_caches); "
                            "set it to false or run as root" for name in dropping]
    _check_space(report, pending if root else [], needs, scratch, scratch_fs, results)
    return report


def _check_targets(report: Report, pending, scratch: Path, euid: int) -> None:
    """The user's own hardware: every device target behind the guard, every mount target checked;
    modelled targets' models and FUSE."""
    seen = {}
    for run in pending:
        seen.setdefault(run.target, run.job["target"])
    for name in sorted(seen):
        spec = spec_of(seen[name])
        report.problems += refusals(spec, scratch, euid=euid)


def _check_kernel(report: Report, pending, needs, scratch: Path, scratch_fs: str) -> None:
    if any(needs[r.key].loop for r in pending):
        why = loop_devices()
        loops = sorted({r.target for r in pending if needs[r.key].loop})
        if why:
            report.problems.append(f"loop devices: {why}; targets {', '.join(loops)} are loop images")
        else:
            report.machine.append("loop devices: yes")
    limited = sorted({r.study for r in pending if needs[r.key].memory_limit_mb is not None})
    if limited:
        try:
            choice = memlimit.choose()
            report.machine.append(f"memory limits: cgroup v{choice.hierarchy.version} at {choice.hierarchy.mount}")
        except memlimit.MemoryLimitError as exc:
            report.problems.append(f"studies.{limited[0]}.memory_limit_mb: {exc}")
    swapping = sorted({r.study for r in pending if needs[r.key].swap})
    if swapping:
        if scratch_fs in NO_SWAP_FS:
            report.problems.append(
                f"studies.{swapping[0]}.swap_mb: the scratch directory {scratch} is on {scratch_fs}, where the "
                "kernel cannot swap to a file; set BOATLOAD_SCRATCH to a directory on ext4 or xfs")
        elif not Path("/proc/swaps").exists():
            report.problems.append(f"studies.{swapping[0]}.swap_mb: this kernel has no swap support (/proc/swaps)")
        else:
            report.machine.append(f"swap files: on {scratch_fs}")


def _check_memory(report: Report, config: dict, pending, ram: int) -> None:
    for name in sorted({r.study for r in pending}):
        limit = config["studies"][name].get("memory_limit_mb")
        if limit is not None and limit << 20 >= ram:
            report.problems.append(
                f"studies.{name}.memory_limit_mb: {limit} MiB is not below this machine's RAM ({_size(ram)}); "
                "a limit at or above RAM limits nothing (null means the whole machine)")


def _check_space(report: Report, pending, needs, scratch: Path, scratch_fs: str, results: Path) -> None:
    scratch_free, scratch_dev = _free(scratch)
    results_free, results_dev = _free(results)
    results_need = ANALYSIS_BYTES + RESULT_BYTES_PER_RUN * len(needs)
    biggest = max(pending, key=lambda r: needs[r.key].scratch_bytes, default=None)
    peak = needs[biggest.key].scratch_bytes if biggest else 0
    together = peak + (results_need if scratch_dev == results_dev else 0)
    report.machine.append(f"scratch: {scratch} on {scratch_fs}, {_size(scratch_free)} free")
    if biggest and together > scratch_free:
        fields = ", ".join(needs[biggest.key].scratch_fields)
        report.problems.append(
            f"{fields}: {biggest.study} on {biggest.target} needs {_size(peak)} under the scratch directory "
            f"{scratch} ({scratch_fs}){' and the results ' + _size(results_need) if together > peak else ''}, "
            f"which has {_size(scratch_free)} free; make the target smaller or set BOATLOAD_SCRATCH to a larger file system")
    if scratch_dev != results_dev and results_need > results_free:
        report.problems.append(f"results: about {_size(results_need)} needed in {results}, {_size(results_free)} free")
    shm_peak = max((needs[r.key].shm_bytes for r in pending), default=0)
    if shm_peak:
        shm_free, _ = _free(Path("/dev/shm"))
        if shm_peak > shm_free:
            logs = sorted({r.target for r in pending if needs[r.key].shm_bytes == shm_peak})
            report.problems.append(
                f"targets.{logs[0]}.log.size_mb: the external log image needs {_size(shm_peak)} in /dev/shm, "
                f"which has {_size(shm_free)} free")


def machine_load(opts: dict) -> str:
    """One line: the processes not ours that keep the machine busy, and their share of a core."""
    seconds = opts["preflight_sample_s"]
    if not seconds:
        return "machine load: not sampled (interference.preflight_sample_s is 0)"
    found = machineload.busy(seconds)
    busy = machineload.line(found, opts["max_other_cpu"], seconds)
    total = sum(r["share"] for r in found)
    return busy or f"machine quiet: other processes used {100 * total:.1f} % of a core over {seconds:g} s"


# --------------------------------------------------------------------------
# the plan


def history(runs_dir: Path) -> dict[tuple[str, str, str], float]:
    """Seconds each (study, target, point) took when measured here before (the median over repetitions)."""
    seen: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for path in Path(runs_dir).glob("*/*/*/rep*.json"):
        try:
            doc = json.loads(path.read_text())
            start = datetime.fromisoformat(doc["started_at"].replace("Z", "+00:00"))
            end = datetime.fromisoformat(doc["finished_at"].replace("Z", "+00:00"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        study_name, target, point = path.parts[-4:-1]
        seen[(study_name, target, point)].append((end - start).total_seconds())
    return {key: statistics.median(values) for key, values in seen.items()}


# A study's analysis where it never ran here: its notebook, tables and figures
# (about 15-40 s a study on 2 cores when first written down).
ANALYSIS_ESTIMATE_S = 30.0
# papermill's own start and the kernel's, outside the duration papermill records
NOTEBOOK_START_S = 5.0
# the paper, the blog pages and the provenance after the last notebook, and a Snakemake start
# (a few seconds on 2 cores: bench/README.md "The looks' share of the budget")
PAPER_ESTIMATE_S = 10.0


def analysis_seconds(results: Path, name: str) -> float:
    """Seconds the study's analysis takes here: the kernel time papermill recorded
    in the study's executed notebook when it last ran, plus papermill's start;
    ANALYSIS_ESTIMATE_S where it never ran (or its record is unreadable)."""
    try:
        meta = json.loads((Path(results) / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
        return float(meta["metadata"]["papermill"]["duration"]) + NOTEBOOK_START_S
    except (OSError, ValueError, KeyError, TypeError):
        return ANALYSIS_ESTIMATE_S


def analysis_jobs() -> int:
    """How many analysis jobs run side by side here: the default profile's cores (they hold
    no `bench` resource), at most the machine's."""
    import yaml

    try:
        cores = int(yaml.safe_load((repo_root() / "profiles" / "default" / "config.yaml").read_text())["cores"])
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
        cores = 1
    return max(1, min(cores, os.cpu_count() or 1))


def tail_seconds(results: Path, names: list[str]) -> float:
    """Seconds after the last measurement: each study's analysis again, side by side on
    `analysis_jobs()` cores (no shorter than the longest one), then the paper."""
    each = [analysis_seconds(results, n) for n in names]
    return PAPER_ESTIMATE_S + max(max(each, default=0.0), sum(each) / analysis_jobs())


def estimates(runs: list[plan.Run], runs_dir: Path) -> dict[tuple, float]:
    """Seconds per run: as measured here before where there is a record, else the study's model."""
    before = history(runs_dir)
    return {run.key: before.get(run.key[:3], plan.estimate_s(run)) for run in runs}


def plan_lines(all_runs: list[plan.Run], pending: list[plan.Run], estimate: dict[tuple, float], report: Report) -> list[str]:
    """A table of the studies: runs, runs to measure, estimated time and the largest run's scratch space."""
    lines = [f"{'study':<12} {'runs':>5} {'to measure':>11} {'estimate':>9} {'scratch peak':>13}"]
    names = list(dict.fromkeys(r.study for r in sorted(all_runs, key=lambda r: r.key)))
    for name in names:
        todo = [r for r in pending if r.study == name]
        peak = max((plan.needs(r).scratch_bytes for r in todo), default=0)
        seconds = sum(estimate[r.key] for r in todo)
        lines.append(f"{name:<12} {sum(r.study == name for r in all_runs):>5} {len(todo):>11} "
                     f"{_duration(seconds) if todo else '-':>9} {_size(peak) if peak else '-':>13}")
    total = sum(estimate[r.key] for r in pending)
    lines.append(f"{'all':<12} {len(all_runs):>5} {len(pending):>11} {_duration(total) if pending else '-':>9}")
    return lines + [f"  {fact}" for fact in report.machine]


def preflight(config: dict, configfile: str, all_runs: list[plan.Run], runs_dir: Path, scratch: Path,
              results: Path, plan_errors: list[str] = ()) -> tuple[list[str], Report]:
    """The plan to print and the report; the caller refuses to go on if report.problems.
    `plan_errors`: the studies that could not make their runs (plan.runs)."""
    pending = plan.pending(all_runs, str(runs_dir))
    report = check(config, pending, scratch, results)
    report.problems[:0] = plan_errors
    if pending and not report.problems:
        report.machine.append(machine_load({**interference.DEFAULTS, **(config.get("interference") or {})}))
    head = f"boatload: plan for {configfile} (scale {config['scale']}, seed {config['seed']}), data in {runs_dir}"
    return [head, *plan_lines(all_runs, pending, estimates(all_runs, runs_dir), report)], report


