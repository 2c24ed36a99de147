"""The comparison page as a reader sees it: rendered by headless Chromium at
1280 and 420 px with the blog pages' probe (tests/test_blog_chromium.py):
nothing past the right edge, the figure shown at a visible size, a
screenshot kept under results/screenshots/."""

from __future__ import annotations

import pytest
from test_blog_chromium import HEIGHT, MIN_WINDOW, SCREENSHOTS, WIDTHS, headless, host_page, measure, png_size, window
from test_compare import compare

from boatload.publish.compare_page import COLOURS, page


@pytest.fixture(scope="module")
def compare_page(tmp_path_factory):
    import make_filecount
    import make_journal

    docs = make_filecount.documents() + make_journal.docs()
    b = [dict(d, machine={**d["machine"], "kernel": "6.99.0-a-long-kernel-release-string-for-the-page"}) for d in docs]
    tmp = tmp_path_factory.mktemp("compare")
    doc = compare(tmp, docs, b, scale={"xfs": 0.5, "tmpfs": 1.8})
    out = tmp / "compare.html"
    out.write_text(page(doc))
    return out, doc


@pytest.mark.parametrize("width", WIDTHS)
def test_the_page_fits_the_window_and_shows_its_figure(compare_page, width, tmp_path):
    path, doc = compare_page
    # the page carries every verdict's colour, and its figure every point
    html = path.read_text()
    assert html.count("<svg") == 1 and all(colour in html for colour in COLOURS.values())
    m = measure(path, width, tmp_path)
    assert m["innerWidth"] == width, m
    assert m["scrollWidth"] <= m["clientWidth"], (width, m["wide"])
    assert m["wide"] == [], width
    assert len(m["figures"]) == 1
    w, h = m["figures"][0]
    assert 100 <= w <= m["clientWidth"] and h >= 50, m["figures"]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"compare-{width}.png"
    shot.unlink(missing_ok=True)
    done = headless(window(width), "--allow-file-access-from-files", f"--screenshot={shot}",
                    host_page(path, width, tmp_path, "compare-shot").as_uri())
    assert shot.is_file(), done.stderr[-2000:]
    assert png_size(shot) == (max(width, MIN_WINDOW), HEIGHT)
