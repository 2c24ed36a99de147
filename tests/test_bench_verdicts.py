"""bench/verdicts.py on two results directories of the journal notebook: the
fixture as it is, and the same runs with two targets' create rates changed,
so that two claims of the original create change verdict to the opposite direction."""

from __future__ import annotations

import sys

import polars as pl
import pytest

from conftest import ROOT
from notebook_checks import load_fixtures

sys.path.insert(0, str(ROOT / "bench"))
import verdicts as bv  # noqa: E402

FX = load_fixtures("journal")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    a = FX.run_notebook(tmp_path_factory.mktemp("run-a"), ROOT)
    runs = pl.read_parquet(a["journal"])
    # the original create only (the durable creates' rows keep their rates)
    create = (pl.col("phase") == "sequential_create") & (pl.col("durability") == "none")
    changed = runs.with_columns(
        # ext4's external log: 0.875x of the internal one becomes 1.14x (same direction, smaller effect);
        # XFS's on the modelled array (its log on the modelled SSD): 16x becomes 0.8x (contradicted)
        pl.when(create & (pl.col("target") == "ext4-journal-external")).then(pl.col("ops_per_s") * 1.3)
        .when(create & (pl.col("target") == "xfs-raid-log-ssd")).then(pl.col("ops_per_s") * 0.05)
        .otherwise(pl.col("ops_per_s")).alias("ops_per_s")
    )
    work = tmp_path_factory.mktemp("run-b")
    data = work / "changed.parquet"
    changed.write_parquet(data)
    b = FX.run_notebook(work, ROOT, data=data)
    return a["results"], b["results"]


def test_the_same_results_agree_on_every_claim(two_runs, capsys):
    a, _ = two_runs
    n = len(bv.claims(a))
    assert n >= len(FX.EXPECTED)  # the original create's claims and the durable creates'
    result = bv.compare(bv.claims(a), bv.claims(a))
    assert result["agree"] == result["claims"] == n and result["conflicts"] == 0
    assert bv.main([str(a), str(a), "--min-agree", str(n)]) == 0
    assert f"{n} of {n} claims agree; 0 in conflict" in capsys.readouterr().out


def test_changed_runs_show_each_changed_claim(two_runs, capsys):
    a, b = two_runs
    result = bv.compare(bv.claims(a), bv.claims(b))
    differ = {(r["claim"].split(",")[-1].strip(), r["a"], r["b"], r["conflict"]) for r in result["rows"] if not r["agree"]}
    assert differ == {
        ("ext4 on this machine's disk (loop images)", "contradicted", "same direction, smaller effect", True),
        ("XFS on modelled raid-hdd", "reproduced", "contradicted", True),
    }
    assert result["agree"] == result["claims"] - 2 and result["conflicts"] == 2
    assert result["same_answer"] == result["claims"] - 2  # opposite answers, not only other words
    assert bv.main([str(a), str(b)]) == 1  # a conflict fails whatever the count
    out = capsys.readouterr().out
    assert out.count("CONFLICT journal: An external log on a fast device") == 2
    assert f"{result['claims'] - 2} of {result['claims']} claims agree; 2 in conflict" in out


def test_a_claim_only_one_run_has_is_a_difference(two_runs, tmp_path):
    a, _ = two_runs
    one = bv.claims(a)
    fewer = dict(list(one.items())[1:])
    result = bv.compare(one, fewer)
    assert result["agree"] == len(one) - 1 and result["conflicts"] == 0
    assert [r["b"] for r in result["rows"] if not r["agree"]] == [None]
    with pytest.raises(SystemExit):
        bv.main([str(tmp_path), str(a)])  # not a results directory: argparse's one-line error


def test_words_that_differ_only_beyond_the_answer_give_the_same_answer(capsys):
    from boatload.analysis.verdict import ANSWERS, UNTESTABLE, VERDICTS

    assert set(ANSWERS) == set(VERDICTS)
    claims = {("s", "x"): "not reproduced", ("s", "y"): "same direction, smaller effect", ("s", "z"): "equivalent",
              ("s", "u"): "not exercised"}
    other = {("s", "x"): "contradicted", ("s", "y"): "not reproduced", ("s", "z"): "equivalent",
             ("s", "u"): "not exercised"}
    result = bv.compare({k: {"verdict": v} for k, v in claims.items()}, {k: {"verdict": v} for k, v in other.items()})
    rows = {r["claim"]: r for r in result["rows"]}
    assert (rows["x"]["agree"], rows["x"]["same_answer"], rows["x"]["conflict"]) == (False, True, False)
    assert (rows["y"]["agree"], rows["y"]["same_answer"]) == (False, False)
    assert (result["tested"], result["tested_agree"], result["tested_same_answer"]) == (3, 1, 2)
    assert "not exercised" in UNTESTABLE and result["agree"] == 2
    print(bv.report(result))
    out = capsys.readouterr().out
    assert "ANSWER s: y" in out and "ANSWER s: x" not in out
    assert "of the 3 claims tested: 1 agree word for word, 2 give the same answer" in out


def test_over_more_runs_each_pairs_agreement_and_each_claims_share_of_splits(two_runs, capsys):
    a, b = two_runs
    n = bv.compare(bv.claims(a), bv.claims(a))["tested"]
    result = bv.over_pairs([bv.claims(a), bv.claims(a), bv.claims(b)])
    # a with a agrees on all; a with b, twice, on all but the two changed claims
    assert result["pairs"] == 3 and sorted(result["shares"]) == [(n - 2) / n, (n - 2) / n, 1.0]
    assert len(result["splits"]) == 2 and set(result["splits"].values()) == {2 / 3}
    assert bv.main([str(a), str(a), str(b)]) == 0  # the exit status is A's and B's
    out = capsys.readouterr().out
    assert f"over 3 runs (3 pairs): {100 * (1 + 2 * (n - 2) / n) / 3:.1f} % of the claims tested" in out
    assert out.count(" 67 % of pairs split journal: An external log on a fast device") == 2


def test_split_rate_uses_the_verdicts_exact_interval_and_more_runs_split_fewer_claims():
    """bench/split_rate.py: the interval is the verdicts' exact Mann-Whitney one at 95 % (4 + 4 runs: the
    range of the 16 differences, 68 of 70 orderings, as the quick runs' journal claims report), and at one
    spread two runs of 8 + 8 split fewer claims near a line than two runs of 4 + 4; runs ten times less
    noisy split few."""
    import numpy as np
    import split_rate as sr

    assert sr.lower_rank(4) == (1, pytest.approx(68 / 70))
    assert sr.lower_rank(5) == (3, pytest.approx(1 - 8 / 252))
    with pytest.raises(ValueError, match="allow no interval"):
        sr.lower_rank(3)
    rng = np.random.default_rng(7)
    four, eight = (sr.split_rate(n, 0.10, 0.6, 4000, rng) for n in (4, 8))
    assert 0.12 < four < 0.26 and 0.06 < eight < 0.15 and eight < four - 0.04
    assert sr.split_rate(4, 0.01, 0.6, 2000, rng) < 0.05
