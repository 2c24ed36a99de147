"""Does a reference stat beside the target's cancel the host's moment? (#38)

The journal study's random stat goes over cached files and does no I/O, so what spreads its rate from
run to run is the host. With `stat_reference` each stat pass is followed by the same pass paired file by
file with as many cached files on a tmpfs of the run's own (boatload.measure.reference), and the stat's
claims of no difference compare each run's stat over its reference's. This prints, per point, the
run-to-run spread (sample SD of the log) of the stat's rate (its fastest lone pass) and of its rate over
the reference's (the number the claims compare). Raw runs of before the paired passes (each lone stat
pass followed by a lone reference pass) are read too: their ratio is the fastest over the fastest.

    python bench/stat_reference.py --runs 16 [--target xfs-log-internal]   # as root: runs them now
    python bench/stat_reference.py CHECKOUT [CHECKOUT ...]                   # a quick run's raw results

The first runs the quick config's journal job on the target N times in a row, as `make reproduce`
runs it (a fresh file system each), in a scratch directory of its own.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def spread_line(label: str, pairs: list[tuple[float, float]]) -> str:
    """pairs: (stat rate, stat over reference) per run."""
    if len(pairs) < 3:
        return f"{label}: {len(pairs)} runs, too few"
    stat = [math.log(a) for a, _ in pairs]
    ratio = [math.log(b) for _, b in pairs]
    return (f"{label}: {len(pairs)} runs, spread stat {statistics.stdev(stat):.2%}, "
            f"stat over reference {statistics.stdev(ratio):.2%}")


def stat_and_reference(doc: dict) -> tuple[float, float] | None:
    """A journal run's stat rate (its table row's, the fastest lone pass) and its rate over the reference's
    (the row's `stat_vs_reference`; a raw run of before the paired passes: fastest over fastest); None
    without both."""
    from boatload.studies.journal import rows

    row = next((r for r in rows(doc) if r["phase"] == "random_stat" and r["status"] == "ok"), None)
    if row is None or not row["ops_per_s"]:
        return None
    lone_reference = (doc["result"].get("stat_reference") or {}).get("ops_per_s")
    ratio = row["stat_vs_reference"] or (row["ops_per_s"] / lone_reference if lone_reference else None)
    return (row["ops_per_s"], ratio) if ratio else None


def from_raw(path: Path) -> tuple[float, float] | None:
    return stat_and_reference(json.loads(path.read_text()))


def checkouts(paths: list[str]) -> None:
    for checkout in map(Path, paths):
        points = sorted({p.parent for p in checkout.glob("data/runs/*/journal/*/meta/rep*.json")})
        every = []
        for point in points:
            pairs = [x for x in map(from_raw, sorted(point.glob("rep*.json"))) if x]
            every += [(a / statistics.median(p[0] for p in pairs), b / statistics.median(p[1] for p in pairs))
                      for a, b in pairs]
            print(spread_line(f"{checkout.name} {point.parent.name}", pairs))
        print(spread_line(f"{checkout.name} all points (each over its median)", every))


def live(runs: int, target: str) -> None:
    import yaml

    with tempfile.TemporaryDirectory(prefix="boatload-bench-") as scratch:
        os.environ["BOATLOAD_SCRATCH"] = scratch
        from boatload.studies import journal

        config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        job = next(j for j in journal.jobs(config) if j["target"]["name"] == target and j["point"] == "meta")
        pairs = []
        for i in range(runs):
            doc = journal.run({**job, "rep": i + 1, "seed": job["seed"] + 1000 * i})
            pair = stat_and_reference(doc) if doc["result"]["status"] == "ok" else None
            if pair is None:
                sys.exit(f"run {i + 1}: {doc['result'].get('reason') or 'no reference'}")
            pairs.append(pair)
            print(f"run {i + 1}: stat {pair[0]:,.0f}/s, over its reference {pair[1]:.3f}", flush=True)
        print(spread_line(f"{target}, {runs} runs now", pairs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="*", help="quick runs' clones to read (data/runs/*/journal)")
    ap.add_argument("--runs", type=int, help="run the quick config's journal job this many times now (root)")
    ap.add_argument("--target", default="xfs-log-internal")
    args = ap.parse_args()
    if args.runs:
        live(args.runs, args.target)
    if args.checkouts:
        checkouts(args.checkouts)
    if not args.runs and not args.checkouts:
        ap.error("give --runs N or a checkout")


if __name__ == "__main__":
    main()
