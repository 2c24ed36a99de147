"""A claim settle decided at a look stays decided: later looks do not reopen
it, and a notebook's summary takes the frozen verdict from the record."""

import json

from boatload.analysis import settle_record
from boatload.workflow.settle import _judge


def _claim(verdict, runs):
    return {"claim": "A beats B", "verdict": verdict, "runs_per_side": [runs, runs], "level": 0.99}


def _record():
    return {"scale": "ci", "rule": settle_record.rule_fingerprint(), "design": {"alpha": 0.05, "looks": 3, "text": "at most 3 looks"}, "looks_made": 1,
            "stopped": None, "first_reps": {"forest": 1}, "points": {"forest/ext4/a": 5, "forest/ext4/b": 5},
            "claims": {"forest: A beats B": {"study": "forest", "points": ["forest/ext4/a", "forest/ext4/b"],
                                              "test": "effect", "decided": False, "look": None, "level": None,
                                              "runs_per_side": [1, 1], "runs_added": 8,
                                              "entry": _claim("too few runs", 1)}}}


def test_a_decided_claim_is_frozen_at_its_look():
    record = _record()
    assert _judge(record, "forest", 2, 0.99, {"verdicts": [_claim("reproduced", 5)]}) == 1
    # a later look that would say otherwise changes nothing
    assert _judge(record, "forest", 3, 0.97, {"verdicts": [_claim("inconclusive", 9)]}) == 0
    frozen = record["claims"]["forest: A beats B"]
    assert (frozen["look"], frozen["level"], frozen["entry"]["verdict"]) == (2, 0.99, "reproduced")


def test_an_open_claim_keeps_its_last_look():
    record = _record()
    _judge(record, "forest", 2, 0.99, {"verdicts": [_claim("inconclusive", 5)]})
    claim = record["claims"]["forest: A beats B"]
    assert not claim["decided"] and claim["look"] == 2 and claim["entry"]["runs_per_side"] == [5, 5]


def test_the_summary_takes_the_frozen_verdict_and_the_runs_added(tmp_path, monkeypatch):
    monkeypatch.delenv(settle_record.LOOK_ENV, raising=False)
    record = _record()
    _judge(record, "forest", 2, 0.99, {"verdicts": [_claim("reproduced", 5)]})
    settle_record.save(tmp_path, record)
    other = {"claim": "C beats D", "verdict": "contradicted"}
    summary = {"verdicts": [_claim("inconclusive", 9), other], "verdict": _claim("inconclusive", 9)}
    out = settle_record.applied(summary, "forest", tmp_path / "forest.parquet")
    assert out["verdicts"][0]["verdict"] == "reproduced" and out["verdict"]["verdict"] == "reproduced"
    assert out["verdicts"][0]["settle"] == {"look": 2, "decided": True, "runs_per_side": [5, 5], "level": 0.99,
                                            "runs_added": 8}
    assert out["verdicts"][1] == other  # a claim settle did not carry is as the notebook made it
    assert out["settle"]["runs_added"] == 8 and out["settle"]["decided"] == 1
    json.dumps(out, allow_nan=False)
    # while settle runs a look, the notebook reports that look's own verdicts
    monkeypatch.setenv(settle_record.LOOK_ENV, "1")
    assert settle_record.applied(summary, "forest", tmp_path / "forest.parquet") is summary


def test_a_record_made_under_another_rule_freezes_nothing(tmp_path, monkeypatch):
    """A verdict frozen by an older verdict rule is not shown as today's: the
    claim is decided on all its runs, and the summary says why."""
    monkeypatch.delenv(settle_record.LOOK_ENV, raising=False)
    record = _record()
    _judge(record, "forest", 2, 0.99, {"verdicts": [_claim("reproduced", 5)]})
    record["rule"] = "0" * 16
    settle_record.save(tmp_path, record)
    summary = {"verdicts": [_claim("not reproduced", 9)]}
    out = settle_record.applied(summary, "forest", tmp_path / "forest.parquet")
    assert out["verdicts"] == summary["verdicts"] and "another verdict rule" in out["settle"]["stale"]
    # and one of today's rule carries it
    record["rule"] = settle_record.rule_fingerprint()
    settle_record.save(tmp_path, record)
    assert settle_record.applied(summary, "forest", tmp_path / "forest.parquet")["verdicts"][0]["verdict"] == "reproduced"


