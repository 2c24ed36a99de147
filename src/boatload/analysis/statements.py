"""One verdict per original statement: a study's claims are one statement of
the original tested on several targets and kinds of hardware ("IOPS nearly
double going from one file to two" on ext4, XFS and tmpfs, buffered and
O_DIRECT); the reader asks whether the statement holds here.

The rule, stated once (the paper's conclusion gives it):

* a statement no target could test (every claim not exercised or not
  applicable) keeps that word;
* when every target where it was tested gives the same decided verdict, the
  statement has that verdict ("reproduced" only if reproduced on every
  target where it was exercised);
* when two targets give different decided verdicts, it "depends on the
  target" (a decided answer: the table under it says where it holds);
* otherwise (some target still open and the decided ones agree) it is open:
  "inconclusive".

A statement's verdict is wrong only if one of its per-target verdicts is, so
with k tested targets it is wrong at most k times the per-claim rate (the
union bound; for "reproduced" or "contradicted" on every target, at most the
per-claim rate itself, since the one target where the truth differs must be
decided wrongly); each statement gives its k.

The statement's words are the original's when its text quotes the post
(“…”), otherwise ours, derived from the post's numbers or figures.
"""

from __future__ import annotations

from collections.abc import Iterable

from boatload.analysis.verdict import DECIDED, INCONCLUSIVE, UNTESTABLE

DEPENDS = "depends on the target"
ORIGINAL_WORDS = "the original's words"
DERIVED = "derived by us"


def source_of(statement: str) -> str:
    """Whether a statement quotes the original (“…”) or is ours."""
    return ORIGINAL_WORDS if "\u201c" in statement else DERIVED


def combine(verdicts: Iterable[str]) -> str:
    """The statement's verdict from its claims' verdicts (the rule above)."""
    words = list(verdicts)
    tested = [w for w in words if w not in UNTESTABLE]
    if not tested:
        return words[0] if words else INCONCLUSIVE
    decided = {w for w in tested if w in DECIDED}
    if len(decided) > 1:
        return DEPENDS
    if len(decided) == 1 and len(tested) == sum(w in decided for w in tested):
        return decided.pop()
    return INCONCLUSIVE


def statements(study: str, claims: list[dict]) -> list[dict]:
    """A study's statements in the order their first claim comes, each with
    its verdict, its claims' verdicts, hardware and targets."""
    groups: dict[str, list[dict]] = {}
    for c in claims:
        groups.setdefault(c.get("statement") or c["claim"], []).append(c)
    out = []
    for text, members in groups.items():
        tested = [c for c in members if c["verdict"] not in UNTESTABLE]
        verdict = combine(c["verdict"] for c in members)
        out.append({
            "study": study,
            "statement": text,
            "source": source_of(text),
            "verdict": verdict,
            "decided": verdict in DECIDED or verdict == DEPENDS,
            "claims": len(members),
            "tested": len(tested),
            "hardware": sorted({str(c.get("hardware") or "this machine") for c in tested}),
            "per_claim": [{"claim": c["claim"], "verdict": c["verdict"], "hardware": c.get("hardware")}
                          for c in members],
        })
    return out
