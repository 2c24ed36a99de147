"""One rule for every claim in every study: the direction and the size of an
effect, or the absence of one.

A claim compares two samples of runs (a native program and a Python script,
ext4 and ext2, ...) and the original reports their ratio. Our interval of the
ratio is the exact Hodges-Lehmann / Mann-Whitney interval of
:mod:`boatload.intervals`. Hardware differs, so the size we ask for is the
original's within a band, ×/÷ ``band_factor`` on the log scale:

* ``reproduced``: our interval lies on the original's side of 1 and overlaps
  the band;
* ``same direction, smaller effect`` / ``same direction, larger effect``: on
  the original's side of 1, wholly nearer to 1 than the band / beyond it;
* ``inconclusive``: the interval contains 1; ``runs_to_settle`` gives the runs
  per side that would exclude 1 at the observed ratio and spread (a power
  calculation, :func:`boatload.intervals.runs_to_settle`);
* ``contradicted``: the interval lies wholly on the other side of 1;
* for a claim of no difference, two one-sided tests at 1 - level: ``equivalent``
  when the (2 level - 1) interval lies within ×/÷ ``equivalence_margin`` of 1,
  ``not equivalent`` when it lies wholly outside, else ``inconclusive``;
* ``too few runs``: the runs made allow no interval at the level;
* ``not tested``: one side of the comparison was not measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from boatload.intervals import (
    POWER,
    RatioInterval,
    ratio_interval,
    runs_for_interval,
    runs_to_decide_equivalence,
    runs_to_settle,
)

REPRODUCED = "reproduced"
SMALLER = "same direction, smaller effect"
LARGER = "same direction, larger effect"
INCONCLUSIVE = "inconclusive"
CONTRADICTED = "contradicted"
EQUIVALENT = "equivalent"
NOT_EQUIVALENT = "not equivalent"
TOO_FEW = "too few runs"
NOT_TESTED = "not tested"

VERDICTS = (REPRODUCED, SMALLER, LARGER, INCONCLUSIVE, CONTRADICTED, EQUIVALENT, NOT_EQUIVALENT, TOO_FEW, NOT_TESTED)
#: verdicts resting on an interval at the stated level
WITH_INTERVAL = (REPRODUCED, SMALLER, LARGER, INCONCLUSIVE, CONTRADICTED, EQUIVALENT, NOT_EQUIVALENT)

Samples = Sequence[float] | None


@dataclass(frozen=True)
class Rule:
    """The verdict rule's settings (config field `verdicts`)."""

    band_factor: float = 2.0  # the original's ratio ×/÷ this, on the log scale
    equivalence_margin: float = 1.1  # a claim of no difference: the ratio within ×/÷ this of 1
    level: float = 0.95

    def __post_init__(self) -> None:
        if not self.band_factor > 1.0:
            raise ValueError(f"verdicts.band_factor: must be above 1, not {self.band_factor}")
        if not self.equivalence_margin > 1.0:
            raise ValueError(f"verdicts.equivalence_margin: must be above 1, not {self.equivalence_margin}")
        if not 0.5 < self.level < 1.0:
            raise ValueError(f"level: must lie between 0.5 and 1, not {self.level}")

    @property
    def tost_level(self) -> float:
        """The interval two one-sided tests at 1 - level each read."""
        return round(2.0 * self.level - 1.0, 12)

    def text(self) -> str:
        lvl, tost = _pct(self.level), _pct(self.tost_level)
        return (
            f"Our interval of each ratio is the exact distribution-free {lvl} interval of the shift of log rates "
            f"(Hodges-Lehmann with Mann-Whitney bounds). reproduced: it lies on the original's side of 1 and "
            f"overlaps the original's ratio ×/÷ {self.band_factor:g}; same direction, smaller (larger) effect: "
            f"on the original's side of 1 but wholly nearer to 1 than that band (beyond it); inconclusive: it "
            f"contains 1, and runs to settle are the runs per side that would exclude 1 with "
            f"{_pct(POWER)} power at the ratio and spread observed (normal-theory sample size over the "
            f"Mann-Whitney efficiency 3/π); contradicted: it lies wholly on the other side of 1. A claim of no "
            f"difference is equivalent when the {tost} interval (two one-sided tests at {_pct(1 - self.level)}) "
            f"lies within ×/÷ {self.equivalence_margin:g} of 1, not equivalent when it lies wholly outside, "
            f"otherwise inconclusive. too few runs: the runs made allow no interval at that level "
            f"({runs_for_interval(self.level)} per side are the fewest for {lvl}); not tested: one side was not measured."
        )


def _pct(x: float) -> str:
    return f"{round(x * 100, 1):g} %"


