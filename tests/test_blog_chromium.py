"""The blog pages as a reader sees them: each page rendered by headless
Chromium (Debian's `chromium`) at 1280 and at 420 px width. Nothing may run
off the right edge (the document is no wider than the window; at 1280 px no
table needs its own scroll bar either), every figure has a visible size, and
a screenshot of each page at each width is kept under results/screenshots/.

Headless Chromium opens no window narrower than 500 px, so each page is
shown in an iframe exactly `width` px wide on a host page (in a window at
least 500 px wide). The pages carry no script, so the measuring runs in a
copy of each page with one probe script added at its end; it posts what it
measured to the host page, which writes it into its DOM for `chromium
--dump-dom` to print (one Chromium measures every page at every width, each
in its own iframe, one under the other, all in the window). A screenshot
shows the host page: the page in its iframe, `width` px wide, at its left
edge."""

from __future__ import annotations

import html
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from boatload.publish import blog

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "results" / "screenshots"
WIDTHS = (1280, 420)
HEIGHT = 900
MIN_WINDOW = 500  # headless Chromium's narrowest window

PROBE = """
<script>
(function () {
  const box = e => { const b = e.getBoundingClientRect(); return [b.width, b.height]; };
  const doc = document.documentElement;
  const out = {
    scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, innerWidth: window.innerWidth,
    figures: Array.from(document.querySelectorAll('figure svg')).map(box),
    tables: Array.from(document.querySelectorAll('table')).map(t => ({
      cls: t.className, width: t.getBoundingClientRect().width,
      box: t.parentElement.getBoundingClientRect().width,
      scroller: t.parentElement.classList.contains('scroll') })),
    wide: Array.from(document.body.querySelectorAll('*'))
      .filter(e => !e.closest('.scroll') && e.getBoundingClientRect().right > doc.clientWidth + 1)
      .map(e => e.tagName + '.' + e.className).slice(0, 10),
  };
  parent.postMessage(JSON.stringify(out), '*');
})();
</script>
"""

# One page in its iframe, as wide as the width asked for (a window cannot be narrower than MIN_WINDOW): what the
# screenshots show.
HOST = """<!DOCTYPE html>
<html><head><meta charset="utf-8"></head><body style="margin: 0; background: #ddd">
<iframe src="{src}" style="border: 0; display: block; background: white; width: {width}px; height: {height}px"></iframe>
</body></html>
"""


# Several pages at once, each in its iframe: a frame's probe posts what it measured, which the host page keeps in
# a <pre> of the frame's number (the listener is there before the first frame: a small page may post before
# the host page has parsed the frames after it).
FRAMES = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><script>window.addEventListener('message', e => {{
  for (const f of document.querySelectorAll('iframe')) {{
    if (f.contentWindow !== e.source) continue;
    const pre = document.createElement('pre');
    pre.id = 'probe-' + f.dataset.n;
    pre.style.display = 'none';
    pre.textContent = e.data;
    document.documentElement.appendChild(pre);
  }}
}});</script></head><body style="margin: 0; background: #ddd">
{frames}
</body></html>
"""
FRAME = ('<iframe data-n="{n}" src="{src}" style="border: 0; display: block; background: white; width: {width}px; '
         'height: {height}px"></iframe>')


def host_page(page: Path, width: int, tmp: Path, name: str) -> Path:
    host = tmp / f"{name}-{width}.host.html"
    host.write_text(HOST.format(src=page.as_uri(), width=width, height=HEIGHT))
    return host


def window(width: int) -> str:
    return f"--window-size={max(width, MIN_WINDOW)},{HEIGHT}"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("chromium not installed (Debian: chromium; make test's bootstrap installs it)")


def headless(*args: str, timeout: int = 60) -> subprocess.CompletedProcess:
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--hide-scrollbars", "--no-first-run", "--disable-extensions", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def pages(forest_fixture_run, tmp_path_factory) -> dict[str, Path]:
    results = forest_fixture_run["results"]
    out = tmp_path_factory.mktemp("pages")
    return {p.stem: p for p in blog.build_blog(results, out)}


def measure_all(pages: list[Path], widths, tmp: Path) -> dict[tuple[Path, int], dict]:
    """What PROBE measured in each page at each width, in one Chromium (each start costs most of a second):
    the window as wide as the widest frame and tall enough to show every frame, none off screen."""
    cases = [(page, width) for page in pages for width in widths]
    frames = []
    for n, (page, width) in enumerate(cases):
        probe = tmp / f"{page.stem}-{width}.probe.html"
        probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
        frames.append(FRAME.format(n=n, src=probe.as_uri(), width=width, height=HEIGHT))
    host = tmp / "probes.host.html"
    host.write_text(FRAMES.format(frames="\n".join(frames)))
    done = headless(f"--window-size={max(*widths, MIN_WINDOW)},{HEIGHT * len(cases)}",
                    "--allow-file-access-from-files", "--virtual-time-budget=5000", "--dump-dom", host.as_uri())
    found = dict(re.findall(r'<pre id="probe-(\d+)"[^>]*>(.+?)</pre>', done.stdout, re.DOTALL))
    missing = [(page.name, width) for n, (page, width) in enumerate(cases) if str(n) not in found]
    assert not missing, f"no probe in chromium's DOM for {missing} (exit {done.returncode}): {done.stderr[-2000:]}"
    return {case: json.loads(html.unescape(found[str(n)])) for n, case in enumerate(cases)}


def measure(page: Path, width: int, tmp: Path) -> dict:
    return measure_all([page], [width], tmp)[(page, width)]


@pytest.mark.parametrize("width", WIDTHS)
def test_pages_fit_the_window_and_show_every_figure(pages, width, tmp_path):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    measured = measure_all(list(pages.values()), [width], tmp_path)
    for study, page in pages.items():
        m = measured[(page, width)]
        # the window really was this wide (a browser with a minimum window width would make this test moot)
        assert m["innerWidth"] == width, m
        assert m["scrollWidth"] <= m["clientWidth"], (study, width, m["wide"])
        assert m["wide"] == [], (study, width)
        svgs = page.read_text().count("<svg")
        assert len(m["figures"]) == svgs > 0, study
        for w, h in m["figures"]:
            assert w >= 100 and h >= 50, (study, width, m["figures"])
            assert w <= m["clientWidth"], (study, width, w)
        if width >= 1280:
            for t in m["tables"]:
                assert t["width"] <= t["box"] + 1, (study, t)  # no table needs to scroll
        shot = SCREENSHOTS / f"{study}-{width}.png"
        shot.unlink(missing_ok=True)
        done = headless(window(width), "--allow-file-access-from-files", f"--screenshot={shot}",
                        host_page(page, width, tmp_path, f"{study}-shot").as_uri())
        assert shot.is_file(), done.stderr[-2000:]
        assert png_size(shot) == (max(width, MIN_WINDOW), HEIGHT)
