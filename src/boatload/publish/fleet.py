"""The fleet section's data: every host's verdicts, the hosts' provenance side
by side, and the spread of each claim's ratio across hosts.

Reads what each host's notebooks and provenance rule wrote (the first host's
in ``results/``, each other's in ``results/hosts/<host>/``) and the failure
records under ``data/runs/<host>/archive/failed/``, and writes
``results/tables/fleet-summary.json``, which ``paper/fleet.typ`` and the blog
pages read. Each other host's runs are also compared with the first host's,
point by point, by ``boatload compare``'s code path (``measured``). The workflow writes it only when two or more hosts measured.

    boatload fleet --results results --out results/tables/fleet-summary.json node1 node2
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

from boatload.studies import registry

PROVENANCE_FIELDS = ("host", "os", "kernel", "cpu_model", "cpus", "memory_bytes", "python", "runs")


def host_results(results: Path, hosts: list[str], host: str) -> Path:
    """results/ for the first host, results/hosts/<host>/ for the others."""
    return Path(results) if host == hosts[0] else Path(results) / "hosts" / host


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _unfinished(runs_root: Path, host: str) -> list[dict]:
    """Failure records of runs that still have no result on this host."""
    out = []
    runs_dir = runs_root / host
    for path in sorted((runs_dir / "archive" / "failed").rglob("*.json")):
        doc = _read(path)
        if not doc or "job" not in doc:
            continue
        job = doc["job"]
        raw = runs_dir / doc.get("study", "") / job.get("target", {}).get("name", "") / str(job.get("point")) / f"rep{job.get('rep')}.json"
        if raw.exists():
            continue  # measured since
        out.append({"study": doc.get("study"), "target": job.get("target", {}).get("name"), "point": job.get("point"),
                    "rep": job.get("rep"), "reason": (doc.get("result") or {}).get("reason")})
    # one entry per run: the latest record
    seen = {}
    for entry in out:
        seen[(entry["study"], entry["target"], str(entry["point"]), entry["rep"])] = entry
    return list(seen.values())


def spread(values: list[float]) -> dict:
    """Min, max, median and max/min of a claim's ratio over the hosts that have it."""
    values = [float(v) for v in values if v is not None]
    if not values:
        return {"hosts": 0, "min": None, "max": None, "median": None, "max_over_min": None}
    low, high = min(values), max(values)
    return {"hosts": len(values), "min": low, "max": high, "median": statistics.median(values),
            "max_over_min": high / low if low > 0 else None}


def measured_against_first(hosts: list[str], runs_root: Path = Path("data/runs")) -> dict:
    """Each other host's runs against the first host's, point by point
    (boatload compare's code path): the verdict counts, the slower points and
    what differs in provenance; None for a host without tidy tables."""
    from boatload.analysis.compare import SLOWER
    from boatload.analysis.compare_report import build, settings_from
    from boatload.analysis.compare_sets import SetError, open_set

    out: dict[str, dict | None] = {}
    try:
        first = open_set(hosts[0], runs_root, hosts[0])
    except SetError:
        return {h: None for h in hosts[1:]}
    settings = settings_from(None, None, None)
    for host in hosts[1:]:
        try:
            doc = build(first, open_set(host, runs_root, host), settings)
        except SetError:
            out[host] = None
            continue
        out[host] = {
            "counts": doc["counts"], "margin": doc["margin"], "level": doc["level"],
            "slower": [{k: p[k] for k in ("study", "target", "point", "ratio", "low", "high")}
                       for p in doc["points"] if p["verdict"] == SLOWER],
            "differs": [f"{d['section']}: {d['key']}" for d in doc["provenance"]["differs"]],
            "threats": [f"{d['section']}: {d['key']}" for d in doc["threats"]],
        }
    return out


def summarize(results: Path, hosts: list[str], runs_root: Path = Path("data/runs")) -> dict:
    """The fleet summary (see the module's docstring)."""
    results = Path(results)
    studies = [s for s in registry()
               if any((host_results(results, hosts, h) / "tables" / f"{s}-summary.json").is_file() for h in hosts)]
    provenance, failed = {}, {}
    for host in hosts:
        prov = _read(host_results(results, hosts, host) / "provenance.json") or {}
        provenance[host] = {k: prov.get(k) for k in PROVENANCE_FIELDS}
        provenance[host]["worker_sha256"] = (prov.get("worker") or {}).get("sha256")
        provenance[host]["lock_sha256"] = prov.get("lock_sha256")
        failed[host] = _unfinished(Path(runs_root), host)
    claims = []
    for study in studies:
        by_host = {h: _read(host_results(results, hosts, h) / "tables" / f"{study}-summary.json") for h in hosts}
        order = []
        for h in hosts:
            for v in (by_host[h] or {}).get("verdicts") or []:
                if v["claim"] not in order:
                    order.append(v["claim"])
        for text in order:
            entry = {"study": study, "claim": text, "original_ratio": None, "hosts": {}}
            for h in hosts:
                match = [v for v in (by_host[h] or {}).get("verdicts") or [] if v["claim"] == text]
                if not match:
                    entry["hosts"][h] = None
                    continue
                v = match[0]
                entry["original_ratio"] = v.get("original_ratio")
                entry["hosts"][h] = {k: v.get(k) for k in ("ours", "ours_low", "ours_high", "verdict")}
            entry["spread"] = spread([(x or {}).get("ours") for x in entry["hosts"].values()])
            verdicts = {x["verdict"] for x in entry["hosts"].values() if x}
            entry["agree"] = len(verdicts) == 1 and len([x for x in entry["hosts"].values() if x]) == len(hosts)
            claims.append(entry)
    return {
        "hosts": hosts,
        "first_host": hosts[0],
        "studies": studies,
        "titles": {s: registry()[s].title for s in studies},
        "claims": claims,
        "provenance": provenance,
        "failed": {h: len(v) for h, v in failed.items()},
        "failed_runs": failed,
        "agreeing_claims": sum(1 for c in claims if c["agree"]),
        # the measurements themselves, each host against the first (boatload compare)
        "measured": measured_against_first(hosts, Path(runs_root)),
    }


def fleet_summary(results: Path) -> dict | None:
    """The fleet summary next to these results, if two or more hosts measured."""
    doc = _read(Path(results) / "tables" / "fleet-summary.json")
    return doc if doc and len(doc.get("hosts") or []) >= 2 else None


def write(results: Path, out: Path, hosts: list[str]) -> dict:
    from boatload.base.results import write_atomic

    doc = summarize(results, hosts)
    write_atomic(Path(out), json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
    return doc


def hosts_with_data(runs_root: Path = Path("data/runs")) -> list[str]:
    """Hosts with at least one tidy table under data/runs/ (for messages and tests)."""
    if not Path(runs_root).is_dir():
        return []
    return sorted(h for h in os.listdir(runs_root) if any((Path(runs_root) / h).glob("*.parquet")))
