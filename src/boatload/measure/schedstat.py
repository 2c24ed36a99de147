"""Time each thread spent runnable but waiting for a CPU (run delay), from
/proc/PID/task/TID/schedstat: "<on-CPU ns> <run delay ns> <timeslices>".

The kernel keeps it per thread and drops it when the thread is reaped, so
the monitor reads it at both edges of a phase (the worker keeps its threads
alive until the end snapshot, native/src/phase.c) and, for peer tools whose
processes come and go inside the phase, at every sample in between.
"""

from __future__ import annotations

import os

Delays = dict[tuple[int, int], tuple[int, int]]  # (pid, tid) -> (on-CPU ns, run delay ns)


def run_delays(pids) -> Delays:
    """The CPU time and run delay of every thread of `pids` that is still there."""
    out: Delays = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    on_cpu, delay = f.read().split()[:2]
                out[(pid, int(tid))] = (int(on_cpu), int(delay))
            except (OSError, IndexError, ValueError):
                continue
    return out


def waited_s(before: Delays, after: Delays, seen: Delays) -> tuple[float, float, int]:
    """Seconds the threads ran and waited for a CPU between `before` and
    `after`, each summed over the threads, and how many threads that was. A
    thread gone by the end counts with the last value `seen` for it (the
    sampler's); one born inside the phase counts from zero."""
    last = {**seen, **after}
    ran = sum(max(v[0] - before.get(key, (0, 0))[0], 0) for key, v in last.items())
    waited = sum(max(v[1] - before.get(key, (0, 0))[1], 0) for key, v in last.items())
    return ran / 1e9, waited / 1e9, len(last)
