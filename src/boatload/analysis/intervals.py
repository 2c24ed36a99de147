"""The interval of a ratio of two samples of rates that holds its level at a
handful of runs per side.

Rates are positive and skewed, and a study has 3 to 15 runs per side. On the
log scale a ratio is a shift, so we estimate the shift of log rates between
the two samples with Hodges-Lehmann (the median of all pairwise differences)
and bound it with the exact Mann-Whitney distribution: the interval between
the k-th smallest and the k-th largest pairwise difference covers the true
shift with probability 1 - 2 P(U < k) for any continuous distribution whose
two samples differ by a shift, whatever its shape and however few the runs
(Hollander & Wolfe, *Nonparametric Statistical Methods*, 3rd ed., 4.3; Bauer
1972). The exponent of the interval is the interval of the ratio.

Few runs allow only a few levels: with m and n runs the widest interval, from
the smallest to the largest difference, covers 1 - 2 / C(m+n, m), so 3 runs
per side reach 90 % and no more. Below the stated level we return no bounds
(a verdict of "too few runs") rather than a narrower interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

__all__ = [
    "RatioInterval", "check_level", "mann_whitney_rank", "median_interval", "ratio_ci", "ratio_interval", "runs_for_interval",
    "runs_to_decide_equivalence", "runs_to_exclude", "runs_to_settle", "simulated_coverage", "tost_level",
]

#: the power the runs_to_settle calculation aims at
POWER = 0.8
#: asymptotic efficiency of the Mann-Whitney test against the t test for normal data
#: (3/pi): the runs a t test needs, divided by it, are those the rank interval needs
MW_EFFICIENCY = 3.0 / math.pi


def check_level(level: float) -> None:
    """A confidence level a rule may state: one line naming `level` otherwise."""
    if not 0.5 < level < 1.0:
        raise ValueError(f"level: must lie between 0.5 and 1, not {level}")


def tost_level(level: float) -> float:
    """The interval that two one-sided tests, each at 1 - level, read: 2 level - 1."""
    return round(2.0 * level - 1.0, 12)


@lru_cache(maxsize=512)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, m) orderings of two samples give each value of
    the Mann-Whitney U, 0..m*n: the coefficients of the Gaussian binomial
    [m+n choose m] in q, built as prod_i (1 - q^(n+i)) / (1 - q^i)."""
    c = [0] * (m * n + 1)
    c[0] = 1
    top = 0
    for i in range(1, m + 1):
        # times (1 - q^(n+i)), high powers first so each term is read before it changes
        top += n + i
        for k in range(min(top, m * n), n + i - 1, -1):
            c[k] -= c[k - n - i]
        # divided by (1 - q^i): exact, low powers first
        for k in range(i, m * n + 1):
            c[k] += c[k - i]
    return tuple(c)


@lru_cache(maxsize=1024)
def mann_whitney_rank(m: int, n: int, level: float) -> tuple[int, float] | None:
    """(k, coverage): the interval from the k-th smallest to the k-th largest of
    the m*n pairwise differences covers the shift with probability `coverage`,
    the least coverage at or above `level`; None when even k = 1 (the whole
    range of the differences) falls short of `level`."""
    return _tail_rank(_u_counts(m, n), math.comb(m + n, m), level)


