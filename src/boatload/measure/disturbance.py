"""When a timed phase counts as disturbed, and whether that disturbance was
passing or constant (the rules; boatload.measure.interference gathers the facts).

Disturbed: the measured threads (the worker's, or a peer tool's processes)
waited for a CPU on other processes' account (`waited_for_others`) for more
than `max_run_delay` of the time they had to run (`lost_share`: the phase's
seconds times the cores they kept busy on average); or, on a target backed by
the host's disk, other processes did more than `max_others_io` of that
disk's I/O in the phase; or the hypervisor gave more than `max_steal` of the
machine's CPU time to other guests (`steal_share`, /proc/stat's steal): on
this kind of machine that comes in spells of 10-30 s in which everything
runs slower (bench/README.md "Steal: the hypervisor's spells"). Other
processes' CPU alone disturbs nothing: a 1-thread worker on a 2-core machine
does not wait for a process on the other core, and its run delay says so.

Constant: the disturbing load was there in the window just before the phase
(`before` in the record); measuring again would meet it again, so the run is
kept and marked. Passing: it was not, and the run is measured again on a
fresh target. Steal is always passing: another guest's load comes and goes,
and the run waits for it to go before measuring again (boatload.measure.runner).
"""

from __future__ import annotations

from boatload.base.hostcpu import TICK_S

# Below this much CPU, other processes were not there at all (a few idle daemons add up to a tick or two).
RESOLUTION_S = 3 * TICK_S
# Others' I/O below this is a log line or a metadata write, whatever its share.
MIN_OTHERS_IO_MB = 1.0
# A window before the phase shorter than this cannot tell a load that stays.
MIN_BEFORE_S = 0.2


def _io_mb(io: dict) -> float:
    return io["read"] + io["write"]


def _host_mb(disk: dict) -> float:
    return (disk.get("host_read_mb") or 0.0) + (disk.get("host_write_mb") or 0.0)


def waited_for_others(rec: dict) -> float:
    """The part of the measured threads' run delay that other processes can account for, in seconds.

    Threads that wanted more CPU than the cores they may use (ran + waited
    beyond cores x seconds) wait for each other whatever else runs: that
    much of the delay is their own. Of the rest, other processes can account
    for the CPU they used while the measured threads wanted the cores: their
    CPU times the share of the cores' time the threads were runnable (ran
    or waited). Counting all of others' CPU instead called fio's 11 threads,
    runnable 60 % of the cores' time, disturbed by a shell's 0.04 s."""
    capacity = rec["cores"] * rec["seconds"]
    wanted = rec["ran_s"] + rec["run_delay_s"]
    own = max(0.0, wanted - capacity)
    overlap = min(1.0, wanted / capacity) if capacity > 0 else 1.0
    return max(0.0, min(rec["run_delay_s"] - own, rec["competing_cpu_s"] * overlap))


def lost_share(rec: dict) -> float:
    """The share of the phase's time the measurement lost to other processes, at most.

    Threads keeping L cores busy on average (ran + waited, over the phase,
    between 1 and the cores) lose their phase about waited_for_others / L:
    others' CPU displaces their work across all L lanes at once. A 1-thread
    phase loses all its waiting; filecount's 10 threads on 2 cores lose half
    of theirs, so a process using 10 % of one core costs them 5 %, not 10 %."""
    seconds = rec["seconds"]
    if seconds <= 0:
        return 0.0
    lanes = min(float(rec["cores"]), max(1.0, (rec["ran_s"] + rec["run_delay_s"]) / seconds))
    return waited_for_others(rec) / (lanes * seconds)


