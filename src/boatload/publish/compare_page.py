"""The comparison as one self-contained HTML page in the blog pages' style
(boatload.publish.blog's CSS): what differs between A and B, the verdict table, a
figure of every point's ratio with its interval on a log axis coloured by
verdict (altair, inlined as SVG through vl-convert), the per-study means and
the method. No scripts, no external URLs."""

from __future__ import annotations

import html
import json
from pathlib import Path

import altair as alt
import vl_convert

from boatload.analysis import plotting  # noqa: F401  (registers the boatload theme)
from boatload.publish.blog import CSS, fmt_number
from boatload.analysis.compare import FASTER, INCONCLUSIVE, SAME, SLOWER, Settings
from boatload.analysis.compare_report import build
from boatload.analysis.compare_sets import open_set
from boatload.base.results import write_atomic

__all__ = ["COLOURS", "figure_svg", "page", "run"]

COLOURS = {SLOWER: "#b2182b", INCONCLUSIVE: "#b35806", SAME: "#555555", FASTER: "#1b7837"}

PAGE_CSS = """
.verdict-slower { color: #b2182b; font-weight: bold; }
.verdict-faster { color: #1b7837; font-weight: bold; }
.verdict-inconclusive { color: #b35806; }
.threat { color: #b2182b; font-weight: bold; }
td.fact { overflow-wrap: anywhere; word-break: break-word; }
table.facts { table-layout: fixed; width: 100%; }
table.facts th:first-child { width: 30%; }
""".strip()


