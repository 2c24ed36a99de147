"""The sequential design `boatload reproduce --settle` follows: a fixed number
of looks at planned run counts, and the error rate spent across them.

A claim left undecided by the first runs is looked at again after more
repetitions, at most `looks` times in all, the first look being the runs
already made. Looking again and again at a growing sample inflates the chance
of a false claim, so each look gets a share of the total alpha from a spending
function fixed in advance: the Lan-DeMets O'Brien-Fleming-type function
alpha(t) = 2 - 2 Phi(z_(1-alpha/2) / sqrt(t)) of the information fraction
t = runs at the look / runs at the last look. It spends almost nothing early,
when few runs make a wide interval, and most at the last look.

Look k is judged at level 1 - (alpha(t_k) - alpha(t_(k-1))), the alpha spent
at that look alone. The chance of a false claim over all looks is at most the
sum of those shares (the union bound), alpha(1) = alpha, whatever the looks'
correlation and however coarse the exact rank intervals' levels: the design
is conservative rather than exact, and it never needs the joint distribution
of the looks. A claim decided at a look is frozen; it is not looked at again.

When the first look is the workflow's own analysis of the first runs (at
the verdict rule's level), its interval already spends the tail share that
interval has, `first_alpha` (4 + 4 runs: 2/70 = 0.029 of 0.05): the first
look is judged at 1 - first_alpha and the rest, alpha - first_alpha, is
spent over the later looks by the same function of their own information
fraction, (n - n_1) / (n_last - n_1). That share is each claim's own (its
first interval's tail; boatload.workflow.settle.look_level): the bound holds
claim by claim, so one claim's looks are not judged at the level a sibling's
larger first share leaves. A look may also leave out claims (a
time budget chooses which it measures): a claim's verdict at a look is then
judged at that look's level on its runs, and the union bound still holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist


def obrien_fleming_spent(t: float, alpha: float) -> float:
    """The alpha spent by information fraction `t` (0 < t <= 1): the Lan-DeMets
    O'Brien-Fleming-type function, which is `alpha` at t = 1."""
    if not 0.0 < t <= 1.0:
        raise ValueError(f"information fraction must lie in (0, 1], not {t}")
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    return 2.0 - 2.0 * NormalDist().cdf(z / math.sqrt(t))


@dataclass(frozen=True)
class Design:
    """`looks` looks at runs per side `schedule` (the first: the runs made),
    spending `alpha` in all."""

    alpha: float
    schedule: tuple[int, ...]
    first_alpha: float = 0.0  # spent at the first look (the workflow's analysis); 0: by the function

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 0.5:
            raise ValueError(f"settle.alpha: must lie between 0 and 0.5, not {self.alpha}")
        if len(self.schedule) < 2 or any(b <= a for a, b in zip(self.schedule, self.schedule[1:])) \
                or self.schedule[0] < 1:
            raise ValueError(f"settle: the looks' runs per side must rise from at least 1, not {list(self.schedule)}")
        if not 0.0 <= self.first_alpha < self.alpha:
            raise ValueError(f"settle: the first look's alpha must lie in [0, {self.alpha}), not {self.first_alpha}")

    @classmethod
    def planned(cls, alpha: float, first_runs: int, max_runs: int, looks: int, first_alpha: float = 0.0) -> "Design":
        """`looks` looks from the `first_runs` made to `max_runs` per side, evenly spaced."""
        if looks < 2:
            raise ValueError(f"settle.looks: at least 2 (the first runs and one more look), not {looks}")
        if max_runs < first_runs + looks - 1:
            raise ValueError(f"settle.max_runs: {max_runs} cannot hold {looks} looks from the {first_runs} "
                             f"runs made (at least {first_runs + looks - 1})")
        step = (max_runs - first_runs) / (looks - 1)
        return cls(alpha, tuple(first_runs + round(step * k) for k in range(looks)), first_alpha)

    @property
    def looks(self) -> int:
        return len(self.schedule)

    def spent(self) -> list[float]:
        """The alpha spent at each look (they add up to `alpha`)."""
        if self.first_alpha > 0.0:
            first, last, rest = self.schedule[0], self.schedule[-1], self.alpha - self.first_alpha
            total = [self.first_alpha] + [self.first_alpha + obrien_fleming_spent((n - first) / (last - first), rest)
                                          for n in self.schedule[1:]]
        else:
            total = [obrien_fleming_spent(n / self.schedule[-1], self.alpha) for n in self.schedule]
        return [b - a for a, b in zip([0.0, *total], total)]

    def levels(self) -> list[float]:
        """The level of each look's interval: 1 - the alpha spent at that look."""
        return [1.0 - a for a in self.spent()]

    def text(self) -> str:
        levels = ", ".join(f"{lvl * 100:.4g} %" for lvl in self.levels())
        first = (f", the first look (the workflow's analysis) spending {self.first_alpha:.3g} and the later ones "
                 f"the rest" if self.first_alpha > 0.0 else "")
        return (f"at most {self.looks} looks at {', '.join(map(str, self.schedule))} runs per side, "
                f"O'Brien-Fleming-type alpha spending of {self.alpha:g} in all{first}, intervals at {levels}")
