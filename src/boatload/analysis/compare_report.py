"""`boatload compare A B`: did B's runs come out faster, slower or the same
as A's, point by point; the comparison's document (compare.json) and its
terminal table. (The page and the command's writing: boatload.publish.compare_page.)

    boatload compare data/runs/before data/runs/after --out results/compare [--fail-on slower]
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from boatload.analysis.compare import FASTER, INCONCLUSIVE, SAME, SLOWER, VERDICTS, Settings, compare_tables, worst_first
from boatload.analysis.compare_sets import ResultSet, diff_facts, facts, open_set
from boatload.analysis.intervals import runs_for_interval
from boatload.studies import registry

__all__ = ["build", "method_text", "settings_from", "terminal"]


def settings_from(margin: float | None, level: float | None, configfile: Path | None) -> Settings:
    """The margin and level: the arguments, else the config's `compare.margin`
    (default in the schema), and the verdict rule's level."""
    from boatload.studies.config import schema
    from boatload.analysis.verdict import Rule

    config = {}
    if configfile is not None:
        from boatload.studies.config import load

        config = load(Path(configfile))
    default = schema()["properties"]["compare"]["properties"]["margin"]["default"]
    try:
        return Settings(margin=margin if margin is not None else (config.get("compare") or {}).get("margin", default),
                        level=level if level is not None else Rule().level)
    except ValueError as exc:  # an argument's error names the argument, the config's its field
        text = str(exc)
        if margin is not None:
            text = text.replace("compare.margin:", "--margin:")
        raise ValueError(text.replace("level:", "--level:")) from None


def method_text(s: Settings, points: int) -> str:
    """How the verdicts and the study means are made, in words (the page and compare.json)."""
    lvl, tost = f"{s.level:.0%}", f"{s.tost_level:.0%}"
    chance = (1.0 - s.level) / 2.0 * points
    return (
        f"Each point's ratio is B's rate over A's: the Hodges-Lehmann shift of the log rates of the two sets' runs "
        f"(one rate per job), with the exact distribution-free Mann-Whitney interval, the runs of A and B taken as "
        f"independent. faster / slower: the {lvl} interval lies wholly above ×{s.margin:g} / below ÷{s.margin:g}. "
        f"same: the {tost} interval lies within ×/÷ {s.margin:g} (two one-sided tests at {1 - s.level:.1%} each). "
        f"inconclusive: neither; runs to settle are the runs per side that would decide it with 80 % power at the "
        f"ratio and spread observed (normal-theory size over the Mann-Whitney efficiency 3/π); "
        f"{runs_for_interval(s.level)} runs per side are the fewest that give a {lvl} interval at all. "
        f"No correction for many points is applied: among points that did not change, each is called slower with "
        f"probability at most {(1 - s.level) / 2:.1%} (less, since the margin lies beyond 1), so of these "
        f"{points} points about {chance:.2g} or fewer would be called slower by chance alone, and as many faster. "
        f"A study's mean is the geometric mean of its points' ratios with a Student t interval over points of the "
        f"mean log ratio ({lvl} for faster/slower, {tost} for same): the points stand for the workloads the study "
        f"could measure, and their spread, true differences between points included, sets its width."
    )


def _side(s: ResultSet) -> dict:
    hosts = sorted({str(d.get("machine", {}).get("host")) for d in s.docs})
    return {"name": s.name, "runs_dir": str(s.runs_dir), "hosts": hosts, "runs": len(s.docs),
            "studies": sorted(s.tables)}


def build(a: ResultSet, b: ResultSet, s: Settings) -> dict:
    """The comparison's document (compare.json)."""
    points, only_a, only_b, studies = [], [], [], {}
    for name, study in registry().items():
        if name in a.tables and name in b.tables:
            got = compare_tables(study, a.tables[name], b.tables[name], s)
            points += got["points"]
            only_a += got["only_a"]
            only_b += got["only_b"]
            studies[name] = {"title": study.title, "rate": list(study.original.rate), "mean": got["mean"],
                             "points": len(got["points"])}
        elif name in a.tables or name in b.tables:
            studies[name] = {"title": study.title, "rate": list(study.original.rate), "mean": None, "points": 0,
                             "only_in": "A" if name in a.tables else "B"}
    provenance = diff_facts(facts(a.docs), facts(b.docs))
    counts = {v: sum(p["verdict"] == v for p in points) for v in VERDICTS}
    with_interval = sum(p["low"] is not None for p in points)
    return {
        "a": _side(a), "b": _side(b),
        "margin": s.margin, "level": s.level, "tost_level": s.tost_level,
        "points": worst_first(points), "only_a": only_a, "only_b": only_b, "studies": studies,
        "counts": counts,
        "points_with_interval": with_interval,
        # among points that did not change, at most this many "slower" by chance (and as many "faster")
        "chance_slower_at_most": (1.0 - s.level) / 2.0 * with_interval,
        "provenance": provenance,
        "threats": [d for d in provenance["differs"] if d["threat"]],
        "method": method_text(s, with_interval),
    }


# --- the terminal ----------------------------------------------------------------


def _num(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.3g}"


def _interval(lo: float | None, hi: float | None) -> str:
    return "no interval" if lo is None else f"[{_num(lo)}, {_num(hi)}]"


def terminal(doc: dict, width: int = 100) -> str:
    """The table a person reads first: what differs, then every point, worst first."""
    lines = [f"A: {doc['a']['name']} ({doc['a']['runs']} runs)   B: {doc['b']['name']} ({doc['b']['runs']} runs)"]
    differs = doc["provenance"]["differs"]
    if differs:
        lines.append("What differs (B against A):")
        for d in differs:
            mark = "  THREAT " if d["threat"] else "  "
            lines.append(f"{mark}{d['section']}: {d['key']}: {d['a']} -> {d['b']}"[:width * 2])
    lines.append(f"The same: {len(doc['provenance']['same'])} facts (machine, targets, tools, settings)")
    lines.append("")
    head = f"{'verdict':<13}{'B/A':>7}  {'interval':<20}{'runs':>6}  point"
    lines.append(f"{head}   (margin x/÷ {doc['margin']:g}, level {doc['level']:g})")
    for p in doc["points"]:
        runs = f"{p['runs']['a']}+{p['runs']['b']}"
        settle = f" (settle: {p['runs_to_settle']} runs per side)" if p["runs_to_settle"] else ""
        lines.append(f"{p['verdict']:<13}{_num(p['ratio']):>7}  {_interval(p['low'], p['high']):<20}{runs:>6}  "
                     f"{p['study']} {p['target']}: {p['point']}{settle}")
    for side, key in (("A", "only_a"), ("B", "only_b")):
        for p in doc[key]:
            lines.append(f"{'only in ' + side:<13}{'':>7}  {'':<20}{'':>6}  {p['study']} {p['target']}: {p['point']}")
    for name, st in doc["studies"].items():
        m = st.get("mean")
        if m:
            lines.append(f"{name}: geometric mean of {m['points']} ratios {_num(m['ratio'])} "
                         f"{_interval(m['low'], m['high'])}: {m['verdict']}")
    c = doc["counts"]
    lines.append(f"{c[SLOWER]} slower, {c[FASTER]} faster, {c[SAME]} same, {c[INCONCLUSIVE]} inconclusive; "
                 f"{len(doc['only_a'])} only in A, {len(doc['only_b'])} only in B; by chance alone at most about "
                 f"{doc['chance_slower_at_most']:.2g} slower among points that did not change")
    return "\n".join(lines)

