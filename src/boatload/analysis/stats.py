"""Percentile bootstrap confidence intervals, compiled with numba.

For statistics of many values: the mean IOPS of one run's intervals, a
worker-over-peer ratio over a point's jobs, the original's per-second lines.
A median of a handful of runs and a ratio of two samples of runs take the
exact intervals of :mod:`boatload.analysis.intervals` instead: the median of a
resample of three runs is one of them, so a percentile bootstrap of it never
leaves the sample's range and holds far less than its stated level.
Resample with replacement, recompute the statistic, and take the central
``level`` share of the resampled statistics.

The resampling loop runs in numba (``@njit``); a fixed ``seed`` gives the same
interval on every machine and every call.

>>> point, low, high = bootstrap_ci([10.0, 12.0, 11.0], stat="median")
>>> low <= point <= high
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

__all__ = ["STATS", "bootstrap_ci", "bootstrap_distribution", "bootstrap_ratio_ci"]

#: statistic name -> code understood by the compiled kernels
STATS: dict[str, int] = {"median": 0, "mean": 1}


@njit(cache=True)
def _statistic(x, code):
    if code == 0:
        return np.median(x)
    return np.mean(x)


@njit(cache=True)
def _resample_into(src, buf):
    n = src.size
    for i in range(buf.size):
        buf[i] = src[np.random.randint(0, n)]


@njit(cache=True)
def _boot_one(values, code, n_resamples, seed):
    np.random.seed(seed)
    out = np.empty(n_resamples)
    buf = np.empty(values.size)
    for r in range(n_resamples):
        _resample_into(values, buf)
        out[r] = _statistic(buf, code)
    return out


@njit(cache=True)
def _boot_ratio(a, b, code, n_resamples, seed):
    np.random.seed(seed)
    out = np.empty(n_resamples)
    buf_a = np.empty(a.size)
    buf_b = np.empty(b.size)
    for r in range(n_resamples):
        _resample_into(a, buf_a)
        _resample_into(b, buf_b)
        out[r] = _statistic(buf_a, code) / _statistic(buf_b, code)
    return out


def _as_sample(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    x = np.ascontiguousarray(np.asarray(values, dtype=np.float64).ravel())
    if x.size == 0:
        raise ValueError(f"{name}: empty sample")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: sample holds NaN or infinite values")
    return x


def _check(stat: str, n_resamples: int, level: float) -> int:
    if stat not in STATS:
        raise ValueError(f"stat must be one of {sorted(STATS)}, not {stat!r}")
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    return STATS[stat]


def _interval(dist: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(dist, [alpha, 1.0 - alpha])
    return float(low), float(high)


def bootstrap_distribution(
    values: Sequence[float] | np.ndarray,
    stat: str = "median",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> np.ndarray:
    """The ``n_resamples`` bootstrap replicates of ``stat`` over ``values``."""
    code = _check(stat, n_resamples, 0.5)
    return _boot_one(_as_sample(values, "values"), code, int(n_resamples), int(seed))


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    stat: str = "median",
    n_resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Point estimate and percentile-bootstrap interval of ``stat`` over ``values``.

    Returns ``(point, low, high)``; ``point`` is the statistic of the sample
    itself. A single value gives a degenerate interval ``(v, v, v)``.
    """
    code = _check(stat, n_resamples, level)
    x = _as_sample(values, "values")
    point = float(np.median(x) if code == 0 else np.mean(x))
    dist = _boot_one(x, code, int(n_resamples), int(seed))
    low, high = _interval(dist, level)
    return point, low, high


def bootstrap_ratio_ci(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    stat: str = "median",
    n_resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``stat(a) / stat(b)`` for two independent samples, with a percentile
    bootstrap interval (each replicate resamples ``a`` and ``b`` separately).

    Returns ``(point, low, high)``. ``b`` must have a non-zero statistic.
    """
    code = _check(stat, n_resamples, level)
    xa = _as_sample(a, "a")
    xb = _as_sample(b, "b")
    if np.any(xb <= 0.0):
        # rates and times are positive; a zero could make a replicate divide by 0
        raise ValueError("b: a ratio needs a strictly positive denominator sample")
    sa = np.median(xa) if code == 0 else np.mean(xa)
    sb = np.median(xb) if code == 0 else np.mean(xb)
    point = float(sa / sb)
    dist = _boot_ratio(xa, xb, code, int(n_resamples), int(seed))
    low, high = _interval(dist, level)
    return point, low, high