def _tail_rank(counts: tuple[int, ...], total: float, level: float) -> tuple[int, float] | None:
    """(k, coverage) from a statistic's exact null counts (of `total`
    equally likely outcomes, the statistic's values 0, 1, ...): the largest k
    whose two tails below k and above max-k hold at most 1 - level together;
    None when no k does. The Mann-Whitney and signed-rank intervals share it."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    tail_allowed = (1.0 - level) / 2.0
    below, k = 0, 0  # below: outcomes with the statistic < k
    while k < len(counts) and (below + counts[k]) / total <= tail_allowed + 1e-12:
        below += counts[k]
        k += 1
    if k == 0:
        return None
    return k, 1.0 - 2.0 * (below / total)


def runs_for_interval(level: float, limit: int = 100) -> int:
    """The fewest runs per side (equal sides) that give an interval at `level`."""
    for n in range(2, limit + 1):
        if mann_whitney_rank(n, n, level) is not None:
            return n
    raise ValueError(f"level {level}: no interval with up to {limit} runs per side")


@dataclass(frozen=True)
class RatioInterval:
    """A ratio of two samples with its interval (bounds None: too few runs)."""

    ratio: float  # exp of the Hodges-Lehmann shift of log rates
    low: float | None
    high: float | None
    level: float  # the level asked for
    coverage: float | None  # the exact coverage of the bounds given (>= level)
    runs: tuple[int, int]  # runs per side, numerator then denominator
    log_sd: float | None  # the pooled standard deviation of the log rates

    def as_tuple(self) -> tuple[float, float | None, float | None]:
        return self.ratio, self.low, self.high

    def as_dict(self) -> dict:
        return asdict(self) | {"runs": list(self.runs)}


def _logs(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError(f"{name}: empty sample")
    # the least above 0 and the largest finite: NaN fails both comparisons (a simulated error rate
    # calls this a million times, for which np.all/np.any cost more than the interval)
    if not (x.min() > 0.0 and math.isfinite(x.max())):
        raise ValueError(f"{name}: a ratio of rates needs finite, strictly positive values")
    return np.log(x)


def _sorted_median(x: np.ndarray) -> float:
    """np.median of an array already sorted, without sorting it again."""
    half = x.size // 2
    return float(x[half]) if x.size % 2 else float((x[half - 1] + x[half]) / 2.0)


def _pooled_sd(la: np.ndarray, lb: np.ndarray) -> float | None:
    dof = la.size + lb.size - 2
    if la.size < 2 or lb.size < 2:
        return None  # one side's spread unknown
    ss = float(((la - la.mean()) ** 2).sum() + ((lb - lb.mean()) ** 2).sum())
    return math.sqrt(ss / dof)


def ratio_interval(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                   level: float = 0.95) -> RatioInterval:
    """The ratio of rates `a` over rates `b` (independent samples of runs),
    with its exact distribution-free interval at `level` when the runs allow one."""
    la, lb = _logs(a, "a"), _logs(b, "b")
    diffs = np.sort(np.subtract.outer(la, lb).ravel())
    point = float(np.exp(_sorted_median(diffs)))
    rank = mann_whitney_rank(la.size, lb.size, level)
    low = high = coverage = None
    if rank is not None:
        k, coverage = rank
        low, high = float(np.exp(diffs[k - 1])), float(np.exp(diffs[diffs.size - k]))
    return RatioInterval(point, low, high, level, coverage, (int(la.size), int(lb.size)), _pooled_sd(la, lb))


def ratio_ci(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
             level: float = 0.95) -> tuple[float, float | None, float | None]:
    """``(ratio, low, high)`` of :func:`ratio_interval`; bounds None: too few runs."""
    return ratio_interval(a, b, level).as_tuple()


def median_interval(values: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float, float, float]:
    """``(median, low, high, coverage)`` of one sample of runs: the exact
    distribution-free interval of the median between the j-th smallest and the
    j-th largest run, which holds the true median with probability
    ``coverage`` = 1 - 2 P(Binomial(n, 1/2) < j), the narrowest at or above
    `level`. Too few runs for `level` (fewer than 6 for 95 %) give the range of
    the runs with the coverage it has (1 - 2^(1-n): 75 % at 3 runs, 87.5 % at 4),
    so a table states what its band is rather than calling it 95 %."""
    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("values: an empty sample, or NaN or infinite values")
    n = int(x.size)
    below, j = 0, 0  # below: P(B < j) * 2^n
    while j < n // 2 and 2.0 * (below + math.comb(n, j)) / 2.0**n <= 1.0 - level + 1e-12:
        below += math.comb(n, j)
        j += 1
    j = max(j, 1)
    coverage = 1.0 - 2.0 * sum(math.comb(n, i) for i in range(j)) / 2.0**n
    return float(np.median(x)), float(x[j - 1]), float(x[n - j]), max(coverage, 0.0)


def _runs_for_distance(quantile: float, power: float, log_sd: float, distance: float, least: int) -> int:
    """Runs per side by the normal-theory size for two means, 2 (z_quantile +
    z_power)^2 sd^2 / distance^2, over the Mann-Whitney efficiency 3/pi, and
    no fewer than `least` (what an interval at the level needs)."""
    z = NormalDist().inv_cdf
    n = 2.0 * (z(quantile) + z(power)) ** 2 * log_sd**2 / distance**2 / MW_EFFICIENCY
    return max(math.ceil(n), least)


def runs_to_exclude(ratio: float, boundary: float, log_sd: float | None, level: float,
                    power: float = POWER) -> int | None:
    """Runs per side at which a true ratio of `ratio` (spread `log_sd` per run
    on the log scale) would give an interval at `level` that excludes
    `boundary` with probability `power`: the normal-theory sample size for
    two means, 2 (z_(1-a/2) + z_power)^2 sd^2 / d^2 with d the log distance
    from the ratio to the boundary, divided by the Mann-Whitney efficiency
    3/pi, and no fewer than an interval at `level` needs. None when the
    spread is unknown or the ratio sits on the boundary."""
    if log_sd is None or ratio <= 0.0 or boundary <= 0.0:
        return None
    distance = abs(math.log(ratio) - math.log(boundary))
    if distance == 0.0:
        return None
    return _runs_for_distance(1.0 - (1.0 - level) / 2.0, power, log_sd, distance, runs_for_interval(level))


def runs_to_settle(ratio: float, log_sd: float | None, level: float, power: float = POWER) -> int | None:
    """Runs per side at which an effect of `ratio` would exclude no effect
    (a ratio of 1) at `level` with probability `power` (:func:`runs_to_exclude`)."""
    return runs_to_exclude(ratio, 1.0, log_sd, level, power)


def simulated_coverage(m: int, n: int, level: float = 0.95, draws: int = 2000, true_ratio: float = 1.7,
                       log_sd: float = 0.6, seed: int = 0) -> float | None:
    """The share of `draws` pairs of lognormal samples (m and n runs, a known
    `true_ratio`, spread `log_sd` on the log scale) whose interval holds the
    true ratio; None when m and n runs give no interval at `level`."""
    if mann_whitney_rank(m, n, level) is None:
        return None
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(draws):
        r = ratio_interval(true_ratio * rng.lognormal(0.0, log_sd, m), rng.lognormal(0.0, log_sd, n), level)
        hits += r.low <= true_ratio <= r.high
    return hits / draws


def runs_to_decide_equivalence(ratio: float, log_sd: float | None, margin: float, level: float,
                               power: float = POWER) -> int | None:
    """Runs per side at which two one-sided tests, each at (1 - level), would
    settle a claim of no difference within ratio x/÷ `margin` with probability
    `power`, if the true ratio were the observed `ratio`: the normal-theory
    size 2 (z_(level) + z_power)^2 sd^2 / (log margin - |log ratio|)^2 (or
    |log ratio| - log margin when it lies outside), over the efficiency 3/pi.
    None when the spread is unknown or the ratio sits on the margin."""
    if log_sd is None or ratio <= 0.0 or margin <= 1.0:
        return None
    distance = abs(math.log(margin) - abs(math.log(ratio)))
    if distance == 0.0:
        return None
    return _runs_for_distance(level, power, log_sd, distance, runs_for_interval(2.0 * level - 1.0))


# --- Paired rounds -----------------------------------------------------------
#
# A study measures its points in rounds (boatload.workflow.plan): the two sides of a
# claim measured in one round form a pair, and drift across rounds (the host's
# disk, the page cache, a neighbour) moves both runs of a pair alike. The log
# ratios of the pairs, d_i, then carry the shift without the drift, and the
# exact interval for it is the Wilcoxon signed-rank one: the Hodges-Lehmann
# estimate is the median of the n(n+1)/2 Walsh averages (d_i + d_j)/2, i <= j,
# and the k-th smallest to the k-th largest of them covers the shift with
# probability 1 - 2 P(W+ < k) (Hollander & Wolfe, 3rd ed., 3.2). It assumes
# the pairs' log ratios are independent and symmetric about the shift (true
# when the two sides' noise has the same distribution, whatever its shape).
# The smallest two-sided tail with n pairs is 2 / 2^n: 4 pairs reach 87.5 %,
# 5 reach 93.75 %, 6 reach 96.9 %, so a 95 % interval needs at least 6 pairs;
# below that the unpaired Mann-Whitney interval is used (4 + 4 runs reach
# 97.1 %). Pairing pays off only from 6 rounds on.


@lru_cache(maxsize=256)
def _w_counts(n: int) -> tuple[int, ...]:
    """How many of the 2^n sign patterns give each value of the signed-rank
    statistic W+, 0..n(n+1)/2: the coefficients of prod_i (1 + q^i)."""
    c = [0] * (n * (n + 1) // 2 + 1)
    c[0] = 1
    for i in range(1, n + 1):
        for k in range(len(c) - 1, i - 1, -1):
            c[k] += c[k - i]
    return tuple(c)


@lru_cache(maxsize=1024)
def signed_rank_rank(n: int, level: float) -> tuple[int, float] | None:
    """(k, coverage): the k-th smallest to the k-th largest of the n(n+1)/2
    Walsh averages of n pairs cover the shift with probability `coverage`, the
    least at or above `level`; None when even the whole range falls short."""
    return _tail_rank(_w_counts(n), 2.0**n, level)


def pairs_for_interval(level: float, limit: int = 100) -> int:
    """The fewest pairs that give a signed-rank interval at `level` (6 for 95 %)."""
    for n in range(1, limit + 1):
        if signed_rank_rank(n, level) is not None:
            return n
    raise ValueError(f"level {level}: no paired interval with up to {limit} pairs")


@lru_cache(maxsize=64)
def _upper_triangle(n: int) -> tuple[np.ndarray, np.ndarray]:
    """np.triu_indices(n): the pairs i <= j of the Walsh averages, built once per n."""
    return np.triu_indices(n)


@dataclass(frozen=True)
class PairedRatioInterval(RatioInterval):
    """A ratio from paired runs; `runs` is (pairs, pairs), and `log_sd` the spread
    of the pairs' log ratios over sqrt(2), the two-sample spread that gives the
    paired sample size in :func:`runs_to_exclude`'s two-sample formula."""

    pairs: int = 0


