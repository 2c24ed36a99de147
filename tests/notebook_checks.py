"""What the notebook tests share: loading a study's fixture builder, reading
the data a saved figure plots and the summary a notebook writes, the figure
files, the PDF's text, and the state of the committed notebook."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import shutil
import statistics
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parent
MAGIC = {"svg": b"<svg", "png": b"\x89PNG", "pdf": b"%PDF"}


def load_fixtures(study: str) -> ModuleType:
    """tests/fixtures/make_<study>.py, loaded by path (tests/fixtures is no package)."""
    spec = importlib.util.spec_from_file_location(
        f"boatload_{study}_fixtures", TESTS / "fixtures" / f"make_{study}.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def spec_records(spec: dict) -> list[dict]:
    """All inline data rows of a Vega-Lite spec (top-level datasets and data.values)."""
    rows: list[dict] = []
    for values in spec.get("datasets", {}).values():
        rows.extend(values)

    def walk(node):
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, dict) and isinstance(data.get("values"), list):
                rows.extend(data["values"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in spec.items() if k != "datasets"})
    return rows


def figure_rows(results: Path, name: str, *, study: str) -> list[dict]:
    """The data rows of results/figures/<study>-<name>.vl.json; the empty datum
    of a reference rule is no row."""
    rows = spec_records(json.loads((results / "figures" / f"{study}-{name}.vl.json").read_text()))
    return [r for r in rows if r]


def summary_of(results: Path, *, study: str) -> dict:
    return json.loads((results / "tables" / f"{study}-summary.json").read_text())


def check_figure_files(results: Path, names, *, study: str, formats=tuple(MAGIC)) -> None:
    """Each figure saved in each of `formats` (real files of their kind: SVG, PNG, PDF) and its spec."""
    for name in names:
        for ext, head in ((ext, MAGIC[ext]) for ext in formats):
            path = results / "figures" / f"{study}-{name}.{ext}"
            assert path.is_file() and path.stat().st_size > 1000, path
            assert path.read_bytes()[:64].lstrip().startswith(head), path
        assert (results / "figures" / f"{study}-{name}.vl.json").is_file()


def pdf_text(path: Path, plain_quotes: bool = False) -> str:
    """The PDF's text with white space folded (pdftotext); with plain_quotes
    Typst's smart apostrophes become '."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) not installed")
    out = subprocess.run(["pdftotext", str(path), "-"], check=True, capture_output=True, text=True).stdout
    out = re.sub(r"\s+", " ", out)
    return out.replace("\u2019", "'") if plain_quotes else out


def fmt_rate(x: float) -> str:
    """What paper/common.typ's fmt-rate prints: three significant figures, grouped."""
    e = math.floor(math.log10(abs(x)))
    v = math.copysign(math.floor(abs(x) / 10 ** (e - 2) + 0.5) * 10 ** (e - 2), x)
    if abs(v) >= 100:
        return f"{round(v):,}"
    return f"{v:.{max(0, 2 - e)}f}"


def fmt_ratio(x: float) -> str:
    """common.typ's fmt-ratio for ratios of 0.1 and more."""
    return fmt_rate(x) if abs(x) >= 10 else f"{x:.2f}"


def clean_notebook_parameters(notebook: Path) -> str:
    """Assert the committed notebook has no outputs, the python3 kernel and one
    parameters cell naming data, reference, out_dir and formats; its source."""
    nb = json.loads(notebook.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code
    for cell in code:
        assert cell["outputs"] == [], "committed notebook has outputs"
        assert cell["execution_count"] is None
    params = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1
    src = "".join(params[0]["source"])
    for name in ("data", "reference", "out_dir", "formats"):
        assert f"{name} = " in src
    return src


def hl_ratio(a, b) -> float:
    """The Hodges-Lehmann ratio of two samples, computed here on its own: the
    exponent of the median of every log ratio of one of `a` to one of `b`."""
    return math.exp(statistics.median(math.log(x) - math.log(y) for x in a for y in b))
