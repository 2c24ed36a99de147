"""Where the words of a PDF lie: `pdftotext -bbox` gives every word's box;
a word is out of place when it reaches past the page's text area (the page
minus the margins paper/paper.typ sets), beyond a small tolerance. The page
number in the bottom margin is the one word allowed outside.

Across the page, a word's box must lie within the text area, give or take
TOLERANCE_PT (pdftotext's box of a justified line's last word reaches up to
about 2 pt past the edge Typst set it to; the provenance options that ran off
the page reached 27 to 33 pt past it). Down the page, a box includes the
font's ascent and descent, which reach past the top and bottom lines' edges,
so there a word's middle must lie within the text area."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CM = 72 / 2.54  # points per centimetre
TOLERANCE_PT = 2.5


@dataclass(frozen=True)
class Word:
    page: int
    text: str
    x0: float
    y0: float
    x1: float
    y1: float


def margins(source: Path = REPO / "paper" / "paper.typ") -> tuple[float, float]:
    """The page margins (x, y) in points, as paper.typ sets them (`margin: (x: 2.2cm, y: 2.4cm)`)."""
    found = re.search(r"margin:\s*\(x:\s*([\d.]+)cm,\s*y:\s*([\d.]+)cm\)", source.read_text())
    assert found, "paper.typ sets no margin: (x: ..cm, y: ..cm)"
    return float(found.group(1)) * CM, float(found.group(2)) * CM


def words(pdf: Path) -> tuple[list[Word], dict[int, tuple[float, float]]]:
    """Every word of the PDF with its box (points, from the top left), and each page's size."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) not installed")
    out = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    found, sizes = [], {}
    for n, (attrs, body) in enumerate(re.findall(r"<page ([^>]*)>(.*?)</page>", out, re.DOTALL), start=1):
        w = float(re.search(r'width="([\d.]+)"', attrs).group(1))
        h = float(re.search(r'height="([\d.]+)"', attrs).group(1))
        sizes[n] = (w, h)
        for x0, y0, x1, y1, text in re.findall(
                r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>', body):
            found.append(Word(n, html.unescape(text), float(x0), float(y0), float(x1), float(y1)))
    return found, sizes


def outside(pdf: Path, tolerance: float = TOLERANCE_PT) -> list[Word]:
    """The words that reach past the text area of their page (the page number excepted)."""
    mx, my = margins()
    ws, sizes = words(pdf)
    bad = []
    for word in ws:
        w, h = sizes[word.page]
        if word.text == str(word.page) and word.y0 >= h - my - tolerance:
            continue  # the page number, in the footer
        middle = (word.y0 + word.y1) / 2
        if word.x0 < mx - tolerance or word.x1 > w - mx + tolerance or not my <= middle <= h - my:
            bad.append(word)
    return bad