def test_claims_decided_so_far_count_the_records_looks_and_leave_out_the_untested(tmp_path):
    results, runs = tmp_path / "results", tmp_path / "runs"
    (results / "tables").mkdir(parents=True)
    runs.mkdir()
    assert settle_record.decided_so_far(results, runs) is None  # nothing analysed yet
    forest = [_claim("inconclusive", 4), {"claim": "C beats D", "verdict": "contradicted"},
              {"claim": "E beats F", "verdict": "not exercised"}, {"claim": "G beats H", "verdict": "size open"}]
    (results / "tables" / "forest-summary.json").write_text(json.dumps({"verdicts": forest}))
    (results / "tables" / "journal-summary.json").write_text(json.dumps(
        {"verdicts": [{"claim": "I", "verdict": "equivalent"}, {"claim": "J", "verdict": "not applicable"}]}))
    assert settle_record.decided_so_far(results, runs) == (2, 4)
    # a look decides the carried claim: the record's word counts, not the first rounds' summary
    record = _record()
    _judge(record, "forest", 2, 0.99, {"verdicts": [_claim("reproduced", 8)]})
    settle_record.save(runs, record)
    assert settle_record.decided_so_far(results, runs) == (3, 4)


def test_a_claim_the_first_rounds_decided_keeps_that_verdict_when_a_look_adds_runs_to_its_points(tmp_path,
                                                                                                 monkeypatch):
    """A look adds runs to points another claim shares; the analysis after would judge the decided claim
    again on them (unplanned, and it can reopen it): the summary keeps the first rounds' verdict."""
    monkeypatch.delenv(settle_record.LOOK_ENV, raising=False)
    record = _record()
    first = {**_claim("not reproduced", 4), "claim": "A is 3x B", "runs_per_side": [4, 4]}
    record["first_decided"] = {"forest: A is 3x B": first, "journal: E beats F": {"claim": "E beats F",
                                                                                 "verdict": "contradicted"}}
    settle_record.save(tmp_path, record)
    reopened = {**first, "verdict": "inconclusive", "runs_per_side": [8, 8]}
    summary = {"verdicts": [_claim("inconclusive", 9), reopened, {"claim": "G", "verdict": "equivalent"}]}
    out = settle_record.applied(summary, "forest", tmp_path / "forest.parquet")
    assert out["verdicts"][1] == first and "settle" not in out["verdicts"][1]
    assert out["verdicts"][2] == {"claim": "G", "verdict": "equivalent"}  # in neither: as the notebook made it
    # a study with no claim carried: its first rounds' verdicts kept, and no design in its summary
    journal = {"verdicts": [{"claim": "E beats F", "verdict": "inconclusive"}]}
    out = settle_record.applied(journal, "journal", tmp_path / "journal.parquet")
    assert out["verdicts"] == [{"claim": "E beats F", "verdict": "contradicted"}] and "settle" not in out


def test_the_record_keeps_every_claim_the_first_rounds_decided(tmp_path):
    from pathlib import Path

    from boatload.studies.config import load
    from boatload.workflow.settle import _new_record

    config = load(Path(__file__).resolve().parents[1] / "config" / "ci.yaml")
    tables = tmp_path / "tables"
    tables.mkdir()
    decided = {"claim": "A is 3x B", "verdict": "contradicted", "runs_per_side": [4, 4]}
    (tables / "forest-summary.json").write_text(json.dumps({"verdicts": [
        decided, {"claim": "C", "verdict": "not tested"}, {"claim": "D", "verdict": "not exercised"}]}))
    record = _new_record(config, ["forest"], tmp_path)
    assert record["first_decided"] == {"forest: A is 3x B": decided} and record["claims"] == {}
