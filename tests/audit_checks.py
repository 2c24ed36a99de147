"""What every audit must show, on any results directory: checked on the
fixture (tests/test_paper_layout.py) and on a real ci run (tests/test_e2e.py)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from boatload.publish.audit import CRIMES, PLATFORM_FIELDS
from boatload.studies import registry
from boatload.analysis.verdict import WITH_INTERVAL

STATUSES = {"avoided", "stated", "partly", "cannot", "not applicable"}


def check_audit(results: Path) -> dict:
    """Assert what results/tables/audit.json must say about ``results``; returns it."""
    audit = json.loads((results / "tables" / "audit.json").read_text())
    prov = json.loads((results / "provenance.json").read_text())
    summaries = {s: json.loads((results / "tables" / f"{s}-summary.json").read_text()) for s in audit["studies"]}
    crimes = {c["id"]: c for c in audit["crimes"]}

    # Heiser's whole list, in his order, each answered
    assert [c["id"] for c in audit["crimes"]] == [i for i, _, _ in CRIMES]
    assert len({c["category"] for c in audit["crimes"]}) == 5
    for c in audit["crimes"]:
        assert c["status"] in STATUSES and len(c["how"]) > 40, c

    # the claims and their verdicts, counted from the summaries
    verdicts = [v for s in summaries.values() for v in s.get("verdicts") or []]
    assert audit["claims"]["total"] == len(verdicts)
    assert audit["claims"]["with_interval"] == sum(v["verdict"] in WITH_INTERVAL for v in verdicts)
    assert f"{len(verdicts)} claims" in crimes["A1"]["how"]

    # significance: the level, the runs and the measured coverage come from the run
    b4 = crimes["B4"]["how"]
    assert f"{round(audit['level'] * 100)} %" in b4
    too_few = sum(v["verdict"] == "too few runs" for v in verdicts)
    assert (crimes["B4"]["status"] == "avoided") == (too_few == 0 and audit["claims"]["with_interval"] > 0)
    if too_few:
        assert f"{too_few} claims rest on runs too few" in b4
    for c in audit["claims"]["coverage"]:
        assert c["coverage"] >= 0.93, c  # the interval holds its level at the run counts the claims rest on

    # the paper's facts of each original come from its study's record
    from boatload.studies import registry

    for study, o in audit["originals"].items():
        assert o["citation"] == registry()[study].original.citation

    # every run kept; the platform specified
    if prov.get("runs"):
        assert f"{prov['runs']} runs" in crimes["A3"]["how"]
    missing = [f for f in PLATFORM_FIELDS if prov.get(f) in (None, "", [], {})]
    assert (crimes["E1"]["status"] == "avoided") == (not missing)
    for f in missing:
        assert f in crimes["E1"]["how"]

    # normalised numbers: geometric means only, recomputed here from the tables
    for peer in audit["peers"]:
        col = registry()[peer["study"]].peers.column  # the study's record names its table's column
        with (results / "tables" / peer["table"]).open(newline="") as fh:
            xs = [float(r[col]) for r in csv.DictReader(fh) if r[col] not in ("", None) and float(r[col]) > 0]
        assert peer["points"] == len(xs)
        assert math.isclose(peer["geomean"], math.exp(sum(map(math.log, xs)) / len(xs)), rel_tol=1e-12)
        assert min(xs) <= peer["geomean"] <= max(xs)
        assert f"{peer['points']} points for {peer['peer']}" in crimes["B5"]["how"]

    # the threats' numbers: the scale gap runs the right way, memory and disk from provenance
    th = audit["threats"]
    for row in th["scale"]:
        assert row["original"] >= row["ours"] > 0 and math.isclose(row["factor"], row["original"] / row["ours"])
    assert th["memory"]["host_bytes"] == prov["memory_bytes"]
    # memory limits and uncovered points only where a study's record says its summary keeps them
    assert all(registry()[s].memory_limit for s in th["memory"]["limits_mb"])
    for u in audit["uncovered"]:
        gap = getattr(registry()[u["study"]], u["kind"])
        summary = json.loads((results / "tables" / f"{u['study']}-summary.json").read_text())
        for key in gap.where:
            summary = summary[key]
        assert u["count"] == len(summary) > 0 and u["what"] in crimes["A2"]["how"]
    assert th["disk"]["targets"] == len(prov["targets"])
    assert th["disk"]["loop_targets"] == sum(t["kind"] == "loop" for t in prov["targets"])
    assert th["kernel"] == prov["kernel"]
    assert th["virtualization"] == prov.get("virtualization", "not recorded")
    return audit
