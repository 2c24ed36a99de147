"""The journal's random stat, a run's rate taken two ways: over all its passes
(stats over their summed seconds) and its fastest pass. For each checkout
given (a quick run's clone: its data/runs and results/tables), and each of its
claims of no difference on the random stat, the project's verdict on the first
rounds' runs (boatload.analysis.verdict.no_difference at the summary's
settings, as the workflow's first analysis gives it) with the runs' rates
taken either way (boatload.studies.journal.phases_of), and whether it decides
the claim. Prints a line per checkout, with the median spread (CV) of a
point's rates either way.

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

from boatload.analysis.spread import point_spread
from boatload.analysis.verdict import DECIDED, Rule, no_difference
from boatload.studies.journal import phases_of

WAYS = {"all passes": "ops_per_s_all_passes", "fastest pass": "ops_per_s"}


def stat_rates(checkout: Path, target: str, rounds: int) -> dict[str, list[float]]:
    """The point's first `rounds` runs' stat rates, both ways the study merges a run's passes."""
    out: dict[str, list[float]] = {way: [] for way in WAYS}
    runs = sorted(checkout.glob(f"data/runs/*/journal/{target}/meta/rep*.json"),
                  key=lambda p: int(p.stem.removeprefix("rep")))
    for path in runs[:rounds]:
        worker = json.loads(path.read_text())["result"].get("worker_result")
        stat = next((p for p in phases_of(worker) if p["phase"] == "random_stat"), None) if worker else None
        if stat and stat["ops_per_s"]:
            for way, column in WAYS.items():
                out[way].append(stat[column])
    return out


def stat_claims(checkout: Path) -> tuple[list[dict], Rule]:
    summary = json.loads((checkout / "results/tables/journal-summary.json").read_text())
    claims = [c for c in summary["verdicts"] if c.get("phase") == "random_stat" and c.get("test") == "no difference"]
    return claims, Rule(**summary["verdict_settings"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=4, help="the first rounds' runs a point (default 4)")
    args = ap.parse_args(argv)
    totals = dict.fromkeys(WAYS, 0)
    claims_seen = 0
    for checkout in args.checkouts:
        claims, rule = stat_claims(checkout)
        decided = dict.fromkeys(WAYS, 0)
        rates = {}
        for c in claims:
            for name in (c["numerator"], c["denominator"]):
                rates.setdefault(name, stat_rates(checkout, name, args.rounds))
            for way in WAYS:
                verdict = no_difference(c["claim"], None, rates[c["numerator"]][way],
                                        rates[c["denominator"]][way], rule)["verdict"]
                decided[way] += verdict in DECIDED
        cvs = {way: statistics.median(point_spread(v[way]) for v in rates.values()) for way in WAYS}
        claims_seen += len(claims)
        for way in WAYS:
            totals[way] += decided[way]
        print(f"{checkout}: {len(claims)} stat claims; decided, all passes {decided['all passes']}, fastest pass "
              f"{decided['fastest pass']}; median CV of a point, all passes {cvs['all passes']:.1%}, "
              f"fastest pass {cvs['fastest pass']:.1%}")
    print(f"in all: {claims_seen} claims; decided, all passes {totals['all passes']}, "
          f"fastest pass {totals['fastest pass']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
