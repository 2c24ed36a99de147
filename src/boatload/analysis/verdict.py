"""One rule for every claim in every study: the direction and the size of an
effect, or the absence of one; each verdict word is wrong at most as often as
the level allows (tests/test_verdict_error_rates.py counts it by simulation).

A claim compares two samples of runs (a native program and a Python script,
ext4 and ext2, ...) and the original reports their ratio. Our interval of the
ratio is the exact Hodges-Lehmann / Mann-Whitney interval of
:mod:`boatload.analysis.intervals`. Hardware differs, so the size we ask for is the
original's within a band, ×/÷ ``band_factor`` on the log scale, its near
edge never nearer to 1 than half the original's effect (the square root of
its ratio), so that no effect is never the original's size. With the
interval at level 1 - 2a, each word below is wrong with probability at most a
(one tail of the interval), whatever the true ratio:

* ``reproduced``: the interval lies on the original's side of 1 and wholly
  inside the band (wrong only if the truth is outside the band);
* ``same direction, smaller effect`` / ``same direction, larger effect``: on
  the original's side of 1, wholly nearer to 1 than the band / beyond it;
* ``same direction, size open``: on the original's side of 1, across an edge
  of the band: the direction is settled, the size not (an open claim);
* ``not reproduced``: the interval contains 1 but lies wholly nearer to 1
  than the band: the original's size does not hold here, ours is at most
  (for a fall: at least) the interval's far end (``bound``);
* ``inconclusive``: the interval reaches both 1 and the band; ``runs_to_settle``
  gives the runs per side that would decide it at the observed ratio and
  spread (a power calculation, :func:`boatload.analysis.intervals.runs_to_exclude`);
* ``contradicted``: the interval lies wholly on the other side of 1;
* for a claim of no difference, two one-sided tests at 1 - level: ``equivalent``
  when the (2 level - 1) interval lies within ×/÷ ``equivalence_margin`` of 1,
  ``not equivalent`` when it lies wholly outside, else ``inconclusive``;
* ``too few runs``: the runs made allow no interval at the level;
* ``not tested``: one side of the comparison was not measured;
* ``not exercised``: the timed phase never used the mechanism the claim is
  about (no write or flush reached the device in question): no verdict;
* ``not applicable``: the claim cannot apply to this target (tmpfs has no
  O_DIRECT): not a claim tested here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from boatload.analysis.intervals import (
    check_level,
    POWER,
    pairs_for_interval,
    RatioInterval,
    round_ratio_interval,
    runs_for_interval,
    runs_to_decide_equivalence,
    runs_to_exclude,
    tost_level,
)

REPRODUCED = "reproduced"
SMALLER = "same direction, smaller effect"
LARGER = "same direction, larger effect"
SIZE_OPEN = "same direction, size open"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
CONTRADICTED = "contradicted"
EQUIVALENT = "equivalent"
NOT_EQUIVALENT = "not equivalent"
TOO_FEW = "too few runs"
NOT_TESTED = "not tested"
NOT_EXERCISED = "not exercised"
NOT_APPLICABLE = "not applicable"

VERDICTS = (REPRODUCED, SMALLER, LARGER, NOT_REPRODUCED, CONTRADICTED, EQUIVALENT, NOT_EQUIVALENT, SIZE_OPEN,
            INCONCLUSIVE, TOO_FEW, NOT_TESTED, NOT_EXERCISED, NOT_APPLICABLE)
#: verdicts resting on an interval at the stated level
WITH_INTERVAL = (REPRODUCED, SMALLER, LARGER, NOT_REPRODUCED, CONTRADICTED, EQUIVALENT, NOT_EQUIVALENT, SIZE_OPEN,
                 INCONCLUSIVE)
#: verdicts that answer the claim's question (does it hold here?)
DECIDED = (REPRODUCED, SMALLER, LARGER, NOT_REPRODUCED, CONTRADICTED, EQUIVALENT, NOT_EQUIVALENT)
#: verdicts that more runs could still decide
OPEN = (SIZE_OPEN, INCONCLUSIVE, TOO_FEW)
#: claims that were not tested here, by design: out of every count of claims tested
UNTESTABLE = (NOT_EXERCISED, NOT_APPLICABLE)
#: what each word answers to the reader's one question, does the claim hold here: words
#: that differ only in what the interval adds (which side of 1 a claim that does not hold
#: lies on) give the same answer; the untested words answer nothing and stay themselves
ANSWERS = {REPRODUCED: "holds", EQUIVALENT: "holds", SMALLER: "holds at another size",
           LARGER: "holds at another size", NOT_REPRODUCED: "does not hold", CONTRADICTED: "does not hold",
           NOT_EQUIVALENT: "does not hold", SIZE_OPEN: "open", INCONCLUSIVE: "open", TOO_FEW: "open",
           NOT_TESTED: NOT_TESTED, NOT_EXERCISED: NOT_EXERCISED, NOT_APPLICABLE: NOT_APPLICABLE}
#: what each word says, the method section's table (in VERDICTS' order)
MEANINGS = {
    REPRODUCED: "the interval lies on the original's side of 1 and wholly inside the band (the original's ratio "
                "×/÷ the band factor, but no nearer to 1 than its square root)",
    SMALLER: "on the original's side of 1, wholly nearer to 1 than the band",
    LARGER: "on the original's side of 1, wholly beyond the band",
    NOT_REPRODUCED: "the interval contains 1 but lies wholly nearer to 1 than the band: the original's size "
                    "does not hold; ours is at most (for a fall, at least) the interval's far end",
    CONTRADICTED: "the interval lies wholly on the other side of 1",
    EQUIVALENT: "a claim of no difference: the two one-sided tests' interval lies within ×/÷ the margin",
    NOT_EQUIVALENT: "a claim of no difference: that interval lies wholly outside ×/÷ the margin",
    SIZE_OPEN: "on the original's side of 1, across an edge of the band: the direction is settled, the size is "
               "open",
    INCONCLUSIVE: "the interval reaches both 1 and the band (a claim of no difference: the margin and beyond it)",
    TOO_FEW: "the runs made allow no interval at the level",
    NOT_TESTED: "one side of the comparison was not measured",
    NOT_EXERCISED: "the timed phase never used the mechanism the claim is about: no verdict",
    NOT_APPLICABLE: "the claim cannot apply to the target: not counted among the claims tested",
}

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
        check_level(self.level)

    @property
    def tost_level(self) -> float:
        """The interval two one-sided tests at 1 - level each read."""
        return tost_level(self.level)

    def text(self) -> str:
        lvl, tost = _pct(self.level), _pct(self.tost_level)
        return (
            f"Our interval of each ratio is the exact distribution-free {lvl} interval of the shift of log rates "
            f"(Hodges-Lehmann with Mann-Whitney bounds), or, where both sides were measured in the same rounds and "
            f"the rounds are enough for the level ({pairs_for_interval(self.level)} at {lvl}), the exact Wilcoxon "
            f"signed-rank interval of the rounds' paired log ratios (assuming them symmetric about the shift); "
            f"the original's size is its ratio ×/÷ {self.band_factor:g}, but no nearer to 1 than the square "
            f"root of its ratio, half its effect on the log scale (the band: a claimed 1.5x holds from 1.22x to "
            f"3x, so that no effect is never the original's size). reproduced: the interval lies on the original's side of 1 and wholly inside the band; "
            f"same direction, smaller (larger) effect: on the original's side of 1 but wholly nearer to 1 than "
            f"the band (beyond it); same direction, size open: on the original's side of 1 across an edge of the "
            f"band; not reproduced: it contains 1 but lies wholly nearer to 1 than the band, so the original's "
            f"size does not hold and ours is at most the interval's far end; contradicted: it lies wholly on the "
            f"other side of 1; inconclusive: it reaches both 1 and the band, and runs to settle are the runs per "
            f"side that would decide it with {_pct(POWER)} power at the ratio and spread observed (normal-theory "
            f"sample size over the Mann-Whitney efficiency 3/π). Each of these words is wrong at most "
            f"{_pct((1 - self.level) / 2)} of the time (one tail of the interval). A claim of no "
            f"difference is equivalent when the {tost} interval (two one-sided tests at {_pct(1 - self.level)}) "
            f"lies within ×/÷ {self.equivalence_margin:g} of 1, not equivalent when it lies wholly outside, "
            f"otherwise inconclusive; each of those two words is wrong at most {_pct(1 - self.level)} of the time "
            f"(one of the two tests). too few runs: the runs made allow no interval at that level "
            f"({runs_for_interval(self.level)} per side are the fewest for {lvl}); not tested: one side was not "
            f"measured; not exercised: the timed phase never used the mechanism the claim is about; not "
            f"applicable: the claim cannot apply to the target (neither is counted among the claims tested)."
        )


def _pct(x: float) -> str:
    return f"{round(x * 100, 2):g} %"


def band_edges(original_ratio: float, band_factor: float) -> tuple[float, float]:
    """The original's size on the log scale, signed so that its effect is
    positive: (near, far) edges. The near edge is ×/÷ band_factor from the
    original's ratio, but never nearer to 1 than half its effect: a band
    that reached 1 (a claimed 1.5x ÷ 2) would count no effect as the
    original's size, and the claim could never be found not to hold."""
    effect, band = abs(math.log(original_ratio)), math.log(band_factor)
    return max(effect - band, effect / 2.0), effect + band


