"""How busy the machine is with processes that are not ours, sampled over a
few seconds: the preflight's one line and the wait for a quiet machine
that `interference.wait_quiet_s` asks of each run (the wait for the
hypervisor's steal to pass: boatload.base.hostcpu)."""

from __future__ import annotations

import os
import time

from boatload.base.hostcpu import TICK_S, sampled_until
from boatload.measure.procfs import orchestrator_root, processes, reaped, subtree, used_ticks


def busy(seconds: float, ours: int | None = None) -> list[dict]:
    """Processes outside our own tree (`ours`: the orchestrator, else this
    process) that used CPU over `seconds`, the busiest first, each with its
    share of one core; a parent counts the children it reaped meanwhile (a
    compiler's short-lived children show as its make)."""
    a = processes(with_io=False)
    time.sleep(seconds)
    b = processes(with_io=False)
    mine = subtree(b, ours or orchestrator_root() or os.getpid()) | {os.getpid()}
    gone = reaped(a, b)
    out = []
    for pid, p in b.items():
        if pid in mine or p.kthread:
            continue
        used = used_ticks(pid, a, b, gone)
        if used > 0:
            out.append({"pid": pid, "comm": p.comm, "share": round(used * TICK_S / seconds, 3)})
    return sorted(out, key=lambda r: -r["share"])


def line(found: list[dict], limit: float, seconds: float) -> str | None:
    """One line naming the processes above `limit` of a core, or None if there are none."""
    loud = [r for r in found if r["share"] > limit]
    if not loud:
        return None
    total = sum(r["share"] for r in found)
    names = ", ".join(f"{r['comm']} (pid {r['pid']}) {100 * r['share']:.0f} %" for r in loud[:5])
    more = f" and {len(loud) - 5} more" if len(loud) > 5 else ""
    return (f"machine busy: other processes used {100 * total:.0f} % of a core over {seconds:g} s: {names}{more}; "
            "a run that waits for a CPU beside a load that stays is kept and marked constant, not measured again")


def wait_quiet(limit_s: float, max_other_cpu: float, window_s: float = 1.0) -> dict:
    """Sample in windows of `window_s` until other processes use at most
    `max_other_cpu` of a core, or `limit_s` has passed; what it found."""
    found, waited, quiet = sampled_until(lambda: busy(window_s),
                                         lambda f: sum(r["share"] for r in f) <= max_other_cpu, limit_s)
    return {"waited_s": round(waited, 2), "quiet": quiet, "other_cores": round(sum(r["share"] for r in found), 3),
            "busiest": found[:3]}
