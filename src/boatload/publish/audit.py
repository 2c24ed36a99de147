"""The benchmarking-crimes audit and the threats to validity, from one run.

Heiser's "Systems Benchmarking Crimes" lists the ways a performance paper
misleads. For each of them, :func:`build_audit` says how this paper avoids it,
with the evidence read from the run (``results/provenance.json``, the study
summaries and tables), or why it cannot. The same reading gives the numbers of
the paper's threats-to-validity section (the scale gap, loop images on the
host's disk, memory limits against the whole machine, kernel and hardware).

``boatload paper`` writes it to ``results/tables/audit.json`` before it
compiles, and the paper's appendix and threats section print it; nothing in
either is typed by hand.

    python -m boatload.publish.audit --results results
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import string
from pathlib import Path

from boatload.base.results import write_atomic
from boatload.studies import registry
from boatload.analysis.intervals import simulated_coverage
from boatload.analysis.verdict import DECIDED, WITH_INTERVAL

__all__ = ["CRIMES", "build_audit", "geomean", "main", "write_audit"]

# Heiser's list (gernot-heiser.org/benchmarking-crimes.html), in his order and
# grouping; the ids follow van der Kouwe et al., "Benchmarking crimes" (2018).
CRIMES: list[tuple[str, str, str]] = [
    ("A1", "Selective benchmarking", "Not evaluating potential performance degradation"),
    ("A2", "Selective benchmarking", "Benchmark subsetting without strong justification"),
    ("A3", "Selective benchmarking", "Selective data set hiding deficiencies"),
    ("B1", "Improper handling of benchmark results", "Microbenchmarks representing overall performance"),
    ("B2", "Improper handling of benchmark results", "Throughput degraded by x% means overhead is x%"),
    ("B3", "Improper handling of benchmark results", "Downplaying overheads"),
    ("B4", "Improper handling of benchmark results", "No indication of significance of data"),
    ("B5", "Improper handling of benchmark results", "Arithmetic mean of normalised numbers"),
    ("C1", "Using the wrong benchmarks", "Benchmarking a simplified or simulated system"),
    ("C2", "Using the wrong benchmarks", "Inappropriate and misleading benchmarks"),
    ("C3", "Using the wrong benchmarks", "Same data set for calibration and validation"),
    ("D1", "Improper comparison of benchmark results", "No proper baseline"),
    ("D2", "Improper comparison of benchmark results", "Only evaluating against yourself"),
    ("D3", "Improper comparison of benchmark results", "Unfair benchmarking of competitors"),
    ("D4", "Improper comparison of benchmark results", "Not comparing against the state of the art"),
    ("E1", "Missing information", "Missing specification of the evaluation platform"),
    ("E2", "Missing information", "Missing subsets"),
    ("E3", "Missing information", "Relative numbers only"),
]

# What the provenance appendix states about the platform.
PLATFORM_FIELDS = {"host": "the host", "cpu_model": "its CPU model", "cpus": "CPU count", "memory_bytes": "memory",
                   "kernel": "kernel", "os": "OS", "python": "Python", "lock_sha256": "the lock file's hash",
                   "config": "the configuration", "scale": "its scale",
                   "worker": "the worker's version, compiler, flags and hash", "targets": "the targets"}


def geomean(values) -> float | None:
    """The geometric mean of positive finite numbers (None if there are none):
    the one mean of ratios that does not depend on which side is the divisor."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    if not xs:
        return None
    return math.exp(math.fsum(math.log(x) for x in xs) / len(xs))


