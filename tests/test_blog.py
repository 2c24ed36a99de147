"""The blog pages: one self-contained HTML file per study, built from the
notebooks' outputs, with every figure, verdict and measured value in it."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pytest

from boatload import blog
from boatload.cli import main as cli_main
from boatload.studies import registry
from notebook_checks import load_fixtures

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """The forest notebook run on the test fixture."""
    return load_fixtures("fixtures").run_forest_notebook(tmp_path_factory.mktemp("blog"), REPO)["results"]


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
            assert blog.fmt_number(v["original_ratio"], digits=3) in text
            if v.get("ours") is not None:
                assert blog.fmt_number(v["ours"], digits=3) in text


def test_measured_table_values(results, pages):
    for study, page in pages.items():
        text = page.read_text()
        with (results / "tables" / f"{study}.csv").open(newline="") as fh:
            rows = list(csv.reader(fh))
        header, body = rows[0], rows[1:]
        assert body
        table = text[text.index('<table class="measured">'):]
        table = table[: table.index("</table>")]
        assert table.count("<tr>") == len(body) + 1
        for name in header:
            assert f"<th>{html.escape(name)}</th>" in table
        # Row by row, every cell as shown.
        shown = re.findall(r"<tr>(.*?)</tr>", table)[1:]
        for row, line in zip(body, shown):
            cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", line)]
            assert cells == [blog.fmt_value(c)[0] for c in row]


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
    assert blog.fmt_number(1.1287334252490617) == "1.129"
    assert blog.fmt_number(0.00361, digits=2) == "0.0036"
    assert blog.fmt_number(None) == "–"
    assert blog.fmt_value("") == ("–", False)
    assert blog.fmt_value("100000") == ("100,000", True)
    assert blog.fmt_value("ext4") == ("ext4", False)
