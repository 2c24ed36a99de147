"""One self-contained HTML page per study, for the blog.

Each page, ``<out>/<study>.html``, holds the study's question, its verdict
rows (claim, original, ours with interval, verdict), the figures (the SVGs
inline), the measured table (``results/tables/<study>.csv``: readable headers
with units, three significant figures, each interval in one column, the
columns that are the same in every row said once above it; the whole CSV as a
download in a ``data:`` link) and a provenance footer from
``results/provenance.json``. Inline CSS, no scripts, no external URLs; the
same inputs give the same bytes.

    boatload blog --results results --out results/blog [--study forest ...]
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
import urllib.parse
from pathlib import Path

from boatload.base.results import write_atomic
from boatload.studies import registry
from boatload.analysis.verdict import UNTESTABLE, bound_text

__all__ = ["build_blog", "build_page", "column_label", "fmt_number", "fmt_value", "readable_table",
           "studies_with_summary"]

VERDICT_COLOURS = {
    "reproduced": "#1b7837",
    "equivalent": "#1b7837",
    "same direction, smaller effect": "#5aae61",
    "same direction, larger effect": "#5aae61",
    "same direction, size open": "#b35806",
    "not reproduced": "#b2182b",
    "inconclusive": "#b35806",
    "contradicted": "#b2182b",
    "not equivalent": "#b2182b",
}

CSS = """
body { font: 15px/1.5 Georgia, 'Libertinus Serif', serif; color: #222; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.7rem; margin-bottom: .2rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ccc; }
.question { font-size: 1.1rem; font-style: italic; }
table { border-collapse: collapse; font: 13px/1.35 system-ui, 'DejaVu Sans', sans-serif; margin: .5rem 0; }
th, td { padding: 2px 6px; border-bottom: 1px solid #e4e4e4; vertical-align: top; }
th { text-align: left; border-bottom: 1px solid #888; font-weight: 600; }
th.num { text-align: right; }
th .unit { font-weight: normal; color: #555; white-space: nowrap; }
table.measured th { vertical-align: bottom; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.verdicts { font-family: inherit; font-size: 14px; }
.verdict { font-weight: bold; color: #555; }
.scroll { overflow-x: auto; max-width: 100%; }
.scroll.wide { max-width: none; width: min(calc(100vw - 2rem), 75rem); position: relative; left: 50%; transform: translateX(-50%); }
.constant { font-size: 13px; color: #444; }
.download { font-size: 14px; }
figure { margin: 1rem 0; }
figure svg { display: block; max-width: 100%; height: auto; }
figcaption { font-size: 13px; color: #555; }
footer { margin-top: 2.5rem; border-top: 1px solid #ccc; font-size: 12px; color: #555; }
footer table { table-layout: fixed; width: 100%; }
footer th { width: 11rem; }
footer code { font-size: 11px; overflow-wrap: anywhere; word-break: break-all; }
@media (max-width: 600px) {
  body { font-size: 14px; margin: 1rem auto; }
  table { font-size: 12px; }
  table.verdicts { font-size: 13px; }
  footer th { width: 6rem; }
}
""".strip()


def studies_with_summary(results: Path) -> list[str]:
    """Studies with a summary in ``results/tables``, in the paper's order."""
    return [s for s in registry() if (Path(results) / "tables" / f"{s}-summary.json").is_file()]


# --- numbers ----------------------------------------------------------------


def fmt_number(x: float | None, digits: int = 4) -> str:
    """A float for reading: ``digits`` significant figures, whole numbers from
    1,000 up with thousands grouped; ``None``/NaN as an en dash.
    1261.45675675 -> "1,261"; 287817.46 -> "287,800" (digits=4), "288,000"
    (digits=3); 1.1287334 -> "1.129"; 0.0036 -> "0.0036"."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    x = float(x)
    if x == 0:
        return "0"
    e = math.floor(math.log10(abs(x)))
    if abs(x) >= 1000:
        return f"{int(round(x, digits - 1 - e)) if e >= digits else round(x):,}"
    decimals = max(0, digits - 1 - e)
    s = f"{x:.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?$")


def fmt_value(cell: str, digits: int = 4) -> tuple[str, bool]:
    """A CSV cell as shown in a table: ``(text, is_number)``. Integers are
    shown as they are (grouped from 10,000), floats with :func:`fmt_number`
    to `digits` significant figures, anything else as written; an empty cell
    is an en dash."""
    if cell is None or cell == "":
        return "–", False
    if _INT.match(cell):
        n = int(cell)
        return (f"{n:,}" if abs(n) >= 10_000 else str(n)), True
    if _FLOAT.match(cell):
        return fmt_number(float(cell), digits=digits), True
    return cell, False


def _ratio(x) -> str:
    return fmt_number(x, digits=3) if x is not None else "–"


# --- pieces -----------------------------------------------------------------


def _esc(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _svg_inline(path: Path) -> str:
    """The SVG's markup for inlining in HTML: no XML declaration or doctype,
    and no script (a figure must not need one)."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"<\?xml[^>]*\?>", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>", "", text, flags=re.IGNORECASE)
    text = re.sub(r"<script\b.*?</script>", "", text, flags=re.IGNORECASE | re.DOTALL)
    return text.strip()


def figure_paths(results: Path, study: str) -> list[Path]:
    """The study's SVG figures (``results/figures/<study>-<name>.svg``), sorted by name."""
    return sorted((Path(results) / "figures").glob(f"{study}-*.svg"))


def _verdicts(summary: dict) -> str:
    rows = []
    for v in summary.get("verdicts") or []:
        ours = v.get("ours")
        if ours is None:
            ours_text = "–"
        else:
            ours_text = f"{_ratio(ours)} ({_ratio(v.get('ours_low'))}–{_ratio(v.get('ours_high'))})"
        verdict = v.get("verdict") or "–"
        if v.get("runs_to_settle") is not None:
            verdict += f" ({v['runs_to_settle']} runs per side to settle)"
        elif bound_text(v):
            verdict += f": {bound_text(v)}"
        elif v.get("reason") and v.get("verdict") in UNTESTABLE:
            verdict += f" ({v['reason']})"
        colour = VERDICT_COLOURS.get(v.get("verdict"))
        style = f' style="color: {colour}"' if colour else ""
        rows.append(
            "<tr>"
            f"<td>{_esc(v.get('claim'))}</td>"
            f'<td class="num">{_esc(_ratio(v.get("original_ratio")))}</td>'
            f'<td class="num">{_esc(ours_text)}</td>'
            f"<td>{_esc(v.get('direction') or '–')}</td><td>{_esc(v.get('size') or '–')}</td>"
            f'<td class="verdict"{style}>{_esc(verdict)}</td>'
            "</tr>"
        )
    if not rows:
        return "<p>This study states no claims with a verdict.</p>"
    level = summary.get("level")
    ci = f"{round(float(level) * 100)}% CI" if level is not None else "CI"
    head = (f"<tr><th>claim</th><th>original</th><th>ours ({_esc(ci)})</th><th>direction</th><th>size</th>"
            "<th>verdict</th></tr>")
    rule = summary.get("verdict_rule")
    note = f"<p>{_esc(rule)}</p>" if rule else ""
    return (f'<div class="scroll"><table class="verdicts"><thead>{head}</thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>{note}')


# The tidy tables' columns as a reader reads them: (header, unit). A column not
# named here gets its name with spaces and a unit guessed from its suffix.
COLUMNS: dict[str, tuple[str, str]] = {
    "target": ("target", ""), "filesystem": ("file system", ""), "method_label": ("method", ""),
    "reps": ("runs", ""), "runs": ("runs per stage", ""), "files_per_s": ("rate", "files/s"),
    "relative_to_fastest": ("÷ fastest", ""), "extrapolated": ("extrapolated", ""),
    "space_kb": ("space used", "KB"), "inodes_used": ("inodes used", ""),
    "op_label": ("operation", ""), "stage": ("stage", ""), "extra_files": ("extra files", ""),
    "files_on_disk": ("small files on disk", ""), "mb_per_s": ("throughput", "MB/s"),
    "ratio": ("÷ baseline", ""), "memory_limit_mb": ("memory limit", "MiB"),
    "file_bytes": ("big file", "bytes"), "block": ("block", "bytes"), "loop_direct_io": ("loop direct I/O", ""),
    "log": ("log", ""), "flushes": ("flushes", ""), "step": ("step", ""), "phase": ("phase", ""),
    "files": ("files", ""), "file_size": ("file size", "bytes"), "ops_per_s": ("rate", "operations/s"),
    "baseline_target": ("baseline", ""), "vs_baseline": ("÷ baseline", ""),
    "p50_us": ("median latency", "µs"), "p99_us": ("p99 latency", "µs"),
    "mode": ("mode", ""), "tool_label": ("tool", ""), "sample_kind": ("samples from", ""),
    "n_samples": ("samples", ""), "iops": ("IOPS", "I/O per s"), "read_pct_measured": ("reads, measured", "%"),
    "lat_mean_us": ("mean latency", "µs"), "lat_p99_us": ("p99 latency", "µs"), "seconds": ("duration", "s"),
    "threads": ("threads", ""), "xfer": ("transfer size", "bytes"), "read_pct": ("reads", "%"),
    "file_size_mb": ("file size", "MB"), "working_set": ("working set", "× memory limit"),
    "working_set_label": ("working set", ""), "test": ("test", ""), "tool": ("tool", ""),
    "tmpfs_vs_ext3": ("tmpfs ÷ ext3", ""), "cpu_pct": ("CPU", "%"), "swap_used_mb": ("swap used", "MiB"),
    "peak_mb": ("peak memory", "MiB"),
    "ci_coverage": ("the interval's coverage", ""),
}
# A code whose readable twin is in the same table is left out (the CSV keeps both).
TWINS = {"method": "method_label", "op": "op_label", "tool": "tool_label", "working_set": "working_set_label"}
# Columns that only order the rows (the CSV keeps them).
ORDER_ONLY = {"step"}
_SUFFIX_UNITS = (("_per_s", "/s"), ("_mb", "MB"), ("_kb", "KB"), ("_us", "µs"), ("_ms", "ms"), ("_pct", "%"),
                 ("_bytes", "bytes"), ("_s", "s"))
# An interval's two columns, and the column whose point estimate they bound.
_INTERVALS = {("ci_low", "ci_high"), ("rel_low", "rel_high"), ("ratio_low", "ratio_high"), ("vs_low", "vs_high")}


def column_label(name: str) -> tuple[str, str]:
    """A tidy column's header and unit: ``files_per_s`` -> ``("rate", "files/s")``."""
    if name in COLUMNS:
        return COLUMNS[name]
    for suffix, unit in _SUFFIX_UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)].replace("_", " "), unit
    return name.replace("_", " "), ""


def _cell(cell: str) -> tuple[str, bool]:
    """A CSV cell as the readable table shows it: three significant figures."""
    if cell in ("true", "True"):
        return "yes", False
    if cell in ("false", "False"):
        return "no", False
    text, numeric = fmt_value(cell, digits=3)
    return (text, True) if numeric else (text.replace("_", " "), False)


def readable_table(header: list[str], body: list[list[str]], level: float | None = None) -> dict:
    """The measured table as a reader reads it: ``{"columns": [(label, unit, numeric)], "rows": [[text]],
    "constant": [(label, unit, text)]}``. A code with a readable twin is left out; an interval's low and
    high become one column; a column with one value in every row (of two or more rows) moves to
    ``constant``; numbers get three significant figures."""
    ci = f"{round(level * 100)}% CI" if level is not None else "CI"
    index = {h: i for i, h in enumerate(header)}
    plan = []  # (label, unit, [column indexes])
    skip = set()
    for i, h in enumerate(header):
        if i in skip or h in ORDER_ONLY or (h in TWINS and TWINS[h] in index):
            continue
        nxt = header[i + 1] if i + 1 < len(header) else None
        if (h, nxt) in _INTERVALS:
            # a point's band whose coverage the table states is not called a CI at the level
            label = "interval" if h == "ci_low" and "ci_coverage" in index else ci
            plan.append((label, "", [i, i + 1]))
            skip.add(i + 1)
            continue
        label, unit = column_label(h)
        plan.append((label, unit, [i]))

    def text(row, cols):
        cells = [_cell(row[c] if c < len(row) else "") for c in cols]
        if len(cols) == 2:
            if cells[0][0] == "–" and cells[1][0] == "–":
                return "–", False
            return f"{cells[0][0]}–{cells[1][0]}", True
        return cells[0]

    columns, constant, keep = [], [], []
    for label, unit, cols in plan:
        values = [text(row, cols) for row in body]
        if len(body) >= 2 and len({v for v, _ in values}) == 1 and len(cols) == 1:
            constant.append((label, unit, values[0][0]))
            continue
        numeric = any(n for _, n in values)
        columns.append((label, unit, numeric))
        keep.append(values)
    rows = [[keep[c][r][0] for c in range(len(keep))] for r in range(len(body))]
    return {"columns": columns, "rows": rows, "constant": constant}


def _csv_link(table: Path, text: str, rows: int, columns: int) -> str:
    uri = "data:text/csv;charset=utf-8," + urllib.parse.quote(text, safe="")
    return (f'<p class="download"><a download="{_esc(table.name)}" href="{uri}">Download the whole table '
            f"({_esc(table.name)}: {rows} rows, {columns} columns, every digit)</a></p>")


def _measured(table: Path, level: float | None = None) -> str:
    if not table.is_file():
        return f"<p>No measured table ({_esc(table.name)} is missing).</p>"
    raw = table.read_text(encoding="utf-8")
    rows = list(csv.reader(raw.splitlines()))
    if not rows:
        return "<p>The measured table is empty.</p>"
    header, body = rows[0], rows[1:]
    shown = readable_table(header, body, level)
    head = "".join(
        ('<th class="num">' if numeric else "<th>") + _esc(label)
        + (f'<br><span class="unit">{_esc(unit)}</span>' if unit else "") + "</th>"
        for label, unit, numeric in shown["columns"]
    )
    lines = []
    for row in shown["rows"]:
        cells = []
        for (_, _, numeric), value in zip(shown["columns"], row):
            cls = ' class="num"' if numeric else ""
            cells.append(f"<td{cls}>{_esc(value)}</td>")
        lines.append(f"<tr>{''.join(cells)}</tr>")
    constant = ""
    if shown["constant"]:
        items = "; ".join(f"{_esc(label)} {_esc(value)}{' ' + _esc(unit) if unit else ''}"
                          for label, unit, value in shown["constant"])
        constant = f'<p class="constant">The same in every row: {items}.</p>'
    return (
        f"{constant}"
        f'<div class="scroll wide"><table class="measured"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(lines)}</tbody></table></div>"
        f"<p>{len(body)} rows; medians over repetitions with bootstrap intervals, three significant figures.</p>"
        f"{_csv_link(table, raw, len(body), len(header))}"
    )


def _figures(results: Path, study: str) -> str:
    parts = []
    for path in figure_paths(results, study):
        name = path.name[: -len(".svg")]
        parts.append(f'<figure id="{_esc(name)}">{_svg_inline(path)}<figcaption>{_esc(name)}</figcaption></figure>')
    return "".join(parts) or "<p>No figures.</p>"


def _footer(provenance: dict | None, summary: dict) -> str:
    if provenance is None:
        return "<footer><p>No provenance.json next to these results.</p></footer>"
    worker = provenance.get("worker") or {}
    items = [
        ("host", provenance.get("host")),
        ("kernel", f"Linux {provenance['kernel']}" if provenance.get("kernel") else None),
        ("OS", provenance.get("os")),
        ("worker", f"boatload-worker {worker.get('version') or summary.get('worker_version') or '–'}"),
        ("worker binary (SHA-256)", worker.get("sha256")),
        ("lock file (SHA-256)", provenance.get("lock_sha256")),
        ("configuration", f"{provenance.get('config', '–')}, scale {provenance.get('scale', '–')}"),
        ("runs", f"{summary.get('first_run_at', '–')} to {summary.get('last_run_at', '–')}"),
    ]
    cells = "".join(
        f"<tr><th>{_esc(k)}</th><td><code>{_esc(v)}</code></td></tr>" for k, v in items if v not in (None, "")
    )
    return f"<footer><p>Measured on:</p><table>{cells}</table></footer>"


def _fleet(fleet: dict | None, study: str) -> str:
    """The study's claims on every host of the fleet, their spread, and the hosts side by side."""
    if not fleet:
        return ""
    hosts = fleet["hosts"]
    claims = [c for c in fleet["claims"] if c["study"] == study]
    head = "".join(f"<th>{_esc(h)}</th>" for h in hosts)
    rows = []
    for c in claims:
        cells = []
        for h in hosts:
            x = c["hosts"].get(h)
            if not x:
                cells.append("<td>–</td>")
                continue
            colour = VERDICT_COLOURS.get(x.get("verdict"))
            style = f' style="color: {colour}"' if colour else ""
            cells.append(f'<td class="num">{_esc(_ratio(x.get("ours")))} <span class="verdict"{style}>'
                         f'{_esc(x.get("verdict"))}</span></td>')
        sp = c["spread"]
        rows.append(f"<tr><td>{_esc(c['claim'])}</td><td class=\"num\">{_esc(_ratio(c.get('original_ratio')))}</td>"
                    f"{''.join(cells)}<td class=\"num\">{_esc(_ratio(sp.get('min')))}–{_esc(_ratio(sp.get('max')))}"
                    f" (÷ {_esc(_ratio(sp.get('max_over_min')))})</td></tr>")
    table = (f'<table class="verdicts"><thead><tr><th>claim</th><th>original</th>{head}<th>spread</th></tr></thead>'
             f"<tbody>{''.join(rows)}</tbody></table>") if rows else "<p>This study states no claims with a verdict.</p>"
    prov = fleet.get("provenance") or {}
    failed = fleet.get("failed") or {}
    facts = [("hostname", "host"), ("CPU", "cpu_model"), ("CPUs", "cpus"), ("kernel", "kernel"), ("OS", "os"),
             ("runs measured", "runs")]
    side = "".join(
        f"<tr><th>{_esc(label)}</th>" + "".join(f"<td>{_esc((prov.get(h) or {}).get(key))}</td>" for h in hosts) + "</tr>"
        for label, key in facts
    ) + "<tr><th>runs failed</th>" + "".join(f"<td>{_esc(failed.get(h, 0))}</td>" for h in hosts) + "</tr>"
    return (f"<h2>Across the fleet</h2>\n<p>The same runs on {len(hosts)} hosts of a SLURM cluster, "
            f"each in its own node-local scratch; the figures and the table above are {_esc(fleet['first_host'])}'s.</p>\n"
            f"{table}\n<div class=\"scroll\"><table><thead><tr><th></th>{head}</tr></thead><tbody>{side}</tbody></table></div>\n")


def build_page(results: Path, study: str, fleet: dict | None = None) -> str:
    """The HTML page of one study, from ``results`` (a str; no I/O besides reading)."""
    results = Path(results)
    summary = json.loads((results / "tables" / f"{study}-summary.json").read_text(encoding="utf-8"))
    prov_path = results / "provenance.json"
    provenance = json.loads(prov_path.read_text(encoding="utf-8")) if prov_path.is_file() else None
    record = registry().get(study)
    title = record.title if record else study
    question = record.question if record else ""
    overall = summary.get("verdict")
    overall_html = f"<p>Overall: <strong>{_esc(overall)}</strong></p>" if isinstance(overall, str) and overall else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>boatload: {_esc(title)}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n"
        f"<h1>{_esc(title)}</h1>\n"
        f'<p class="question">{_esc(question)}</p>\n'
        f"{overall_html}\n"
        f"<h2>Verdicts</h2>\n{_verdicts(summary)}\n"
        f"<h2>Figures</h2>\n{_figures(results, study)}\n"
        f"<h2>Measured values</h2>\n{_measured(results / 'tables' / f'{study}.csv', summary.get('level'))}\n"
        f"{_fleet(fleet, study)}"
        f"{_footer(provenance, summary)}\n"
        "</body>\n</html>\n"
    )


def build_blog(results: Path, out: Path, studies: list[str] | None = None, fleet: bool = False) -> list[Path]:
    """Write ``out/<study>.html`` for each of ``studies`` (default: every study
    with a summary). Returns the pages written."""
    results, out = Path(results), Path(out)
    chosen = studies_with_summary(results) if studies is None else list(studies)
    if fleet:
        from boatload.publish.fleet import fleet_summary

        fleet_doc = fleet_summary(results)
    else:
        fleet_doc = None
    written = []
    for study in chosen:
        summary = results / "tables" / f"{study}-summary.json"
        if not summary.is_file():
            raise FileNotFoundError(f"{summary} is missing; run the {study} notebook first")
        page = out / f"{study}.html"
        write_atomic(page, build_page(results, study, fleet_doc))
        written.append(page)
    return written
