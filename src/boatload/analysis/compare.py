"""What changed between two result sets: B's rate over A's at every point
both measured, with a verdict against a stated margin.

A point is a study's workload on one target: the tidy table's sort columns
without the repetition counters (`rep`, and `run` within a job), and the
columns that carry one of the study's settings (a file size, a thread count),
so that two sets measured with different settings do not pair their points.
A point's runs are its jobs: one rate per job (the median of the job's rows
where a job measures several times), as the job is the unit that is
repeated independently.

The verdicts, B over A, margin m (config `compare.margin`) and level L:

* faster / slower: the interval at L lies wholly above m / below 1/m;
* same: the (2L - 1) interval lies within [1/m, m] (two one-sided tests at
  1 - L each, as :func:`boatload.analysis.verdict.decide_equivalence`);
* inconclusive: neither, with the runs per side that would settle it at the
  ratio and spread observed (or too few runs for an interval at all).

The interval of one point is :func:`point_interval`, the one place a paired
interval (runs of one round on both sides) would go in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from boatload.analysis.intervals import (
    check_level,
    RatioInterval,
    ratio_interval,
    runs_for_interval,
    runs_to_decide_equivalence,
    runs_to_settle,
    tost_level,
)

__all__ = [
    "FASTER", "SLOWER", "SAME", "INCONCLUSIVE", "VERDICTS", "Settings", "compare_tables", "judge",
    "point_columns", "point_interval", "point_runs", "study_mean", "t_quantile",
]

FASTER, SLOWER, SAME, INCONCLUSIVE = "faster", "slower", "same", "inconclusive"
#: worst first: the order of the table
VERDICTS = (SLOWER, INCONCLUSIVE, SAME, FASTER)
#: columns that count repetitions, not workloads
REPEAT_COLUMNS = ("rep", "run")
#: a point column shown by its readable twin when the table has one
LABEL_TWINS = {"step": "phase", "method": "method_label"}


@dataclass(frozen=True)
class Settings:
    """The comparison's margin and level (config `compare.margin`; the verdict rule's level)."""

    margin: float = 1.05
    level: float = 0.95

    def __post_init__(self) -> None:
        if not self.margin > 1.0:
            raise ValueError(f"compare.margin: must be above 1, not {self.margin}")
        check_level(self.level)

    @property
    def tost_level(self) -> float:
        """The interval two one-sided tests at 1 - level each read."""
        return tost_level(self.level)


def point_interval(a: Sequence[float], b: Sequence[float], level: float) -> RatioInterval:
    """B's rate over A's with its interval at `level`. The runs of A and B are
    independent samples (Hodges-Lehmann with exact Mann-Whitney bounds)."""
    return ratio_interval(b, a, level)


def _runs_needed(ratio: float, log_sd: float | None, s: Settings) -> int | None:
    """Runs per side that would settle an inconclusive point at the ratio and
    spread observed: to show it within the margin (two one-sided tests) when
    it lies inside, to show it beyond the margin when it lies outside."""
    if log_sd is None:
        return None
    if abs(math.log(ratio)) < math.log(s.margin):
        return runs_to_decide_equivalence(ratio, log_sd, s.margin, s.level)
    # the distance from the margin's edge, as runs_to_settle measures it from 1
    beyond = ratio / s.margin if ratio > 1.0 else ratio * s.margin
    return runs_to_settle(beyond, log_sd, s.level)


def judge(a: Sequence[float], b: Sequence[float], s: Settings,
          interval: Callable[[Sequence[float], Sequence[float], float], RatioInterval] = point_interval) -> dict:
    """The verdict of one point from A's and B's runs (rates)."""
    r = interval(a, b, s.level)
    tost = interval(a, b, s.tost_level)
    verdict, why = INCONCLUSIVE, None
    if r.low is not None and r.low > s.margin:
        verdict = FASTER
    elif r.high is not None and r.high < 1.0 / s.margin:
        verdict = SLOWER
    elif tost.low is not None and tost.low >= 1.0 / s.margin and tost.high <= s.margin:
        verdict = SAME
    elif tost.low is None:
        why = f"too few runs for a {_pct(s.tost_level)} interval"
    elif r.low is None:
        why = f"too few runs for a {_pct(s.level)} interval"
    needed = None
    if verdict == INCONCLUSIVE:
        needed = _runs_needed(r.ratio, r.log_sd, s)
        least = runs_for_interval(s.level)
        needed = max(needed or least, least)
    return {
        "ratio": r.ratio, "low": r.low, "high": r.high, "coverage": r.coverage,
        "tost_low": tost.low, "tost_high": tost.high,
        "runs": {"a": len(a), "b": len(b)}, "log_sd": r.log_sd,
        "verdict": verdict, "why": why, "runs_to_settle": needed,
    }


def _pct(x: float) -> str:
    return f"{round(x * 100, 1):g} %"


# --- the points of two tables ------------------------------------------------


def point_columns(study, frame: pl.DataFrame) -> list[str]:
    """What identifies a point in a study's tidy table (see the module's docstring)."""
    settings = set(study.settings.get("properties", {}))
    sort = [c for c in study.sort if c not in REPEAT_COLUMNS]
    workload = [c for c in study.columns if c in settings and c not in sort]
    return [c for c in [*sort, *workload] if c in frame.columns]


def point_runs(study, frame: pl.DataFrame) -> dict[tuple, dict]:
    """point key -> {"key": {column: value}, "label", "rates": one per job},
    from the rows that measured (status ok, a positive rate)."""
    rate = study.original.rate[0]
    keys = point_columns(study, frame)
    ok = frame.filter((pl.col("status") == "ok") & pl.col(rate).is_not_null() & (pl.col(rate) > 0))
    twins = [LABEL_TWINS[c] for c in keys if c in LABEL_TWINS and LABEL_TWINS[c] in frame.columns]
    jobs = ok.group_by([*keys, *twins, "rep"], maintain_order=True).agg(pl.col(rate).median().alias("rate"))
    out: dict[tuple, dict] = {}
    for row in jobs.sort([*keys, "rep"], nulls_last=True).iter_rows(named=True):
        key = tuple(row[c] for c in keys)
        label = _label(row, [c for c in keys if c in study.sort])  # the settings are in the provenance diff
        entry = out.setdefault(key, {"key": {c: row[c] for c in keys}, "label": label, "rates": []})
        entry["rates"].append(float(row["rate"]))
    return out


def _label(row: dict, keys: list[str]) -> str:
    parts = []
    for c in keys:
        if c == "target":
            continue
        twin = LABEL_TWINS.get(c)
        value = row.get(twin) if twin in row else row[c]
        parts.append(f"{twin if twin in row else c} {value}")
    return ", ".join(parts)


def compare_tables(study, a: pl.DataFrame, b: pl.DataFrame, s: Settings) -> dict:
    """Every point of one study: judged where both sets have it, else listed
    as in one set only; and the study's geometric mean of the ratios."""
    pa, pb = point_runs(study, a), point_runs(study, b)
    points, only_a, only_b = [], [], []
    for key in list(pa) + [k for k in pb if k not in pa]:
        x, y = pa.get(key), pb.get(key)
        base = {"study": study.name, "target": (x or y)["key"].get("target"), "point": (x or y)["label"],
                "key": (x or y)["key"]}
        if x is None or y is None:
            (only_a if y is None else only_b).append(base)
            continue
        points.append({**base, **judge(x["rates"], y["rates"], s),
                       "a_median": float(np.median(x["rates"])), "b_median": float(np.median(y["rates"]))})
    return {"points": points, "only_a": only_a, "only_b": only_b,
            "mean": study_mean([p["ratio"] for p in points], s)}