def decide(original_ratio: float, low: float, high: float, band_factor: float) -> tuple[str, str, str | None]:
    """(verdict, direction, size) of a claim of an effect, given the original
    ratio and our interval at the stated level."""
    if original_ratio <= 0.0 or original_ratio == 1.0:
        raise ValueError("an original ratio must be positive and not 1 to state a direction")
    if low > high:
        raise ValueError("interval bounds out of order")
    # on the log scale, signed so that the original's effect is positive
    sign = 1.0 if original_ratio > 1.0 else -1.0
    lo, hi = sorted((sign * math.log(low), sign * math.log(high)))
    if lo <= 0.0 <= hi:
        return INCONCLUSIVE, "unsettled", None
    if hi < 0.0:
        return CONTRADICTED, "opposite", None
    effect, band = abs(math.log(original_ratio)), math.log(band_factor)
    if hi < effect - band:
        return SMALLER, "same", "smaller"
    if lo > effect + band:
        return LARGER, "same", "larger"
    return REPRODUCED, "same", "similar"


def decide_equivalence(low: float, high: float, margin: float) -> tuple[str, str]:
    """(verdict, size) of a claim of no difference, given the interval that two
    one-sided tests read."""
    if low >= 1.0 / margin and high <= margin:
        return EQUIVALENT, "within margin"
    if low > margin or high < 1.0 / margin:
        return NOT_EQUIVALENT, "beyond margin"
    return INCONCLUSIVE, None


def _interval(ours: Samples, base: Samples, level: float) -> RatioInterval | None:
    if ours is None or base is None or len(ours) == 0 or len(base) == 0:
        return None
    return ratio_interval(ours, base, level)


def _entry(text: str, test: str, original_ratio: float | None, r: RatioInterval | None, verdict: str,
           direction: str | None, size: str | None, runs: int | None, extra: dict) -> dict[str, Any]:
    return {
        "claim": text,
        "test": test,
        "original_ratio": original_ratio,
        "ours": r and r.ratio,
        "ours_low": r and r.low,
        "ours_high": r and r.high,
        "level": r and r.level,
        "coverage": r and r.coverage,
        "runs_per_side": list(r.runs) if r else None,
        "verdict": verdict,
        "direction": direction,
        "size": size,
        "runs_to_settle": runs,
        **extra,
    }


def claim(text: str, original_ratio: float, ours: Samples, base: Samples, rule: Rule = Rule(),
          **extra: Any) -> dict[str, Any]:
    """A claim of an effect: `ours` over `base` (the runs' rates of the two
    sides, None where a side was not measured) against the original's ratio."""
    r = _interval(ours, base, rule.level)
    extra = {"band": [original_ratio / rule.band_factor, original_ratio * rule.band_factor], **extra}
    if r is None:
        return _entry(text, "effect", original_ratio, None, NOT_TESTED, None, None, None, extra)
    if r.low is None:
        needed = max(runs_for_interval(rule.level), runs_to_settle(r.ratio, r.log_sd, rule.level) or 0)
        return _entry(text, "effect", original_ratio, r, TOO_FEW, None, None, needed, extra)
    verdict, direction, size = decide(original_ratio, r.low, r.high, rule.band_factor)
    runs = runs_to_settle(r.ratio, r.log_sd, rule.level) if verdict == INCONCLUSIVE else None
    return _entry(text, "effect", original_ratio, r, verdict, direction, size, runs, extra)


def no_difference(text: str, original_ratio: float | None, ours: Samples, base: Samples, rule: Rule = Rule(),
                  **extra: Any) -> dict[str, Any]:
    """A claim of no difference between `ours` and `base`: two one-sided tests
    against ×/÷ the rule's margin. `original_ratio` is the original's own ratio
    of the two (shown beside ours), not a direction."""
    r = _interval(ours, base, rule.tost_level)
    m = rule.equivalence_margin
    extra = {"margin": [1.0 / m, m], **extra}
    if r is None:
        return _entry(text, "no difference", original_ratio, None, NOT_TESTED, None, None, None, extra)
    if r.low is None:
        needed = max(runs_for_interval(rule.tost_level),
                     runs_to_decide_equivalence(r.ratio, r.log_sd, m, rule.level) or 0)
        return _entry(text, "no difference", original_ratio, r, TOO_FEW, None, None, needed, extra)
    verdict, size = decide_equivalence(r.low, r.high, m)
    direction = "unsettled" if r.low <= 1.0 <= r.high else ("higher" if r.low > 1.0 else "lower")
    runs = runs_to_decide_equivalence(r.ratio, r.log_sd, m, rule.level) if verdict == INCONCLUSIVE else None
    return _entry(text, "no difference", original_ratio, r, verdict, direction, size, runs, extra)
