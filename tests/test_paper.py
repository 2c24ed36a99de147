"""The paper builds from the notebook's outputs, reproducibly, with the
numbers of the summary in its text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from boatload.publish import paper
from notebook_checks import fmt_rate, fmt_ratio, load_fixtures, pdf_text

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def results(forest_fixture_run):
    return forest_fixture_run["results"]


@pytest.fixture(scope="module")
def built(results, tmp_path_factory):
    out = tmp_path_factory.mktemp("pdf")
    first = paper.build_paper(REPO, out / "a" / "paper.pdf", results)
    second = paper.build_paper(REPO, out / "b" / "paper.pdf", results)
    return first, second


def test_pdf_is_reproducible(built):
    first, second = built
    a, b = first.read_bytes(), second.read_bytes()
    assert a.startswith(b"%PDF")
    assert a == b


def test_in_place_build_matches_staged_build(results, built, tmp_path):
    """Results inside the root compile in place; the bytes are the same."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "paper", root / "paper")
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    shutil.copytree(results, root / "results")
    out = paper.build_paper(root, root / "results" / "paper" / "paper.pdf", root / "results")
    assert out.read_bytes() == built[0].read_bytes()


def test_text_quotes_the_summary(results, built):
    summary = json.loads((results / "tables" / "forest-summary.json").read_text())
    text = pdf_text(built[0])
    assert "boatload contributors" in text
    for f in summary["fastest"]:
        assert f["method_label"] in text
        assert f"{fmt_rate(f['files_per_s'])} ({round(summary['level'] * 100)}% CI" in text
    v = summary["verdict"]
    assert v["claim"] in text and v["verdict"] in text
    assert f"{fmt_ratio(v['ours'])}×" in text
    assert f"{summary['original']['fastest']['files_per_s']:,}" in text  # published numbers exact
    assert summary["verdict_rule"][:40] in text
    # the projection of the full forest: a row per target beside the original's time
    proj = summary["projection"]
    assert "Projected time for the full 1e9 forest" in text and proj["targets"]
    table = text[text.index("Projected time for the full 1e9 forest"):]  # pdftotext reads it column by column
    for p in proj["targets"]:
        mark = "‡" if p["model"] == proj["models"]["largest"] else ""
        assert f"{fmt_ratio(p['exponent'])}{mark} {p['h']:,} h {p['min']} min {fmt_ratio(p['vs_original'])}" in table
    assert "original: native program" in table and "– 15 h 23 min" in table
    assert proj["assumption"] in text.replace("\u2019", "'")
    # provenance appendix
    prov = json.loads((results / "provenance.json").read_text())
    assert prov["lock_sha256"] in text and prov["kernel"] in text
    squeezed = "".join(text.split())  # an option string may break after a comma
    for t in prov["targets"]:
        assert t["mount_options"] in squeezed


def test_paper_date_comes_from_the_runs(results, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    summary = json.loads((results / "tables" / "forest-summary.json").read_text())
    when = paper.paper_timestamp(results, ["forest"])
    assert when.isoformat().startswith(summary["last_run_at"][:16])
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    assert paper.paper_timestamp(results, ["forest"]).year == 1970


def test_main(results, tmp_path):
    out = tmp_path / "cli" / "paper.pdf"
    assert paper.main(["--root", str(REPO), "--results", str(results), "--out", str(out)]) == 0
    assert out.read_bytes().startswith(b"%PDF")
    assert not list(out.parent.glob(".*.tmp"))  # written atomically, nothing left behind


def test_missing_results(tmp_path):
    assert paper.main(["--root", str(REPO), "--results", str(tmp_path), "--out", str(tmp_path / "p.pdf")]) == 1


def test_paper_without_measurements(tmp_path):
    """Without root every run stands in on a plain directory and is skipped:
    the notebook still writes an empty table and a summary, and the paper says
    there is nothing to compare."""
    run = load_fixtures("fixtures").run_forest_notebook(tmp_path / "work", REPO, variant="substituted")
    results = run["results"]
    table = (results / "tables" / "forest.csv").read_text().splitlines()
    assert table[0].startswith("target,filesystem,method") and len(table) == 1
    summary = json.loads((results / "tables" / "forest-summary.json").read_text())
    assert summary["counts"]["pairs_measured"] == 0 and summary["fastest"] == []
    assert {v["verdict"] for v in summary["verdicts"]} == {"not tested"}
    assert (results / "figures" / "forest-rates.svg").stat().st_size > 1000

    pdf = paper.build_paper(REPO, tmp_path / "paper.pdf", results)
    text = pdf_text(pdf)
    assert "No run produced a measurement" in text
    assert "not tested" in text
    # no scale size measured: no projection, and no table of it
    proj = summary["projection"]
    assert proj["targets"] == [] and {p["reason"] for p in proj["not_projected"]} == {
        "0 scale sizes measured, a fit needs at least 2"}
    assert "Projected time" not in text and "The full forest, projected" not in text


def test_conclusion_names_the_hardware_of_every_verdict(journal_fixture_run, tmp_path):
    """The conclusion's verdict table gives the journal claims twice, on this
    machine's disk and on the modelled array, each naming its hardware."""
    results = journal_fixture_run["results"]
    summary = json.loads((results / "tables" / "journal-summary.json").read_text())
    text = pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", results))
    conclusion = text[text.index("Conclusion We reran"):text.index("References")]
    hardware = {}
    for v in summary["verdicts"]:
        hardware[v["hardware"]] = hardware.get(v["hardware"], 0) + 1
    # the original create's 12 claims on this machine's disk (XFS and ext4) and 6 on the array; each
    # durable create's two create claims per file system: 4 and 2
    durable = len({v.get("durability", "none") for v in summary["verdicts"]}) - 1
    assert hardware == {"this machine": 12 + 4 * durable, "raid-hdd": 6 + 2 * durable}
    # (the hardware's name only: a table cell's line break can bring another column's word into "(loop images)")
    assert conclusion.count("on this machine's disk") == 12 + 4 * durable
    assert conclusion.count("XFS on modelled raid-hdd") == 6 + 2 * durable


def test_no_modelled_hardware_paragraph_without_modelled_claims(built):
    """The threats section speaks of models only when some claim was measured on one."""
    text = pdf_text(built[0])
    assert "Modelled hardware. " not in text and "filter(" not in text
    assert "C Modelled hardware" in text  # the appendix with the presets is always there


def test_each_statement_gets_one_verdict(journal_fixture_run, tmp_path):
    """The abstract counts the originals' statements, and the statement table
    gives each journal statement once, with its claims' count."""
    from boatload.analysis.statements import statements

    results = journal_fixture_run["results"]
    summary = json.loads((results / "tables" / "journal-summary.json").read_text())
    text = pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", results))
    want = statements("journal", summary["verdicts"])
    assert len(want) == 6 and sum(s["claims"] for s in want) == len(summary["verdicts"])
    abstract = text[:text.index("Introduction")]
    assert f"{len(want)} statements of the originals" in abstract
    table = text[text.index("One verdict per original statement"):text.index("Table", text.index("One verdict per original statement") + 40)]
    for s in want:
        assert f"{s['tested']} of {s['claims']}" in table, s["statement"]
