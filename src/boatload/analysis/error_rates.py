"""How often each verdict word is wrong: claims simulated with a known true
ratio at the run counts a config uses, decided by :mod:`boatload.analysis.verdict`,
and each verdict checked against the truth.

A word is wrong when what it asserts about the true ratio is false:
``reproduced`` when the truth is outside the band (or not on the original's
side of 1), ``contradicted`` when the truth is on the original's side (or at
1), ``not reproduced`` when the truth reaches the band, ``equivalent`` when
the truth is at or beyond the margin, and so on (:func:`is_wrong`). Its
wrong-decision rate at a truth is the share of simulated claims given that
word there; the rule promises each rate at most 1 - level (two one-sided
tails), whatever the truth. The truths are placed where a lax rule errs most:
on and just past the band's edges, at 1, at the margin.

Runs are lognormal with a shift between the sides (the model under which the
Mann-Whitney interval is exact); the spread does not change the rates of an
exact interval, only how many claims get decided. Paired (`paired=True`), the
two sides of a round share that round's own lognormal factor (the drift and
the neighbours a round meets) and the claim gets {round: rate}, so the verdict
takes the signed-rank interval of the rounds where they are enough for its level.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from boatload.analysis.verdict import (
    CONTRADICTED,
    EQUIVALENT,
    INCONCLUSIVE,
    LARGER,
    NOT_EQUIVALENT,
    NOT_REPRODUCED,
    REPRODUCED,
    SIZE_OPEN,
    SMALLER,
    Rule,
    band_edges,
    claim,
    no_difference,
)

#: words that assert something about the truth, and so can be wrong
ASSERTING = (REPRODUCED, SMALLER, LARGER, SIZE_OPEN, NOT_REPRODUCED, CONTRADICTED, EQUIVALENT, NOT_EQUIVALENT)
#: originals simulated: a large rise, a rise whose band ends near 1, a large fall, and a rise whose band holds 1
ORIGINALS = (24.4, 4.0, 2.4, 0.25, 1.5)


def is_wrong(verdict: str, truth: float, original: float | None, rule: Rule) -> bool:
    """Whether `verdict` misstates a true ratio `truth` (original None: a
    claim of no difference). Edges count against every word that excludes
    them, so a rate measured there bounds the rate just beyond."""
    if original is None:
        dist, margin = abs(math.log(truth)), math.log(rule.equivalence_margin)
        return {EQUIVALENT: dist >= margin, NOT_EQUIVALENT: dist <= margin}.get(verdict, False)
    sign = 1.0 if original > 1.0 else -1.0
    x = sign * math.log(truth)
    low, high = band_edges(original, rule.band_factor)
    holds = {
        REPRODUCED: x > 0.0 and low <= x <= high,
        SMALLER: 0.0 < x < low,
        LARGER: x > high,
        SIZE_OPEN: x > 0.0,
        NOT_REPRODUCED: x < low,
        CONTRADICTED: x < 0.0,
    }
    return verdict in holds and not holds[verdict]


def truths_for(original: float | None, rule: Rule) -> list[float]:
    """Where to put the truth: the band's edges and just beyond them, its
    middle, 1 and either side of it (no difference: the margin's edges)."""
    if original is None:
        m = rule.equivalence_margin
        return [1.0, m, 1.0 / m, m**1.5, 1.0 / m**0.5]
    sign = 1.0 if original > 1.0 else -1.0
    near, far = band_edges(original, rule.band_factor)
    mid = (near + far) / 2.0
    logs = (near - 0.2 * (mid - near), near, (near + mid) / 2.0, mid, (mid + far) / 2.0, far, far + 0.2 * (far - mid))
    out = [math.exp(sign * x) for x in logs]
    out += [1.0, math.exp(-sign * 0.1), math.exp(-sign * 0.5), math.exp(sign * 0.1)]
    return sorted(set(round(t, 12) for t in out))


@dataclass(frozen=True)
class Case:
    original: float | None  # None: a claim of no difference
    truth: float
    runs: int  # per side
    counts: dict  # verdict -> claims given it
    wrong: dict  # verdict -> claims given it wrongly
    draws: int

    def rate(self, verdict: str) -> float:
        return self.wrong.get(verdict, 0) / self.draws


Decider = Callable[[float | None, list, list, Rule], str]


def rule_verdict(original: float | None, ours: list, base: list, rule: Rule) -> str:
    if original is None:
        return no_difference("", None, ours, base, rule)["verdict"]
    return claim("", original, ours, base, rule)["verdict"]


def simulate(rule: Rule, runs: int, original: float | None, truth: float, draws: int = 2000, log_sd: float = 0.15,
             seed: int = 0, decide: Decider = rule_verdict, paired: bool = False, round_sd: float = 0.2) -> Case:
    """`draws` claims of `runs` runs per side whose true ratio is `truth`; `paired`:
    measured in `runs` rounds, each round's factor (spread `round_sd`) on both sides."""
    rng = np.random.default_rng([seed, runs, int(1e6 * (original or 0.0)), int(1e9 * truth), int(paired)])
    counts: dict[str, int] = {}
    wrong: dict[str, int] = {}
    for _ in range(draws):
        ours = truth * rng.lognormal(0.0, log_sd, runs)
        base = rng.lognormal(0.0, log_sd, runs)
        if paired:
            rounds = rng.lognormal(0.0, round_sd, runs)
            v = decide(original, dict(enumerate((ours * rounds).tolist())), dict(enumerate((base * rounds).tolist())),
                       rule)
        else:
            v = decide(original, ours.tolist(), base.tolist(), rule)
        counts[v] = counts.get(v, 0) + 1
        if is_wrong(v, truth, original, rule):
            wrong[v] = wrong.get(v, 0) + 1
    return Case(original, truth, runs, counts, wrong, draws)


def sweep(rule: Rule, runs: Iterable[int], originals: Iterable[float | None] = (*ORIGINALS, None),
          draws: int = 2000, log_sd: float = 0.15, seed: int = 0, decide: Decider = rule_verdict,
          paired: bool = False) -> list[Case]:
    return [simulate(rule, n, o, t, draws, log_sd, seed, decide, paired)
            for n in runs for o in originals for t in truths_for(o, rule)]


def worst(cases: list[Case]) -> dict[tuple[int, str], tuple[float, Case]]:
    """(runs, word) -> the highest wrong-decision rate over the truths, and where."""
    out: dict[tuple[int, str], tuple[float, Case]] = {}
    for c in cases:
        for word in ASSERTING:
            r = c.rate(word)
            if (c.runs, word) not in out or r > out[(c.runs, word)][0]:
                out[(c.runs, word)] = (r, c)
    return out


def decided_share(cases: list[Case]) -> dict[int, float]:
    """Runs -> the share of simulated claims that got a word other than inconclusive or too few runs."""
    total: dict[int, int] = {}
    open_: dict[int, int] = {}
    for c in cases:
        total[c.runs] = total.get(c.runs, 0) + c.draws
        open_[c.runs] = open_.get(c.runs, 0) + sum(n for v, n in c.counts.items()
                                                   if v not in ASSERTING or v in (SIZE_OPEN, INCONCLUSIVE))
    return {n: 1.0 - open_[n] / total[n] for n in total}


def table(cases: list[Case]) -> str:
    """The wrong-decision rates as a text table: per run count and word, the
    worst rate over the truths and the truth where it happened."""
    lines = ["runs/side  word                            worst wrong rate  at truth (original)"]
    for (runs, word), (rate, c) in sorted(worst(cases).items(), key=lambda kv: (kv[0][0], ASSERTING.index(kv[0][1]))):
        where = f"{c.truth:.3g} ({'no difference' if c.original is None else f'{c.original:g}x'})"
        lines.append(f"{runs:>9}  {word:<30}  {100 * rate:>15.2f} %  {where}")
    return "\n".join(lines)
