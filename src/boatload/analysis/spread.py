"""Where noise comes from: each point's spread across its runs.

The spread of a point is the coefficient of variation (CV) of its runs'
rates: the sample standard deviation (n - 1) over the mean. Every notebook
adds it to its per-point table (`with_spread`) and names its noisiest points
in its summary (`noisiest`), so the paper's conditions section can name the
noisiest points of the whole run beside what the interference monitor did
about their runs (the tidy tables' `redone` and `disturbed`, boatload.analysis.tidy).
"""

from __future__ import annotations

import math
import statistics

import polars as pl

#: the summary's noisiest points per study
TOP = 5


def point_spread(rates) -> float | None:
    """The CV of a point's rates; None with fewer than two finite rates or a mean of 0."""
    values = [float(r) for r in rates or [] if r is not None and math.isfinite(r)]
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / abs(mean) if mean != 0 else None


def with_spread(frame: pl.DataFrame, rates: str = "rates", out: str = "cv") -> pl.DataFrame:
    """`frame` (a per-point table with a list column `rates`) with the point's CV in `out`."""
    return frame.with_columns(pl.Series(out, [point_spread(r) for r in frame[rates].to_list()], dtype=pl.Float64))


def noisiest(runs: pl.DataFrame, point: list[str], rate: str, top: int = TOP) -> list[dict]:
    """The `top` points of `runs` (one row per measured run, a tidy table) by
    the CV of their `rate`: target, point (the other `point` columns, joined),
    cv, runs, and of those runs the ones measured again after a passing load
    disturbed them (redone) and the ones kept disturbed."""
    if runs.height == 0:
        return []
    others = [c for c in point if c != "target"]
    record = [c for c in ("redone", "disturbed") if c in runs.columns]
    grouped = runs.group_by(["target", *others], maintain_order=True).agg(
        pl.col(rate).alias("_rates"), *(pl.col(c).alias(f"_{c}") for c in record))
    rows = []
    for r in grouped.iter_rows(named=True):
        cv = point_spread(r["_rates"])
        if cv is None:
            continue
        # runs without an interference record (measured before the runner kept one) count as unknown
        redone = [x for x in r.get("_redone") or [] if x is not None]
        disturbed = [x for x in r.get("_disturbed") or [] if x is not None]
        rows.append({"target": r["target"], "point": " ".join(str(r[c]) for c in others), "cv": cv,
                     "runs": len(r["_rates"]), "redone": sum(x > 0 for x in redone) if redone else None,
                     "still_disturbed": sum(disturbed) if disturbed else None})
    return sorted(rows, key=lambda e: (-e["cv"], e["target"], e["point"]))[:top]
