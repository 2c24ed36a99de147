"""`snakemake --report` builds one HTML report with every study's figures and
table grouped under the study's name."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from boatload.studies import registry

FIGURES = {name: s.figures for name, s in registry().items()}

REPO = Path(__file__).resolve().parents[1]


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *args],
        cwd=workdir, capture_output=True, text=True,
    )


def categories(report: Path) -> dict:
    """The report's grouping: {category: {subcategory: [files]}}."""
    text = report.read_text()
    m = re.search(r"var categories = (\{.*?\});\s*$", text, re.MULTILINE)
    assert m, "no category index in the report"
    return json.loads(m.group(1))


def check_report(workdir: Path, studies: list[str], *config: str) -> None:
    out = snakemake(workdir, *config, "--report", "results/report.html")
    assert out.returncode == 0, out.stderr[-4000:]
    report = workdir / "results" / "report.html"
    assert report.is_file() and report.stat().st_size > 0
    text = report.read_text()
    groups = categories(report)
    for study in studies:
        assert study in text
        assert study in groups, sorted(groups)
        files = [f for sub in groups[study].values() for f in sub]
        for name in FIGURES[study]:
            assert f"results/figures/{study}-{name}.svg" in files, (study, files)
        assert f"results/tables/{study}.csv" in files
        # Figures sit under their own study only.
        for other, subs in groups.items():
            if other != study:
                assert not any(Path(f).name.startswith(f"{study}-") for sub in subs.values() for f in sub)


def test_report_after_ci_run(workdir):
    """The ci workflow, then its report (about 90 s)."""
    run = snakemake(workdir, "--configfile", "config/ci.yaml")
    assert run.returncode == 0, run.stderr[-4000:]
    for study in FIGURES:
        assert (workdir / "results" / "blog" / f"{study}.html").is_file()
    check_report(workdir, list(FIGURES), "--configfile", "config/ci.yaml")
