"""How much a timed phase's rate strays from its point's median, by the steal the phase saw:
the hypervisor giving the machine's CPU to other guests (bench/README.md "Steal: the
hypervisor's spells").

    uv run python bench/steal.py CLONE [CLONE ...]

From CLONE/data/runs/<host>/<study>/<target>/<point>/rep*.json: every phase of a run's result
that has a rate (`ops_per_s`) and a measured phase of the same name in its interference record,
and every tool's IOPS (filecount: `tools.<tool>.iops`) with the measured phase of that tool;
its rate over the median rate of its (study, target, point, phase) across runs; the steal share
of that phase (`steal_share`, or, in records made before it was recorded, the steal seconds
over the phase's seconds times its cores). Prints, per band of steal, the phases in it and the
median and 90th percentile of |log(rate / median)|; then the runs whose worst phase saw more
steal than each limit, and their seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from boatload.base.hostcpu import steal_share

BANDS = ((0.0, 0.02), (0.02, 0.05), (0.05, 0.1), (0.1, 0.2), (0.2, 1.01))
LIMITS = (0.1, 0.2, 0.3)


def steal_of(phase: dict) -> float:
    if phase.get("steal_share") is not None:
        return phase["steal_share"]
    return steal_share(phase["cpu_s"].get("steal", 0.0), phase["seconds"], cpus=phase["cores"])


def _runs(clone: Path):
    for path in sorted(clone.glob("data/runs/*/*/*/*/rep*.json")):
        doc = json.loads(path.read_text())
        record = doc.get("interference") or {}
        phases = [p for p in record.get("phases", []) if p.get("measured") and p["seconds"] > 0]
        if phases:
            yield path, doc, phases


def deviations(clone: Path) -> list[tuple[float, float]]:
    """(steal share, rate / its point's median) of every phase with a rate."""
    groups = defaultdict(list)
    for path, doc, phases in _runs(clone):
        by_name = {p["phase"]: p for p in phases}
        result = doc.get("result") or {}
        for ph in result.get("phases") or []:
            name = ph.get("phase") or ph.get("name")
            monitored = by_name.get(name) or by_name.get(ph.get("name"))
            if ph.get("ops_per_s") and monitored:
                groups[(*path.parts[-5:-1], name)].append((steal_of(monitored), ph["ops_per_s"]))
        # filecount: one IOPS per tool, the worker's timed phase "io", a peer's named for the tool
        by_tool = {("boatload-worker" if p["tool"] == "worker" else p["tool"]): p for p in phases}
        for tool, out in (result.get("tools") or {}).items():
            if (out or {}).get("iops") and tool in by_tool:
                groups[(*path.parts[-5:-1], tool)].append((steal_of(by_tool[tool]), out["iops"]))
    out = []
    for rows in groups.values():
        if len(rows) >= 3:
            median = statistics.median(rate for _, rate in rows)
            out.extend((steal, rate / median) for steal, rate in rows)
    return out


def band_table(devs: list[tuple[float, float]]) -> list[dict]:
    table = []
    for lo, hi in BANDS:
        d = sorted(abs(math.log(ratio)) for steal, ratio in devs if lo <= steal < hi)
        if d:
            table.append({"band": (lo, hi), "phases": len(d), "median": d[len(d) // 2], "p90": d[int(len(d) * 0.9)]})
    return table


def over_limits(clone: Path) -> dict[float, tuple[int, float]]:
    """Limit -> (runs whose worst phase saw more steal, their seconds)."""
    worst = [(max(steal_of(p) for p in phases), sum((doc.get("seconds") or {}).values()))
             for _, doc, phases in _runs(clone)]
    return {lim: (sum(1 for s, _ in worst if s > lim), sum(t for s, t in worst if s > lim)) for lim in LIMITS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("clones", nargs="+", type=Path)
    args = ap.parse_args(argv)
    for clone in args.clones:
        devs = deviations(clone)
        print(f"{clone}: {len(devs)} phases with a rate")
        for row in band_table(devs):
            lo, hi = row["band"]
            print(f"  steal {lo:.2f}-{min(hi, 1):.2f}: {row['phases']:4d} phases, |log(rate / median)| "
                  f"median {row['median']:.3f}, 90th percentile {row['p90']:.3f}")
        for lim, (n, secs) in over_limits(clone).items():
            print(f"  runs with a phase over {lim:.0%} steal: {n} ({secs:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
