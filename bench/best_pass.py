"""The journal's random stat, a run's rate taken two ways: over all its passes
(stats over their summed seconds) and its fastest pass. For each checkout
given (a quick run's clone: its data/runs and results/tables), and each of its
claims of no difference on the random stat, the interval of the first rounds
at the level the workflow's first analysis uses for them (two one-sided tests)
with the runs' rates taken either way, and whether it decides the claim
(equivalent: inside the margin; not equivalent: wholly outside). Prints a line
per checkout, then the spread (CV) of a point's rates either way.

    uv run python bench/best_pass.py CHECKOUT [CHECKOUT ...] [--rounds 4]

Reads the raw runs' worker records, so it works on runs made before the
study took the fastest pass.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from boatload.analysis.intervals import ratio_interval, tost_level


def stat_rates(checkout: Path, target: str, rounds: int) -> dict[str, list[float]]:
    """The point's first `rounds` runs' stat rates: over all passes and the fastest pass."""
    out: dict[str, list[float]] = {"all passes": [], "fastest pass": []}
    runs = sorted(checkout.glob(f"data/runs/*/journal/{target}/meta/rep*.json"),
                  key=lambda p: int(p.stem.removeprefix("rep")))
    for path in runs[:rounds]:
        worker = json.loads(path.read_text())["result"].get("worker_result") or {}
        passes = [ph for ph in worker.get("phases", []) if ph["name"] == "stat" and ph["seconds"] > 0]
        if not passes:
            continue
        out["all passes"].append(sum(ph["ops"] for ph in passes) / sum(ph["seconds"] for ph in passes))
        out["fastest pass"].append(max(ph["ops"] / ph["seconds"] for ph in passes))
    return out


def stat_claims(checkout: Path) -> tuple[list[dict], float, float]:
    summary = json.loads((checkout / "results/tables/journal-summary.json").read_text())
    rule = summary["verdict_settings"]
    claims = [c for c in summary["verdicts"] if c.get("phase") == "random_stat" and c.get("test") == "no difference"]
    return claims, float(rule["level"]), float(rule["equivalence_margin"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=4, help="the first rounds' runs a point (default 4)")
    args = ap.parse_args(argv)
    totals = {"all passes": 0, "fastest pass": 0}
    claims_seen = 0
    for checkout in args.checkouts:
        claims, level, margin = stat_claims(checkout)
        decided = {"all passes": 0, "fastest pass": 0}
        cvs: dict[str, list[float]] = {"all passes": [], "fastest pass": []}
        rates = {}
        for c in claims:
            for name in (c["numerator"], c["denominator"]):
                rates.setdefault(name, stat_rates(checkout, name, args.rounds))
            for way in decided:
                a, b = rates[c["numerator"]][way], rates[c["denominator"]][way]
                r = ratio_interval(a, b, tost_level(level))
                if r.low is not None and (1 / margin <= r.low and r.high <= margin or r.low > margin
                                          or r.high < 1 / margin):
                    decided[way] += 1
        for way in cvs:
            cvs[way] = [statistics.pstdev(v[way]) / statistics.fmean(v[way]) for v in rates.values()
                        if len(v[way]) > 1]
        claims_seen += len(claims)
        for way in decided:
            totals[way] += decided[way]
        print(f"{checkout}: {len(claims)} stat claims; decided, all passes {decided['all passes']}, fastest pass "
              f"{decided['fastest pass']}; median CV of a point, all passes "
              f"{statistics.median(cvs['all passes']):.1%}, fastest pass {statistics.median(cvs['fastest pass']):.1%}")
    print(f"in all: {claims_seen} claims; decided, all passes {totals['all passes']}, "
          f"fastest pass {totals['fastest pass']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