def judge(rec: dict, opts: dict, disk_bound: bool) -> list[str]:
    """What disturbed a measured phase: "cpu" (its threads waited), "io" (others used its disk), "steal"
    (the hypervisor gave the machine's CPU to other guests); [] if nothing."""
    seconds = rec["seconds"]
    if not rec["measured"] or seconds <= 0:
        return []
    by = []
    if lost_share(rec) > opts["max_run_delay"] and rec["competing_cpu_s"] >= RESOLUTION_S:
        by.append("cpu")
    others, host = _io_mb(rec["others_io_mb"]), _host_mb(rec["disk"])
    if disk_bound and others >= MIN_OTHERS_IO_MB and host > 0 and min(others, host) / host > opts["max_others_io"]:
        by.append("io")
    # a record made before steal was recorded has none; below a few ticks it is the clock's grain
    if (rec.get("steal_share") or 0.0) > opts.get("max_steal", 1.0) and rec["cpu_s"].get("steal", 0.0) >= RESOLUTION_S:
        by.append("steal")
    return by


def persistence(rec: dict, by: list[str], opts: dict) -> str:
    """"constant" when every disturbance of `by` was already there just before the phase, else "passing".

    CPU: a load is made of sessions (a build, a shell's job, a daemon). The
    sessions that had already used CPU in the window before the phase are the
    load that was there; those that had not (`new_competing_cores`) came with
    the phase. The disturbance is passing when the new load used more than
    `max_other_cpu` of a core and at least as much CPU as the old one in the
    phase; else the old load was the most of it, and measuring again would
    meet it again.
    I/O: the others' rate before was at least half their rate in the phase.
    Steal: never constant (another guest's load comes and goes)."""
    before = rec["before"]
    if before["seconds"] < MIN_BEFORE_S:
        return "passing"  # nothing to tell by: measuring again is the safe side
    there = []
    if "cpu" in by:
        new = rec["new_competing_cores"] * rec["seconds"]
        old = max(0.0, rec["competing_cpu_s"] - new)
        there.append(not (new > opts["max_other_cpu"] * rec["seconds"] and new >= old))
    if "io" in by:
        during = _io_mb(rec["others_io_mb"]) / rec["seconds"]
        there.append(_io_mb(before["others_io_mb"]) / before["seconds"] >= 0.5 * during)
    if "steal" in by:
        there.append(False)
    return "constant" if there and all(there) else "passing"


def _who(top: list[dict]) -> str:
    return ", ".join(f"{t['comm']} {t['cpu_s'] + t['children_s']:.2f} s" for t in top if t["kind"] != "kernel_threads")


def why(rec: dict) -> str:
    """One line: which phase, what it waited for, who was there, passing or constant."""
    parts = []
    if "cpu" in rec["disturbed_by"]:
        # a passing load is named by the processes that came with the phase
        top = rec["new_others"] if rec["disturbance"] == "passing" and rec.get("new_others") else rec["top_others"]
        parts.append(f"its {rec['threads']} thread{'s' if rec['threads'] != 1 else ''} waited "
                     f"{100 * rec['run_delay_share']:.1f} % of the phase for a CPU, "
                     f"{100 * rec['waited_for_others_s'] / rec['seconds']:.1f} % on other processes' account, "
                     f"{100 * rec['lost_share']:.1f} % of its time lost (limit {100 * rec['max_run_delay']:g} %) "
                     f"while other processes used {100 * (rec['competing_cores'] or 0):.1f} % of a core "
                     f"({_who(top) or 'processes that exited before the phase ended'})")
    if "io" in rec["disturbed_by"]:
        parts.append(f"other processes did {_io_mb(rec['others_io_mb']):.1f} MB of I/O, "
                     f"{100 * rec['others_io_share']:.0f} % of the host disk's (limit {100 * rec['max_others_io']:g} %)")
    if "steal" in rec["disturbed_by"]:
        parts.append(f"the hypervisor gave {100 * rec['steal_share']:.0f} % of the machine's CPU time to other guests "
                     f"(steal; limit {100 * rec['max_steal']:g} %)")
    before = rec["before"]
    when = (f"a constant load: {100 * before['competing_cores']:.1f} % of a core and "
            f"{_io_mb(before['others_io_mb']):.1f} MB of others' I/O in the {before['seconds']:.1f} s before it"
            if rec["disturbance"] == "constant" else
            "passing: another guest's load, waited out before measuring again" if rec["disturbed_by"] == ["steal"] else
            "passing: not there just before the phase")
    return f"{rec['tool']} phase {rec['phase']}: " + "; ".join(parts) + f" ({when})"