def _esc(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _num(x) -> str:
    return fmt_number(x, digits=3) if x is not None else "–"


def _interval(lo, hi) -> str:
    return "no interval" if lo is None else f"{_num(lo)} – {_num(hi)}"


def figure_svg(doc: dict) -> str:
    """Every point's ratio (B over A) with its interval, a log axis, coloured by verdict."""
    rows = [{"point": f"{p['study']} {p['target']}: {p['point']}", "ratio": p["ratio"],
             "low": p["low"] if p["low"] is not None else p["ratio"],
             "high": p["high"] if p["high"] is not None else p["ratio"], "verdict": p["verdict"]}
            for p in doc["points"]]
    values = [v for r in rows for v in (r["low"], r["high"])] + [1 / doc["margin"] / 1.05, doc["margin"] * 1.05]
    domain = [min(values), max(values)]
    order = [r["point"] for r in rows]
    x = alt.X("ratio:Q", scale=alt.Scale(type="log", domain=domain, nice=False),
              title=f"B's rate over A's (log scale; {doc['level']:.0%} interval)")
    y = alt.Y("point:N", sort=order, title=None, axis=alt.Axis(labelLimit=260))
    colour = alt.Color("verdict:N", scale=alt.Scale(domain=list(COLOURS), range=list(COLOURS.values())),
                       legend=alt.Legend(orient="top", title=None))
    base = alt.Chart(alt.Data(values=rows))
    band = alt.Chart(alt.Data(values=[{"lo": 1 / doc["margin"], "hi": doc["margin"]}])).mark_rect(
        color="#eeeeee").encode(x=alt.X("lo:Q", scale=alt.Scale(type="log", domain=domain)), x2="hi:Q")
    one = alt.Chart(alt.Data(values=[{"x": 1.0}])).mark_rule(color="#888888").encode(x="x:Q")
    bars = base.mark_rule(strokeWidth=2).encode(x=alt.X("low:Q", scale=alt.Scale(type="log", domain=domain)),
                                                x2="high:Q", y=y, color=colour)
    dots = base.mark_point(filled=True, size=40).encode(x=x, y=y, color=colour)
    chart = alt.layer(band, one, bars, dots).properties(width=420, height=max(60, 18 * len(rows)))
    # vl-convert writes bare <svg> markup: no XML declaration, no script
    return vl_convert.vegalite_to_svg(chart.to_dict()).strip()


def _differs(doc: dict) -> str:
    prov = doc["provenance"]
    if not prov["differs"]:
        return "<p>Nothing in the runs' provenance differs between A and B.</p>"
    rows = "".join(
        f"<tr><th>{_esc(d['section'])}: {_esc(d['key'])}"
        + (' <span class="threat">(measuring method)</span>' if d["threat"] else "")
        + f"</th><td class=\"fact\">{_esc(d['a'])}</td><td class=\"fact\">{_esc(d['b'])}</td></tr>"
        for d in prov["differs"])
    threats = doc["threats"]
    warn = (f'<p class="threat">{len(threats)} of the differences are in the measuring method itself (the worker, a '
            f"tool, boatload, a study's settings): a change of rate may come from the method, not the system.</p>"
            if threats else "")
    same = ", ".join(sorted({d["section"] for d in prov["same"]}))
    return (f"{warn}<div class=\"scroll\"><table class=\"facts\"><thead><tr><th></th><th>A</th><th>B</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>\n"
            f"<p class=\"constant\">The same in both ({len(prov['same'])} facts): {_esc(same) or 'nothing'}.</p>")


def _points(doc: dict) -> str:
    rows = []
    for p in doc["points"]:
        settle = f"{p['runs_to_settle']} per side" if p["runs_to_settle"] else ""
        why = f" ({_esc(p['why'])})" if p.get("why") else ""
        rows.append(
            f"<tr><td class=\"verdict-{p['verdict']}\">{_esc(p['verdict'])}{why}</td>"
            f"<td class=\"num\">{_num(p['ratio'])}</td><td class=\"num\">{_interval(p['low'], p['high'])}</td>"
            f"<td class=\"num\">{p['runs']['a']} / {p['runs']['b']}</td><td>{_esc(settle)}</td>"
            f"<td>{_esc(p['study'])}</td><td>{_esc(p['target'])}</td><td>{_esc(p['point'])}</td></tr>")
    for side, key in (("A", "only_a"), ("B", "only_b")):
        for p in doc[key]:
            rows.append(f"<tr><td>only in {side}</td><td></td><td></td><td></td><td></td><td>{_esc(p['study'])}</td>"
                        f"<td>{_esc(p['target'])}</td><td>{_esc(p['point'])}</td></tr>")
    head = ("<tr><th>verdict</th><th class=\"num\">B / A</th><th class=\"num\">interval</th>"
            "<th class=\"num\">runs A / B</th><th>runs to settle</th><th>study</th><th>target</th><th>point</th></tr>")
    return f"<div class=\"scroll\"><table class=\"verdicts\"><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table></div>"


def _means(doc: dict) -> str:
    rows = []
    for name, st in doc["studies"].items():
        m = st.get("mean")
        if m is None:
            rows.append(f"<tr><td>{_esc(st['title'])}</td><td colspan=\"4\">only in {st.get('only_in', '–')}"
                        f"</td></tr>")
            continue
        rows.append(f"<tr><td>{_esc(st['title'])} ({_esc(st['rate'][1])})</td><td class=\"num\">{m['points']}</td>"
                    f"<td class=\"num\">{_num(m['ratio'])}</td><td class=\"num\">{_interval(m['low'], m['high'])}</td>"
                    f"<td class=\"verdict-{m['verdict']}\">{_esc(m['verdict'])}</td></tr>")
    return ("<div class=\"scroll\"><table><thead><tr><th>study</th><th class=\"num\">points</th>"
            "<th class=\"num\">geometric mean</th><th class=\"num\">interval</th><th>verdict</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def page(doc: dict) -> str:
    """The page's HTML (no I/O)."""
    c = doc["counts"]
    summary = (f"{c[SLOWER]} slower, {c[FASTER]} faster, {c[SAME]} the same, {c[INCONCLUSIVE]} inconclusive, of "
               f"{len(doc['points'])} points both sets measured; {len(doc['only_a'])} only in A, "
               f"{len(doc['only_b'])} only in B.")
    figure = (f"<figure>{figure_svg(doc)}<figcaption>B's rate over A's at every point, with its "
              f"{doc['level']:.0%} interval; the grey band is the margin ×/÷ {doc['margin']:g}.</figcaption></figure>"
              if doc["points"] else "<p>No point was measured in both sets.</p>")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>boatload: B against A</title>\n<style>\n{CSS}\n{PAGE_CSS}\n</style>\n</head>\n<body>\n"
        "<h1>What changed between two runs</h1>\n"
        f"<p class=\"question\">A: {_esc(doc['a']['name'])} ({doc['a']['runs']} runs); "
        f"B: {_esc(doc['b']['name'])} ({doc['b']['runs']} runs).</p>\n"
        f"<p><strong>{_esc(summary)}</strong> Margin ×/÷ {doc['margin']:g}, level {doc['level']:.0%}. "
        f"Among points that did not change, chance alone would call at most about "
        f"{doc['chance_slower_at_most']:.2g} of them slower (and as many faster).</p>\n"
        f"<h2>What differs between A and B</h2>\n{_differs(doc)}\n"
        f"<h2>Every point, worst first</h2>\n{_points(doc)}\n"
        f"<h2>Figure</h2>\n{figure}\n"
        f"<h2>Per study</h2>\n{_means(doc)}\n"
        f"<h2>How the verdicts are made</h2>\n<p>{_esc(doc['method'])}</p>\n"
        "</body>\n</html>\n"
    )


def run(a: str, b: str, out: Path, s: Settings, runs_root: Path = Path("data/runs")) -> dict:
    """Read both sets, compare, write `out`/compare.json and compare.html; the document."""
    doc = build(open_set(a, runs_root, "A"), open_set(b, runs_root, "B"), s)
    write_atomic(Path(out) / "compare.json", json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
    write_atomic(Path(out) / "compare.html", page(doc))
    return doc