def band(original_ratio: float, band_factor: float) -> list[float]:
    """The band as ratios, [low, high]."""
    near, far = band_edges(original_ratio, band_factor)
    sign = 1.0 if original_ratio > 1.0 else -1.0
    return sorted((math.exp(sign * near), math.exp(sign * far)))


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
    near, far = band_edges(original_ratio, band_factor)
    if hi < 0.0:
        return CONTRADICTED, "opposite", None
    if lo <= 0.0:
        if hi < near:
            return NOT_REPRODUCED, "unsettled", "smaller"
        return INCONCLUSIVE, "unsettled", None
    if hi < near:
        return SMALLER, "same", "smaller"
    if lo > far:
        return LARGER, "same", "larger"
    if near <= lo and hi <= far:
        return REPRODUCED, "same", "similar"
    return SIZE_OPEN, "same", None


def decide_equivalence(low: float, high: float, margin: float) -> tuple[str, str]:
    """(verdict, size) of a claim of no difference, given the interval that two
    one-sided tests read."""
    if low >= 1.0 / margin and high <= margin:
        return EQUIVALENT, "within margin"
    if low > margin or high < 1.0 / margin:
        return NOT_EQUIVALENT, "beyond margin"
    return INCONCLUSIVE, None


def bound(original_ratio: float, r: RatioInterval) -> dict[str, float]:
    """A "not reproduced" claim's answer: ours is at most the interval's high
    end (a claimed rise) or at least its low end (a claimed fall)."""
    return {"at_most": r.high} if original_ratio > 1.0 else {"at_least": r.low}