def _read_csv(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _num(x) -> float | None:
    if x in (None, ""):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _studies(results: Path) -> list[str]:
    return [s for s in registry() if (results / "tables" / f"{s}-summary.json").is_file()]


def _fmt(x: float) -> str:
    """A number for the audit's sentences: three significant figures, grouped."""
    if x == 0:
        return "0"
    e = math.floor(math.log10(abs(x)))
    v = round(x, 2 - e)
    if abs(v) >= 100:
        return f"{round(v):,}"
    return f"{v:.{max(0, 2 - e)}f}"


def _pct(level: float) -> str:
    return f"{round(level * 100)} %"


def _and(items: list[str]) -> str:
    items = [str(i) for i in items]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _runs(n: int) -> str:
    return _count(n, "run", "runs")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _verdicts_of(verdicts: list[tuple[str, dict]], word: str) -> int:
    """How many of the (study, verdict) entries carry the verdict `word`."""
    return sum(1 for _, v in verdicts if v.get("verdict") == word)


def _runs_of(v: dict) -> int | None:
    """How many runs a verdict's ratio rests on, per side (the fewer side)."""
    sides = v.get("runs_per_side")
    if isinstance(sides, list) and sides:
        return min(sides)
    for key in ("runs", "reps"):
        if isinstance(v.get(key), int):
            return v[key]
    return None


def _coverage(verdicts: list[dict], level: float) -> list[dict]:
    """The interval's coverage, simulated at each pair of run counts the claims
    rest on (2,000 lognormal draws with a known ratio, as tests/test_intervals.py)."""
    pairs = sorted({tuple(v["runs_per_side"]) for v in verdicts
                    if isinstance(v.get("runs_per_side"), list) and v.get("ours_low") is not None})
    out = []
    for m, n in pairs:
        got = simulated_coverage(m, n, level)
        if got is not None:
            out.append({"runs_per_side": [m, n], "coverage": got, "draws": 2000})
    return out


def _peers(results: Path, studies: list[str]) -> list[dict]:
    """Worker over peer per point, summarised by the geometric mean, for each
    study whose record names a peer table."""
    out = []
    for study in studies:
        table = registry()[study].peers
        if table is None:
            continue
        rows = _read_csv(results / "tables" / table.table)
        ratios = [r for r in (_num(row.get(table.column)) for row in rows) if r and r > 0]
        if not ratios:
            continue
        out.append({"study": study, "peer": table.peer, "role": table.role, "setting": table.setting,
                    "points": len(ratios),
                    "geomean": geomean(ratios), "min": min(ratios), "max": max(ratios), "table": table.table})
    return out


def _get(doc: dict, *keys):
    """doc[k1][k2]... or None where a level is missing."""
    for k in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(k)
    return doc


def _value(summary: dict, where) -> float | None:
    """A scale quantity: a number, or the value at a path of keys in a summary
    (a list there counts by its largest value)."""
    if isinstance(where, (int, float)):
        return float(where)
    v = _get(summary, *where)
    if isinstance(v, list):
        v = max((x for x in v if isinstance(x, (int, float))), default=None)
    return v if isinstance(v, (int, float)) else None


def _scale(summaries: dict) -> list[dict]:
    """Ours against the original's scale, per study, as each study's record names the quantities."""
    rows = []
    for study, summary in summaries.items():
        original = registry()[study].original
        for gap in original.scale if original else ():
            ours, theirs = _value(summary, gap.ours), _value(summary, gap.original)
            if ours and ours > 0 and theirs is not None:
                theirs *= gap.original_scale
                rows.append({"study": study, "quantity": gap.quantity, "ours": ours, "original": theirs,
                             "unit": gap.unit, "factor": theirs / ours})
    return rows


class _SummaryFields(string.Formatter):
    """Fills a record's phrase from a summary; a list reads "a, b and c"."""

    def format_field(self, value, format_spec):
        return _and([str(v) for v in value]) if isinstance(value, list) else super().format_field(value, format_spec)


def _originals(summaries: dict) -> dict:
    """Per study, its original's citation key and the machine it ran on (the record's phrase, filled)."""
    out = {}
    for study, summary in summaries.items():
        original = registry()[study].original
        if original is None:
            continue
        out[study] = {"citation": original.citation, "hardware": _phrase(original.hardware, summary)}
    return out


def _rate(study: str) -> tuple[str, str] | None:
    original = registry()[study].original
    return original.rate if original else None


def _phrase(template: str, summary: dict) -> str | None:
    """A record's phrase filled from a summary, or None where the summary lacks a field it names."""
    try:
        return _SummaryFields().format(template, **summary)
    except (KeyError, IndexError, TypeError):
        return None  # say nothing rather than guess


def _memory(prov: dict, summaries: dict) -> dict:
    """The memory limits the studies ran under (where each record says its summary keeps it) against the host's."""
    limits, original = {}, {}
    for study, summary in summaries.items():
        record = registry()[study]
        limit = _value(summary, record.memory_limit) if record.memory_limit else None
        if limit:
            limits[study] = limit
        phrase = _phrase(record.original_memory, summary) if record.original_memory else None
        if phrase:
            original[study] = phrase
    host_mib = (prov.get("memory_bytes") or 0) / 2**20
    return {
        "host_bytes": prov.get("memory_bytes"),
        "limits_mb": limits,
        "largest_limit_share": (max(limits.values()) / host_mib) if limits and host_mib else None,
        "original": original,
    }


def _uncovered(summaries: dict) -> list[dict]:
    """The original's published rows and points with no counterpart here, per study as its record names them."""
    out = []
    for study, summary in summaries.items():
        record = registry()[study]
        for kind, gap in (("unmapped_rows", record.unmapped_rows), ("missing_points", record.missing_points)):
            n = len(_get(summary, *gap.where) or []) if gap else 0
            if n:
                out.append({"study": study, "kind": kind, "count": n, "what": gap.what[n != 1]})
    return out


def _disk(prov: dict, results: Path, studies: list[str]) -> dict:
    targets = prov.get("targets") or []
    loops = [t for t in targets if t.get("kind") == "loop"]
    direct = {}
    for study in studies:
        for row in _read_csv(results / "tables" / f"{study}.csv"):
            flag = row.get("loop_direct_io")
            if flag in ("true", "True"):
                direct[row["target"]] = True
            elif flag in ("false", "False") and row["target"] not in direct:
                direct[row["target"]] = False
    return {
        "targets": len(targets),
        "loop_targets": len(loops),
        "tmpfs_targets": sum(1 for t in targets if t.get("kind") == "tmpfs"),
        "stand_ins": sum(1 for t in targets if t.get("substituted") not in (None, "", False)),
        "backing_fs": sorted({t.get("backing_fs") for t in loops if t.get("backing_fs")}),
        "image_mb_min": min((t["size_mb"] for t in loops if t.get("size_mb")), default=None),
        "image_mb_max": max((t["size_mb"] for t in loops if t.get("size_mb")), default=None),
        # the user's own hardware: device and mount targets, and what each sat on
        "device_targets": sum(1 for t in targets if t.get("kind") == "device"),
        "mount_targets": sum(1 for t in targets if t.get("kind") == "mount"),
        "own_hardware": [f"{t['name']}: {t['on']}" for t in targets if t.get("kind") in ("device", "mount") and t.get("on")],
        "loop_direct_io": sum(1 for v in direct.values() if v),
        "loop_buffered": sum(1 for v in direct.values() if not v),
    }


def _conditions(prov: dict) -> dict:
    cond = prov.get("conditions") or {}
    shares = [c.get("competing_max") for c in cond.values() if c.get("competing_max") is not None]
    return {
        "runs": sum(c.get("runs", 0) for c in cond.values()),
        "phases": sum(c.get("measured_phases", 0) for c in cond.values()),
        "redone_runs": sum(c.get("redone_runs", 0) for c in cond.values()),
        "redone_for_steal": sum(c.get("redone_for_steal", 0) for c in cond.values()),
        "steal_max": max((c["steal_max"] for c in cond.values() if c.get("steal_max") is not None), default=None),
        "redone_attempts": sum(c.get("redone_attempts", 0) for c in cond.values()),
        "still_disturbed": sum(c.get("still_disturbed", 0) for c in cond.values()),
        "competing_max": max(shares) if shares else None,
        "max_other_cpu": next((c["max_other_cpu"] for c in cond.values() if c.get("max_other_cpu") is not None), None),
    }


def build_audit(results: Path) -> dict:
    """The audit of the run in ``results`` (a dict, JSON-ready, deterministic)."""
    results = Path(results)
    prov = json.loads((results / "provenance.json").read_text(encoding="utf-8"))
    studies = _studies(results)
    summaries = {s: json.loads((results / "tables" / f"{s}-summary.json").read_text(encoding="utf-8"))
                 for s in studies}
    tables = {s: _read_csv(results / "tables" / f"{s}.csv") for s in studies}

    verdicts = [(s, v) for s in studies for v in summaries[s].get("verdicts") or []]
    by_verdict: dict[str, int] = {}
    for _, v in verdicts:
        by_verdict[v.get("verdict", "?")] = by_verdict.get(v.get("verdict", "?"), 0) + 1
    with_ci = [v for _, v in verdicts if v.get("verdict") in WITH_INTERVAL]
    runs_ci = [n for n in (_runs_of(v) for v in with_ci) if n is not None]
    too_few = by_verdict.get("too few runs", 0)
    not_tested = by_verdict.get("not tested", 0)
    levels = sorted({summaries[s].get("level") for s in studies if summaries[s].get("level") is not None})
    resamples = sorted({summaries[s].get("n_resamples") for s in studies if summaries[s].get("n_resamples")})
    stats = {s: summaries[s].get("stat") for s in studies}
    reps = [int(r["reps"]) for s in studies for r in tables[s] if (r.get("reps") or "").isdigit()]
    level = levels[0] if levels else 0.95
    peers = _peers(results, studies)
    scale = _scale(summaries)
    memory = _memory(prov, summaries)
    disk = _disk(prov, results, studies)
    cond = _conditions(prov)
    virt = prov.get("virtualization", "not recorded")
    rows = {s: len(tables[s]) for s in studies}
    rate = {s: _rate(s) for s in studies if _rate(s)}
    absolute = {s: sum(1 for r in tables[s] if _num(r.get(rate[s][0])) is not None) for s in rate}
    platform_missing = [f for f in PLATFORM_FIELDS if prov.get(f) in (None, "", [], {})]
    not_measured = {s: len(summaries[s].get("not_measured") or []) for s in studies}
    # claims whose mechanism the timed phase never used carry no verdict ("not exercised");
    # one decided although marked as not exercised would be the crime itself
    not_exercised = _verdicts_of(verdicts, "not exercised")
    decided_unexercised = [f"{v.get('claim')} ({s})" for s, v in verdicts
                           if v.get("exercised") is False and v.get("verdict") in DECIDED]
    uncovered = _uncovered(summaries)
    baselines = [registry()[s].baseline for s in studies if registry()[s].baseline]
    n_claims = len(verdicts)
    counts_text = _and([f"{n} {k}" for k, n in sorted(by_verdict.items())]) or "none"

    def crime(cid, status, how):
        cat, name = next((c, n) for i, c, n in CRIMES if i == cid)
        return {"id": cid, "category": cat, "crime": name, "status": status, "how": how}

    coverage = _coverage([v for _, v in verdicts], level)
    ci_text = (f"{len(with_ci)} of the {n_claims} claims rest on an exact distribution-free {_pct(level)} interval "
               "of their ratio (the Hodges-Lehmann shift of log rates with Mann-Whitney bounds)")
    if runs_ci:
        lo, hi = min(runs_ci), max(runs_ci)
        ci_text += f" over {_runs(lo)} per side" if lo == hi else f" over {lo} to {hi} runs per side"
    if coverage:
        cov = [c["coverage"] for c in coverage]
        ci_text += (f"; on lognormal samples with a known ratio at those run counts it held the truth in "
                    + (f"{cov[0]:.1%}" if len(cov) == 1 else f"{min(cov):.1%} to {max(cov):.1%}")
                    + " of 2,000 draws")
    ci_text += "; the verdict asks for the original's direction and its size within a stated band."
    if too_few:
        ci_text += (f" {too_few} claims rest on runs too few for any interval at that level and are marked "
                    "\"too few runs\" rather than given a narrower one.")
    if reps:
        span = (f"{min(reps)} each" if min(reps) == max(reps) else f"from {min(reps)} to {max(reps)}")
        notes = [n for n in (registry()[s].repetition_note for s in studies) if n]
        ci_text += f" Every table row states its repetitions ({'; '.join([span, *notes])})."

    kinds: dict[str, list[str]] = {}
    for study, stat in stats.items():
        kinds.setdefault(str(stat or "median"), []).append(study)
    geo_text = ("No mean of normalised numbers is taken: per point the statistic of the raw rates is "
                + _and([f"the {k} ({_and(v)})" for k, v in sorted(kinds.items())])
                + ", and a ratio is a ratio of two such statistics.")
    if peers:
        geo_text += " Across points, worker-over-peer ratios are summarised by their geometric mean: " + _and(
            [f"{_fmt(p['geomean'])} over {p['points']} points for {p['peer']} ({p['study']})" for p in peers]) + "."

    crimes = [
        crime("A1", "avoided",
              f"Every claim of the originals that maps onto a measurement is tested, whichever way it comes out: "
              f"{n_claims} claims, {counts_text}. A \"contradicted\" is reported as prominently as a \"reproduced\"."),
        crime("A2", "avoided" if not uncovered else "stated",
              f"All {len(studies)} studies are rerun with every operation the originals measured."
              + (" " + _and([f"{u['count']} {u['what']}" for u in uncovered])
                 + (" has" if len(uncovered) == 1 and uncovered[0]["count"] == 1 else " have")
                 + " no counterpart; each section names them." if uncovered else "")),
        crime("A3", "avoided",
              "Every planned run is kept: "
              + (f"{_runs(prov['runs'])} in this results directory (one record each, as the method section's table of measurement conditions counts them); "
                 if prov.get("runs") else "")
              + ("results without a rate, each listed with its reason in its study's section: "
                 + _and([_count(n, *registry()[s].not_measured_unit) + f" of {s}"
                         for s, n in not_measured.items() if n])
                 if any(not_measured.values()) else "every result has a rate")
              + f"; {cond['redone_attempts']} disturbed attempts stay in their runs' records."),
        crime("B1", "avoided",
              "These are micro-benchmarks by design, as the originals were; the paper draws conclusions only "
              "about the operation measured (creating, stating, reading or deleting small files, block I/O) "
              "and never about an application's overall speed."),
        crime("B2", "avoided",
              "No overhead is derived from a throughput: rates are reported as rates, comparisons as ratios of "
              "rates with their intervals, and CPU time per operation separately (the peer appendix)."),
        crime("B3", "avoided",
              "Each ratio names its numerator and its baseline and is printed as measured; slowdowns "
              "(ratios below 1) are printed the same way as speed-ups."),
        crime("B4", "avoided" if not too_few and with_ci else "partly", ci_text),
        crime("B5", "avoided", geo_text),
        crime("C1", "cannot" if disk["loop_targets"] else "avoided",
              (f"Real kernels and file systems, but {disk['loop_targets']} of the {disk['targets']} targets are "
               f"loop images on a file in the host's {_and(disk['backing_fs']) or 'file system'}, "
               + (f"itself on the virtual disk of a {virt} virtual machine, " if virt not in (None, "not recorded")
                  else "itself on the host's disk, " if virt is None
                  else "itself on a disk that may be virtual (not recorded), ")
               + "and memory is limited by a cgroup rather than by the machine's RAM; the threats section gives "
               "the numbers.")
              if disk["loop_targets"] else "Every target is a real device or tmpfs."),
        crime("C2", "partly" if decided_unexercised else "avoided",
              "Each study reruns the original's own workload (its operations, file sizes, tree shape, "
              "read share, transfer size) with one worker"
              + (", and a standard tool beside it on the same points ("
                 + _and([p["role"] for p in peers]) + ")" if peers else "") + ". "
              + (f"{_count(not_exercised, 'claim', 'claims')} whose mechanism the timed phase did not use (no "
                 "write or flush reached the device the claim is about) "
                 + ("is" if not_exercised == 1 else "are") + " marked \"not exercised\" and carry no verdict"
                 if not_exercised else "No claim is marked \"not exercised\" (a timed phase that never used the "
                 "mechanism its claim is about)")
              + (f"; decided although their mechanism did not run: {_and(decided_unexercised)}"
                 if decided_unexercised else "") + "."),
        crime("C3", "avoided",
              "Nothing is fitted: the published numbers were fixed years before our runs, and the run "
              f"order (seed {prov.get('order_seed')}) and the bootstrap (seed "
              f"{_and(sorted({str(summaries[s].get('seed')) for s in studies}))}) are seeded in the record."),
        crime("D1", "avoided",
              "Every ratio divides by a baseline measured in the same run set on the same host and kernel"
              + (f" (the original's own baseline: {', '.join(baselines)})" if baselines else "")
              + f"; {n_claims - not_tested} of the {n_claims} claims have both sides measured."),
        crime("D2", "avoided" if peers else "partly",
              "Our numbers stand beside the originals' published ones in every section"
              + (", and the worker is measured against " + _and(
                  [f"{p['peer']} on {p['points']} points" for p in peers]) + " on the same targets"
                 if peers else "; no peer tool ran in these results") + "."),
        crime("D3", "avoided",
              "A peer runs in the same job as the worker, on the same freshly made target, with the same "
              "parameters" + "".join(f" and, {p['setting']}" for p in peers if p.get("setting"))
              + "; the order of the two tools alternates with the repetition."),
        crime("D4", "not applicable",
              "The paper claims no gain for a system of its own; it compares file systems and methods as the "
              "originals did, and the worker only stands in for their tools."),
        crime("E1", "avoided" if not platform_missing else "partly",
              "The provenance appendix gives " + _and([v for f, v in PLATFORM_FIELDS.items()
                                                        if f not in platform_missing])
              + f", and every target's mkfs and mount options ({len(prov.get('targets') or [])} targets)"
              + (f"; missing: {_and(platform_missing)}" if platform_missing else "") + "."),
        crime("E2", "avoided",
              "Every phase, operation, working set and file count measured is in its study's table: "
              + _and([f"{rows[s]} rows for {s}" for s in studies]) + "."),
        crime("E3", "avoided",
              "Each table gives the absolute rates beside the ratios, with their intervals: "
              + _and([f"{absolute[s]} {rate[s][1]} rows for {s}" for s in absolute]) + "."),
    ]

    return {
        "studies": studies,
        "questions": {s: registry()[s].question for s in studies},
        "originals": _originals(summaries),
        "level": level,
        "n_resamples": resamples,
        "stat": stats,
        "claims": {"total": n_claims, "by_verdict": by_verdict, "with_interval": len(with_ci), "coverage": coverage,
                   "runs_per_side_min": min(runs_ci) if runs_ci else None,
                   "runs_per_side_max": max(runs_ci) if runs_ci else None},
        "reps_min": min(reps) if reps else None,
        "reps_max": max(reps) if reps else None,
        "peers": peers,
        "uncovered": uncovered,
        "crimes": crimes,
        "threats": {"scale": scale, "memory": memory, "disk": disk, "conditions": cond,
                    "kernel": prov.get("kernel"), "cpu_model": prov.get("cpu_model"), "cpus": prov.get("cpus"),
                    "os": prov.get("os"), "virtualization": virt},
    }


def write_audit(results: Path) -> Path:
    """Write ``results/tables/audit.json``; returns its path."""
    results = Path(results)
    out = results / "tables" / "audit.json"
    write_atomic(out, json.dumps(build_audit(results), indent=1, sort_keys=True) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m boatload.publish.audit", description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"))
    args = parser.parse_args(argv)
    print(write_audit(args.results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