def paired_ratio_interval(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                          level: float = 0.95) -> PairedRatioInterval:
    """The ratio of rates `a` over rates `b`, a[i] and b[i] measured in the same
    round, with the exact signed-rank interval at `level` when the pairs allow one."""
    la, lb = _logs(a, "a"), _logs(b, "b")
    if la.size != lb.size:
        raise ValueError(f"paired samples differ in length ({la.size} and {lb.size})")
    d = la - lb
    i, j = _upper_triangle(int(d.size))
    walsh = np.sort((d[i] + d[j]) / 2.0)
    rank = signed_rank_rank(int(d.size), level)
    low = high = coverage = None
    if rank is not None:
        k, coverage = rank
        low, high = float(np.exp(walsh[k - 1])), float(np.exp(walsh[walsh.size - k]))
    sd = float(np.std(d, ddof=1)) / math.sqrt(2.0) if d.size >= 2 else None
    n = int(d.size)
    return PairedRatioInterval(float(np.exp(_sorted_median(walsh))), low, high, level, coverage, (n, n), sd, n)


def round_ratio_interval(ours: dict | Sequence[float], base: dict | Sequence[float],
                         level: float = 0.95) -> RatioInterval:
    """The interval of a claim's two sides: given {round: rate} for both, the
    paired signed-rank interval over the rounds both have when there are enough
    of them for `level` (:func:`pairs_for_interval`, a choice made from the
    counts alone, never from the rates); else the unpaired Mann-Whitney
    interval of every run."""
    if isinstance(ours, dict) and isinstance(base, dict):
        shared = sorted(set(ours) & set(base))
        if len(shared) >= pairs_for_interval(level):
            return paired_ratio_interval([ours[k] for k in shared], [base[k] for k in shared], level)
    values = (lambda s: list(s.values()) if isinstance(s, dict) else s)
    return ratio_interval(values(ours), values(base), level)


