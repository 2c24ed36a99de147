"""The paper's conditions section names the noisiest points of the run (the
studies' summaries' `noisiest_points`, boatload.analysis.spread) with their CV, runs
and what the interference monitor did about them, noisiest first."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from boatload.publish import paper
from notebook_checks import pdf_text

REPO = Path(__file__).resolve().parents[1]


def test_paper_names_the_noisiest_points(journal_fixture_run, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(journal_fixture_run["results"], results)
    path = results / "tables" / "journal-summary.json"
    summary = json.loads(path.read_text())
    measured = summary["noisiest_points"]
    assert measured and all(e["cv"] >= 0 and e["runs"] >= 2 for e in measured)
    # a point noisier than any the fixture measured, whose runs the monitor redid
    loud = {"target": "xfs-log-external", "point": "random_read", "cv": 0.987, "runs": 4, "redone": 2,
            "still_disturbed": 1}
    summary["noisiest_points"] = [loud, *measured]
    path.write_text(json.dumps(summary))

    pdf = paper.build_paper(REPO, tmp_path / "paper.pdf", results)
    assert "noisiest points of this run" in pdf_text(pdf)
    # the table's rows as laid out: one line each, after its caption
    layout = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    start = next(i for i, line in enumerate(layout) if re.match(r"\s*Table \d+: The noisiest points", line))
    rows = [line.split() for line in layout[start + 2:start + 8] if "%" in line]
    shown = sorted([loud, *measured], key=lambda e: -e["cv"])[:5]
    assert len(rows) == len(shown)
    assert rows[0] == ["journal", "xfs-log-external", "random_read", "98.7", "%", "4", "2", "runs", "measured",
                       "again,", "1", "kept", "disturbed"]
    for row, entry in zip(rows, shown):  # noisiest first, each named with its target, point, CV and runs
        assert row[:6] == ["journal", entry["target"], entry["point"], f"{100 * entry['cv']:.1f}", "%",
                           str(entry["runs"])]
