"""The one look of every boatload figure, and how figures are written.

Importing this module registers and enables the ``boatload`` altair theme
(fonts, sizes, colours). Encodings that must mean the same thing in every
study live here too:

* colour = file system (:data:`FS_COLORS`, :func:`fs_color`), the same hue for
  ext4 in the forest study as in the journal study, and a shade of it for a
  second target of the same family in one figure (btrfs-single-64k beside btrfs);
* shape = where a number comes from, ``measured`` here (circle) or
  ``published`` by the original author (diamond) (:func:`source_shape`);
* open symbols = a rate that was extrapolated from a time-capped run (ours)
  or estimated by the original author (:func:`open_if`).

:func:`save_chart` writes ``results/figures/<study>-<name>.<ext>`` for each
requested format plus ``<study>-<name>.vl.json``, the Vega-Lite spec with its
data inlined, so tests and readers can check the plotted points.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import altair as alt

from boatload.base.results import write_atomic, write_atomic_with

__all__ = [
    "FONT",
    "FS_COLORS",
    "SOURCE_SHAPES",
    "THEME",
    "fs_color",
    "fs_colors",
    "fs_family",
    "open_if",
    "save_chart",
    "source_key",
    "source_shape",
]

THEME = "boatload"

#: font stack; DejaVu Sans ships with Debian and Nix fontconfig, so the SVG,
#: PNG and PDF (vl-convert) and the paper (typst renders the SVG) agree
FONT = "DejaVu Sans"

#: one colour per file-system family (Okabe-Ito, colour-blind safe)
FS_COLORS: dict[str, str] = {
    "tmpfs": "#E69F00",  # orange
    "ext4": "#0072B2",  # blue
    "ext3": "#56B4E9",  # sky blue
    "ext2": "#009E73",  # bluish green
    "xfs": "#000000",  # black
    "btrfs": "#CC79A7",  # reddish purple
    "dir": "#999999",  # plain directory on whatever the host has
}
_FALLBACK = ["#D55E00", "#8C564B", "#7F7F7F", "#F0E442"]

#: where a number comes from
SOURCE_SHAPES: dict[str, str] = {"measured": "circle", "published": "diamond"}

SIZES = {"label": 12, "title": 12, "header": 12, "chart_title": 15, "subtitle": 12}


@alt.theme.register(THEME, enable=True)
def boatload_theme() -> alt.theme.ThemeConfig:
    """Plain, print-first: white background, light grid, no chart border."""
    return {
        "background": "white",
        "padding": 8,
        "config": {
            "font": FONT,
            "view": {"stroke": None, "continuousWidth": 320, "continuousHeight": 240},
            "axis": {
                "labelFontSize": SIZES["label"],
                "titleFontSize": SIZES["title"],
                "titleFontWeight": "normal",
                "gridColor": "#E6E6E6",
                "domainColor": "#888888",
                "tickColor": "#888888",
                "labelColor": "#222222",
                "titleColor": "#222222",
                "labelLimit": 260,
            },
            "legend": {
                "labelFontSize": SIZES["label"],
                "titleFontSize": SIZES["title"],
                "titleFontWeight": "normal",
                "symbolSize": 80,
                "orient": "bottom",
                "direction": "horizontal",
                "columns": 8,
                "labelLimit": 300,
            },
            "header": {
                "labelFontSize": SIZES["header"],
                "titleFontSize": SIZES["header"],
            },
            "title": {
                "fontSize": SIZES["chart_title"],
                "fontWeight": "bold",
                "subtitleFontSize": SIZES["subtitle"],
                "subtitleColor": "#444444",
                "anchor": "start",
                "offset": 8,
            },
            "point": {"size": 55, "strokeWidth": 1.6},
            "rule": {"strokeWidth": 1.4},
            "range": {"category": list(FS_COLORS.values()) + _FALLBACK},
            "concat": {"spacing": 28},
        },
    }


def fs_family(name: str) -> str:
    """The file-system family of a target or a published label:
    ``"btrfs (--metadata single ...)"`` -> ``"btrfs"``."""
    head = name.strip().split()[0].lower() if name.strip() else name
    for fam in FS_COLORS:
        if head.startswith(fam):
            return fam
    return head


def _mix(colour: str, other: str, share: float) -> str:
    """``colour`` with ``share`` of ``other`` mixed in (both ``#RRGGBB``)."""
    a = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    b = [int(other[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * share):02X}" for x, y in zip(a, b))


#: the shades that tell apart the second, third... member of one family in a
#: figure (btrfs beside btrfs-single-64k): darker, then lighter, then more so;
#: a dark hue (xfs's black) only gets lighter
_SHADES = (("#000000", 0.45), ("#FFFFFF", 0.5), ("#000000", 0.7), ("#FFFFFF", 0.75))
_DARK_SHADES = (("#FFFFFF", 0.4), ("#FFFFFF", 0.65), ("#FFFFFF", 0.25), ("#FFFFFF", 0.8))


def fs_colors(names: Iterable[str]) -> list[str]:
    """One colour per name, every one different: the first name of a file-system
    family gets the family's hue (:data:`FS_COLORS`), the next names of the same
    family shades of it, a name of no known family a spare colour."""
    spare = iter(_FALLBACK)
    seen: dict[str, int] = {}
    out = []
    for name in names:
        fam = fs_family(name)
        base = FS_COLORS.get(fam)
        if base is None:
            out.append(next(spare, "#000000"))
            continue
        k = seen.get(fam, 0)
        seen[fam] = k + 1
        if k == 0:
            out.append(base)
        else:
            dark = sum(int(base[i:i + 2], 16) for i in (1, 3, 5)) < 120
            other, share = (_DARK_SHADES if dark else _SHADES)[(k - 1) % len(_SHADES)]
            out.append(_mix(base, other, share))
    return out


def fs_color(
    field: str = "filesystem",
    domain: Iterable[str] | None = None,
    title: str = "file system",
    legend: bool = True,
    channel: type = alt.Color,
):
    """Colour (or ``channel=alt.Fill``/``alt.Stroke``) encoding for a file-system
    field with the project's fixed hue per file system; two names of one family
    in the domain (two btrfs targets) get two shades of its hue (:func:`fs_colors`)."""
    names = list(dict.fromkeys(domain)) if domain is not None else list(FS_COLORS)
    colours = fs_colors(names)
    return channel(
        f"{field}:N",
        scale=alt.Scale(domain=names, range=colours),
        title=title,
        legend=alt.Legend() if legend else None,
    )


def source_shape(field: str = "source", title: str = "source", legend: bool = False):
    """Shape encoding: circle = measured here, diamond = published.

    The legend is off by default: points drawn with a file-system colour give
    the legend transparent symbols. Add :func:`source_key` as a layer for a
    grey key instead."""
    return alt.Shape(
        f"{field}:N",
        scale=alt.Scale(domain=list(SOURCE_SHAPES), range=list(SOURCE_SHAPES.values())),
        title=title,
        legend=alt.Legend(symbolOpacity=1) if legend else None,
    )


def source_key(chart: alt.Chart, field: str = "source", title: str = "source") -> alt.Chart:
    """An invisible layer over ``chart``'s data that only draws the shape legend
    (measured / published) in neutral grey. Put it *first* in the layer (the
    first layer's symbols win when legends merge) and give it the same x and y
    as the visible points so it adds nothing to the scales."""
    return chart.mark_point(filled=True, color="#555555", opacity=0).encode(
        shape=source_shape(field, title, legend=True)
    )


def open_if(test: str, filled):
    """Fill encoding: white (an open symbol) where the Vega expression ``test``
    holds, else ``filled`` (usually :func:`fs_color` with ``channel=alt.Fill``)."""
    return alt.condition(test, alt.value("white"), filled)


def save_chart(
    chart: alt.TopLevelMixin,
    out_dir: str | Path,
    study: str,
    name: str,
    formats: Sequence[str] = ("svg", "png", "pdf"),
    scale_factor: float = 2.0,
) -> dict[str, Path]:
    """Write ``<out_dir>/figures/<study>-<name>.<ext>`` for each of ``formats``
    (svg, png, pdf through vl-convert) and always the Vega-Lite spec with
    inlined data as ``<study>-<name>.vl.json``. ``out_dir`` is the results
    directory. Returns ``{ext: path}``."""
    allowed = {"svg", "png", "pdf"}
    bad = [f for f in formats if f not in allowed]
    if bad:
        raise ValueError(f"unsupported figure formats {bad}; choose from {sorted(allowed)}")
    fig_dir = Path(out_dir) / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{study}-{name}"
    written: dict[str, Path] = {}

    # The spec once (the theme applied, datasets inlined, validated): `chart.save` would make it again for
    # every format, each time most of a figure's cost; each file is rendered from it as `chart.save` does.
    with alt.data_transformers.enable("default"), alt.data_transformers.disable_max_rows():
        spec = chart.to_dict(context={"pre_transform": False})
    path = fig_dir / f"{stem}.vl.json"
    write_atomic(path, json.dumps(spec, indent=1, sort_keys=True) + "\n")
    written["vl.json"] = path

    for fmt in formats:
        path = fig_dir / f"{stem}.{fmt}"
        write_atomic_with(path, lambda tmp, fmt=fmt: Path(tmp).write_bytes(_render(spec, fmt, scale_factor)))
        written[fmt] = path
    return written


def _render(spec: dict, fmt: str, scale_factor: float) -> bytes:
    """The file of `fmt` (svg, png, pdf) for a Vega-Lite spec, through altair's own vl-convert call."""
    from altair.utils.mimebundle import spec_to_mimebundle

    bundle = spec_to_mimebundle(spec, format=fmt, mode="vega-lite", vegalite_version=alt.VEGALITE_VERSION,
                                scale_factor=scale_factor if fmt == "png" else 1.0)
    if fmt == "png":
        return bundle[0]["image/png"]
    if fmt == "svg":
        return bundle["image/svg+xml"].encode("utf-8")
    return bundle["application/pdf"]