def simulated_round_coverage(rounds: int, level: float = 0.95, drift: float = 0.0, draws: int = 2000,
                             true_ratio: float = 1.7, log_sd: float = 0.1, points: int = 20,
                             seed: int = 0) -> dict:
    """Coverage and median width (high / low) of the paired and the unpaired
    interval when `points` points, two of them a claim's sides (lognormal runs,
    spread `log_sd`, a known `true_ratio`), are measured in `rounds` rounds,
    each round in its own shuffled order, under a drift that multiplies every
    rate by 1 + drift * (position in the whole run) / (its length - 1).
    The paired entries are None when `rounds` pairs allow no interval at `level`."""
    rng = np.random.default_rng(seed)
    total = rounds * points
    out = {"paired": [0, []], "unpaired": [0, []]}
    paired_possible = signed_rank_rank(rounds, level) is not None
    for _ in range(draws):
        # positions of the two sides in each round's shuffled order
        pos = np.array([rng.permutation(points)[:2] + r * points for r in range(rounds)], dtype=np.float64)
        factor = 1.0 + drift * pos / max(total - 1, 1)
        a = true_ratio * factor[:, 0] * rng.lognormal(0.0, log_sd, rounds)
        b = factor[:, 1] * rng.lognormal(0.0, log_sd, rounds)
        intervals = {"unpaired": ratio_interval(a, b, level)}
        if paired_possible:
            intervals["paired"] = paired_ratio_interval(a, b, level)
        for kind, r in intervals.items():
            if r.low is not None:
                out[kind][0] += r.low <= true_ratio <= r.high
                out[kind][1].append(r.high / r.low)
    result = {}
    for kind, (hits, widths) in out.items():
        result[kind] = hits / draws if widths else None
        result[f"{kind}_width"] = float(np.median(widths)) if widths else None
    return result