def bound_text(entry: dict) -> str:
    """"at most 1.65x" for an entry that has a bound, else ""."""
    b = entry.get("bound") or {}
    if "at_most" in b:
        return f"at most {b['at_most']:.3g}x"
    if "at_least" in b:
        return f"at least {b['at_least']:.3g}x"
    return ""


def runs_to_decide(original_ratio: float, r: RatioInterval, band_factor: float, level: float) -> int | None:
    """Runs per side that would decide an open effect claim at the observed
    ratio and spread: those that put its interval clear of the band edge
    nearest the estimate (an interval that keeps 1 is then decided, "not
    reproduced" or "smaller", while one clear of 1 alone, still across the
    edge, only turns "size open"); for an estimate on the other side of 1,
    the fewer of those that exclude 1 (contradicted) or the near edge. Never
    fewer than one more than the runs made (those did not decide it)."""
    near, far = (math.exp(e) for e in band_edges(original_ratio, band_factor))
    if original_ratio < 1.0:
        near, far = 1.0 / near, 1.0 / far
    if (r.ratio > 1.0) != (original_ratio > 1.0) and r.ratio != 1.0:
        edges = [1.0, near]
    else:
        edges = [min((near, far), key=lambda e: abs(math.log(r.ratio / e)))]
    runs = [n for n in (runs_to_exclude(r.ratio, e, r.log_sd, level) for e in edges) if n is not None]
    return max(min(runs), max(r.runs) + 1) if runs else None


def _at_least_one_more(needed: int | None, r: RatioInterval) -> int | None:
    return None if needed is None else max(needed, max(r.runs) + 1)


def _interval(ours: Samples, base: Samples, level: float) -> RatioInterval | None:
    """Given {round: rate} for both sides (boatload.workflow.plan's rounds are the reps),
    the paired interval over the rounds both have when they are enough for
    `level`, else the unpaired one (boatload.analysis.intervals.round_ratio_interval)."""

    if ours is None or base is None or len(ours) == 0 or len(base) == 0:
        return None
    return round_ratio_interval(ours, base, level)


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
        "pairs": getattr(r, "pairs", None),
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
    extra = {"band": band(original_ratio, rule.band_factor), **extra}
    if r is None:
        return _entry(text, "effect", original_ratio, None, NOT_TESTED, None, None, None, extra)
    if r.low is None:
        needed = max(runs_for_interval(rule.level), runs_to_exclude(r.ratio, 1.0, r.log_sd, rule.level) or 0)
        return _entry(text, "effect", original_ratio, r, TOO_FEW, None, None, needed, extra)
    verdict, direction, size = decide(original_ratio, r.low, r.high, rule.band_factor)
    runs = runs_to_decide(original_ratio, r, rule.band_factor, rule.level) if verdict in OPEN else None
    if verdict == NOT_REPRODUCED:
        extra = {**extra, "bound": bound(original_ratio, r)}
    return _entry(text, "effect", original_ratio, r, verdict, direction, size, runs, extra)


def not_exercised(entry: dict[str, Any], reason: str) -> dict[str, Any]:
    """A claim whose mechanism did not run in the timed phase: its interval is
    kept for the record, its verdict is "not exercised", with the reason."""
    return {**entry, "verdict": NOT_EXERCISED, "direction": None, "size": None, "runs_to_settle": None,
            "bound": None, "reason": reason}


def not_applicable(text: str, test: str, reason: str, original_ratio: float | None = None,
                   **extra: Any) -> dict[str, Any]:
    """A claim that cannot apply to the target (tmpfs has no O_DIRECT): listed
    with the reason, counted among no claims tested."""
    return _entry(text, test, original_ratio, None, NOT_APPLICABLE, None, None, None, {"reason": reason, **extra})


def claims_tested(entries: Sequence[dict]) -> list[dict]:
    """The claims tested here: all but those not exercised or not applicable."""
    return [v for v in entries if v.get("verdict") not in UNTESTABLE]


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
    runs = (_at_least_one_more(runs_to_decide_equivalence(r.ratio, r.log_sd, m, rule.level), r)
            if verdict == INCONCLUSIVE else None)
    return _entry(text, "no difference", original_ratio, r, verdict, direction, size, runs, extra)