# --- a study's geometric mean ------------------------------------------------


def _t_two_sided(t: float, dof: int) -> float:
    """P(|T| < t) for Student's t with an integer `dof`: the closed forms of
    Abramowitz & Stegun 26.7.3 (odd) and 26.7.4 (even)."""
    theta = math.atan(t / math.sqrt(dof))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if dof % 2:
        if dof == 1:
            return 2.0 * theta / math.pi
        term, total = 1.0, 1.0
        for k in range(1, (dof - 3) // 2 + 1):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2.0 / math.pi * (theta + s * math.cos(theta) * total)
    term, total = 1.0, 1.0
    for k in range(1, (dof - 2) // 2 + 1):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t_quantile(level: float, dof: int) -> float:
    """The t with P(|T| < t) = `level` (two-sided), by bisection."""
    low, high = 0.0, 1.0
    while _t_two_sided(high, dof) < level:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        low, high = (mid, high) if _t_two_sided(mid, dof) < level else (low, mid)
    return (low + high) / 2.0


def study_mean(ratios: Sequence[float], s: Settings) -> dict | None:
    """The geometric mean of a study's point ratios, with a t interval over
    points of the mean log ratio (at the level for faster/slower, at 2L - 1 for
    same), judged by the points' rule. The points stand for the workloads the
    study could measure: their spread, true differences between points
    included, sets the width. None without a point; no interval with one."""
    logs = np.log(np.asarray(ratios, dtype=np.float64))
    if logs.size == 0:
        return None
    mean = float(logs.mean())
    out = {"points": int(logs.size), "ratio": math.exp(mean), "low": None, "high": None,
           "tost_low": None, "tost_high": None, "verdict": INCONCLUSIVE}
    if logs.size < 2:
        return out
    se = float(logs.std(ddof=1)) / math.sqrt(logs.size)
    dof = int(logs.size - 1)
    half, tost_half = t_quantile(s.level, dof) * se, t_quantile(s.tost_level, dof) * se
    out |= {"low": math.exp(mean - half), "high": math.exp(mean + half),
            "tost_low": math.exp(mean - tost_half), "tost_high": math.exp(mean + tost_half)}
    if out["low"] > s.margin:
        out["verdict"] = FASTER
    elif out["high"] < 1.0 / s.margin:
        out["verdict"] = SLOWER
    elif out["tost_low"] >= 1.0 / s.margin and out["tost_high"] <= s.margin:
        out["verdict"] = SAME
    return out


def worst_first(points: list[dict]) -> list[dict]:
    """Slower first, then inconclusive, same, faster; within each, the lowest ratio first."""
    return sorted(points, key=lambda p: (VERDICTS.index(p["verdict"]), p["ratio"]))
