"""The blog pages: one self-contained HTML file per study, built from the
notebooks' outputs, with every figure, verdict and measured value in it."""

from __future__ import annotations

import csv
import html
import json
import re
import urllib.parse
from pathlib import Path

import pytest

from boatload.publish import blog
from boatload.workflow.cli import main as cli_main
from boatload.studies import registry

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def results(forest_fixture_run) -> Path:
    """The forest notebook run on the test fixture (shared by the session)."""
    return forest_fixture_run["results"]


@pytest.fixture(scope="module")
def pages(results, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pages")
    assert cli_main(["blog", "--results", str(results), "--out", str(out)]) == 0
    return {p.stem: p for p in out.glob("*.html")}


def studies(results: Path) -> list[str]:
    return blog.studies_with_summary(results)


def test_one_page_per_study(results, pages):
    assert studies(results)
    assert sorted(pages) == sorted(studies(results))
    for page in pages.values():
        text = page.read_text()
        assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")


def test_no_external_urls_or_scripts(pages):
    for page in pages.values():
        text = page.read_text()
        assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*https?://""", text, re.IGNORECASE), page
        assert "<script" not in text.lower()
        assert "<link" not in text.lower()  # the CSS is inline


def test_every_figure_embedded(results, pages):
    for study, page in pages.items():
        text = page.read_text()
        svgs = sorted((results / "figures").glob(f"{study}-*.svg"))
        assert svgs, study
        for svg in svgs:
            body = svg.read_text().strip()
            # The figure's own markup is in the page, not a link to it.
            assert body[body.index("<svg"):] in text, svg.name
            assert svg.name not in re.findall(r"""(?:src|href)=["']([^"']*)""", text)
        assert text.count("<svg") == len(svgs)


def test_verdicts_and_question(results, pages):
    for study, page in pages.items():
        text = html.unescape(page.read_text())
        summary = json.loads((results / "tables" / f"{study}-summary.json").read_text())
        assert registry()[study].question in text
        assert summary["verdicts"], study
        for v in summary["verdicts"]:
            assert v["claim"] in text
            assert v["verdict"] in text
            if v.get("size"):  # direction and size in their own columns
                assert f"<td>{v['direction']}</td><td>{v['size']}</td>" in text
            if v.get("runs_to_settle") is not None:
                assert f"{v['runs_to_settle']} runs per side to settle" in text
            assert blog.fmt_number(v["original_ratio"], digits=3) in text
            if v.get("ours") is not None:
                assert blog.fmt_number(v["ours"], digits=3) in text


def test_journal_claims_name_their_hardware(journal_fixture_run, tmp_path):
    """The journal page gives every claim twice, on this machine's disk and on
    the modelled array, each row naming the hardware it was measured on."""
    results = journal_fixture_run["results"]
    assert cli_main(["blog", "--results", str(results), "--out", str(tmp_path)]) == 0
    text = html.unescape((tmp_path / "journal.html").read_text())
    summary = json.loads((results / "tables" / "journal-summary.json").read_text())
    rows = re.findall(r"<tr><td>(.*?)</td>", text)
    for v in summary["verdicts"]:
        assert v["claim"] in rows
    assert sum(r.endswith("on this machine's disk (loop images)") for r in rows) == 12
    assert sum(r.endswith("XFS on modelled raid-hdd") for r in rows) == 6


def test_measured_table_values(results, pages):
    """The measured table as a reader reads it: readable headers with units,
    three significant figures, each interval in one column, what is the same
    in every row said once; the whole CSV, byte for byte, in a data: link."""
    for study, page in pages.items():
        text = page.read_text()
        raw = (results / "tables" / f"{study}.csv").read_text()
        rows = list(csv.reader(raw.splitlines()))
        header, body = rows[0], rows[1:]
        assert body
        summary = json.loads((results / "tables" / f"{study}-summary.json").read_text())
        shown = blog.readable_table(header, body, summary.get("level"))
        table = text[text.index('<table class="measured">'):]
        table = table[: table.index("</table>")]
        assert table.count("<tr>") == len(body) + 1
        heads = [html.unescape(re.sub(r"<[^>]+>", " ", h)).split() for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
        assert heads == [f"{label} {unit}".split() for label, unit, _ in shown["columns"]]
        assert not any("_" in h for h in heads)  # no raw column names
        lines = re.findall(r"<tr>(.*?)</tr>", table)[1:]
        for want, line in zip(shown["rows"], lines):
            assert [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", line)] == want
        # every float of the CSV appears with three significant figures, nowhere with more
        for row in body:
            for name, cell in zip(header, row):
                if re.fullmatch(r"-?\d+\.\d+", cell) and name in blog.COLUMNS and not name.endswith(("_low", "_high")):
                    assert blog.fmt_number(float(cell), digits=3) in "".join(sum(shown["rows"], [])) or any(
                        blog.fmt_number(float(cell), digits=3) == v for _, _, v in shown["constant"]), (name, cell)
        link = re.search(r'<a download="([^"]+)" href="data:text/csv;charset=utf-8,([^"]+)">', text)
        assert link and link.group(1) == f"{study}.csv"
        assert urllib.parse.unquote(link.group(2)) == raw


def test_readable_columns():
    header = ["target", "method", "method_label", "reps", "files_per_s", "ci_low", "ci_high", "space_kb"]
    body = [["ext4", "python", "python script", "3", "64912.3456", "60000.1", "70000.9", "21"],
            ["tmpfs", "tar", "shell: untar", "3", "158012.7", "150000", "160000", "0"]]
    shown = blog.readable_table(header, body, 0.95)
    assert [c[:2] for c in shown["columns"]] == [("target", ""), ("method", ""), ("rate", "files/s"),
                                                ("95% CI", ""), ("space used", "KB")]
    assert shown["constant"] == [("runs", "", "3")]
    assert shown["rows"][0] == ["ext4", "python script", "64,900", "60,000–70,000", "21"]
    assert shown["rows"][1][2] == "158,000"
    assert blog.column_label("widgets_per_s") == ("widgets", "/s")


def test_provenance_footer(results, pages):
    prov = json.loads((results / "provenance.json").read_text())
    for page in pages.values():
        footer = page.read_text().split("<footer>", 1)[1]
        assert prov["host"] in footer
        assert prov["kernel"] in footer
        assert prov["lock_sha256"] in footer
        if prov.get("worker", {}).get("version"):
            assert prov["worker"]["version"] in footer


def test_deterministic(results, pages, tmp_path):
    again = blog.build_blog(results, tmp_path)
    assert sorted(p.name for p in again) == sorted(p.name for p in pages.values())
    for page in again:
        assert page.read_bytes() == pages[page.stem].read_bytes()


def test_number_formatting():
    assert blog.fmt_number(1261.45675675) == "1,261"
    assert blog.fmt_number(287817.46, digits=3) == "288,000"
    assert blog.fmt_number(1.1287334252490617) == "1.129"
    assert blog.fmt_number(0.00361, digits=2) == "0.0036"
    assert blog.fmt_number(None) == "–"
    assert blog.fmt_value("") == ("–", False)
    assert blog.fmt_value("100000") == ("100,000", True)
    assert blog.fmt_value("ext4") == ("ext4", False)
