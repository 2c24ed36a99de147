"""Is a quick run's noise per run, or slow minutes that runs next to each other share?

    uv run python bench/neighbours.py CLONE [CLONE ...]

For each raw run of CLONE/data/runs/<host>/ (the kept attempt; points with at
least three runs), its slowness: over its timed phases (the measured phases of
its interference record), the log of each phase's seconds over the median of
that phase at its point, weighted by the phase's seconds (positive: slower
than the point's median). The runs in the order they started, all studies
together: the correlation of a run's slowness with that of the run `lag`
runs later. Slow minutes shared by neighbours show as a clear positive
correlation at small lags (points whose phases run for a set time,
filecount's, are left out: their seconds do not move); blocking a claim's two sides next to each other in
a round would then narrow its interval, and would not if there is none. Also
the correlation of a run's slowness with the share of its timed seconds
the hypervisor stole (/proc/stat's steal, in the interference record).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from quickrun import _when

LAGS = (1, 2, 3, 5, 10, 20)
# a point whose every phase took within this share of its median seconds in every run ran for a set time
FIXED = 0.01


def runs_of(clone: Path) -> list[dict]:
    """Each kept raw run with its timed phases' seconds and stolen seconds, in the order they started."""
    runs = []
    for raw in sorted(clone.glob("data/runs/*/*/*/*/rep*.json")):
        if "archive" in raw.parts:
            continue
        doc = json.loads(raw.read_text())
        phases = [p for p in (doc.get("interference") or {}).get("phases") or [] if p.get("measured", True)]
        if not phases or "started_at" not in doc:
            continue
        runs.append({"point": raw.parent, "study": doc["study"], "start": _when(doc["started_at"]),
                     "seconds": [p["seconds"] for p in phases],
                     "steal": sum((p.get("cpu_s") or {}).get("steal", 0.0) for p in phases)})
    return sorted(runs, key=lambda r: r["start"])


def slowness(runs: list[dict], min_runs: int = 3) -> list[dict]:
    """The runs of points with at least `min_runs`, each with its `slowness` (see the module's text)."""
    by_point = defaultdict(list)
    for r in runs:
        by_point[r["point"]].append(r)
    kept = []
    for point_runs in by_point.values():
        if len(point_runs) < min_runs:
            continue
        phases = min(len(r["seconds"]) for r in point_runs)
        medians = [statistics.median(r["seconds"][i] for r in point_runs) for i in range(phases)]
        if all(abs(r["seconds"][i] / medians[i] - 1.0) < FIXED for r in point_runs for i in range(phases)
               if medians[i] > 0):
            continue  # phases that run for a set time (filecount's): their rate is in the ops, not the seconds
        for r in point_runs:
            pairs = [(s, m) for s, m in zip(r["seconds"], medians) if s > 0 and m > 0]
            total = sum(s for s, _ in pairs)
            if total > 0:
                kept.append({**r, "slowness": sum(s * math.log(s / m) for s, m in pairs) / total,
                             "steal_share": r["steal"] / sum(r["seconds"])})
    return sorted(kept, key=lambda r: r["start"])


def report(clone: Path) -> str:
    runs = slowness(runs_of(clone))
    if len(runs) < max(LAGS) + 3:
        return f"{clone}: {len(runs)} runs of points with three or more: too few"
    x = [r["slowness"] for r in runs]
    lags = ", ".join(f"lag {k}: {statistics.correlation(x[:-k], x[k:]):+.3f}" for k in LAGS)
    steal = statistics.correlation([r["steal_share"] for r in runs], x)
    return (f"{clone}: {len(runs)} runs; a run's slowness against the run {lags}; "
            f"against its stolen share {steal:+.3f} ({sum(r['steal'] for r in runs):.2f} s stolen in all)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("clones", nargs="+", type=Path, help="clones that ran make reproduce")
    for clone in parser.parse_args(argv).clones:
        print(report(clone))
    return 0


if __name__ == "__main__":
    sys.exit(main())
