"""Reproduced, partly, or not: one rule for every claim in every study.

A claim compares two things (a native program and a Python script, ext4 and
ext2, ...) and the original author reports a ratio of the two. Hardware differs,
so we do not ask for the same ratio, only for the same direction, settled by
our data:

* ``reproduced``: our whole confidence interval of the ratio lies on the same
  side of 1 as the original ratio;
* ``not``: our whole interval lies on the other side of 1;
* ``partly``: our interval contains 1, so our data cannot tell the direction
  (too few or too noisy runs, or a difference too small to see here);
* ``too few runs``: our interval has no width (one run per side, as in the
  seconds-sized ci configuration), so it says nothing about the noise;
* ``not tested``: we have no measurement for one side of the claim.
"""

from __future__ import annotations

from typing import Any

RULE = (
    "reproduced: our 95% bootstrap interval of the ratio lies entirely on the "
    "same side of 1 as the original ratio; not: it lies entirely on the other "
    "side; partly: it contains 1, so our runs cannot settle the direction; "
    "too few runs: one run per side, so no interval; "
    "not tested: one side of the comparison was not measured."
)

VERDICTS = ("reproduced", "partly", "not", "too few runs", "not tested")


def decide(original_ratio: float, low: float | None, high: float | None) -> str:
    """The verdict for one claim, given the original ratio and our interval."""
    if low is None or high is None:
        return "not tested"
    if original_ratio == 1.0:
        raise ValueError("an original ratio of exactly 1 states no direction")
    if low > high:
        raise ValueError("interval bounds out of order")
    if low == high:
        return "too few runs"
    above = original_ratio > 1.0
    if (low > 1.0) if above else (high < 1.0):
        return "reproduced"
    if (high < 1.0) if above else (low > 1.0):
        return "not"
    return "partly"


def claim(
    claim: str,
    original_ratio: float,
    ours: float | None,
    ours_low: float | None,
    ours_high: float | None,
    **extra: Any,
) -> dict[str, Any]:
    """A verdict entry as the summaries and the paper use it."""
    return {
        "claim": claim,
        "original_ratio": original_ratio,
        "ours": ours,
        "ours_low": ours_low,
        "ours_high": ours_high,
        "verdict": decide(original_ratio, ours_low, ours_high),
        **extra,
    }
