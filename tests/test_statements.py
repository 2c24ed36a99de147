"""One verdict per original statement (boatload.analysis.statements): the rule that
combines a statement's per-target verdicts, and the paper's statement table
and abstract count on a fixture run."""

from __future__ import annotations

import pytest

from boatload.analysis.statements import DEPENDS, combine, source_of, statements


@pytest.mark.parametrize(("verdicts", "want"), [
    (["reproduced", "reproduced"], "reproduced"),
    (["reproduced", "not exercised"], "reproduced"),  # a target that never exercised it does not count
    (["reproduced", "inconclusive"], "inconclusive"),  # reproduced only if on every target where exercised
    (["reproduced", "contradicted"], DEPENDS),
    (["not reproduced", "inconclusive", "contradicted"], DEPENDS),
    (["not reproduced", "not reproduced"], "not reproduced"),
    (["too few runs", "not tested"], "inconclusive"),
    (["not applicable", "not exercised"], "not applicable"),
    (["equivalent", "equivalent"], "equivalent"),
    (["same direction, size open", "reproduced"], "inconclusive"),
])
def test_the_rule(verdicts, want):
    assert combine(verdicts) == want


def test_claims_group_by_statement_and_say_whose_words():
    claims = [
        {"claim": "IOPS nearly double (ext4)", "statement": "IOPS nearly double", "verdict": "contradicted",
         "hardware": "this machine"},
        {"claim": "IOPS nearly double (tmpfs, O_DIRECT)", "statement": "IOPS nearly double",
         "verdict": "not applicable", "hardware": None},
        {"claim": "An external log gives \u201can high boost\u201d, XFS", "statement": "An external log gives \u201can high boost\u201d",
         "verdict": "not reproduced", "hardware": "raid-hdd"},
    ]
    got = statements("x", claims)
    assert [s["statement"] for s in got] == ["IOPS nearly double", "An external log gives \u201can high boost\u201d"]
    first, second = got
    assert (first["verdict"], first["tested"], first["claims"], first["decided"]) == ("contradicted", 1, 2, True)
    assert first["hardware"] == ["this machine"] and first["source"] == "derived by us"
    assert second["source"] == "the original's words" == source_of(second["statement"])
    assert second["hardware"] == ["raid-hdd"]
