"""boatload.analysis.notebook: the one setup call every study notebook starts with, and
the atomic writes of its tables and summary; and no notebook pastes its own."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import polars as pl
import pytest

import boatload
from boatload.analysis import notebook
from boatload.base.paths import repo_root
from boatload.base.system import hostname

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
# what boatload.analysis.notebook (and boatload.base.results) do; no notebook may do it itself
PASTED_DEFS = {"find_root", "find_data", "resolve"}
PASTED_CALLS = {("os", "replace"), ("os", "rename")}


@pytest.fixture
def no_root_env(monkeypatch):
    monkeypatch.delenv("BOATLOAD_ROOT", raising=False)


def a_repo(base: Path) -> Path:
    """A clone as far as finding the root goes: pyproject.toml, notebooks/, data/."""
    (base / "notebooks").mkdir(parents=True)
    (base / "data" / "runs").mkdir(parents=True)
    (base / "data" / "reference").mkdir(parents=True)
    (base / "pyproject.toml").write_text('[project]\nname = "boatload"\n')
    (base / "data" / "reference" / "forest.csv").write_text("method,files_per_s\npython,1\n")
    return base


def a_table(root: Path, host: str, study: str = "forest") -> Path:
    path = root / "data" / "runs" / host / f"{study}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"host": [host]}).write_parquet(path)
    return path


def test_repo_root_from_notebooks_of_a_clone(tmp_path, monkeypatch, no_root_env):
    root = a_repo(tmp_path / "clone")
    monkeypatch.chdir(root / "notebooks")
    assert repo_root() == root.resolve()


def test_repo_root_from_elsewhere_is_the_clone_of_the_package(tmp_path, monkeypatch, no_root_env):
    if not Path(boatload.__file__).resolve().is_relative_to(REPO):
        pytest.skip("boatload is not imported from this clone (not an editable install)")
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above /tmp/...
    assert repo_root() == REPO


def test_repo_root_env_wins(tmp_path, monkeypatch):
    root = a_repo(tmp_path / "clone")
    monkeypatch.setenv("BOATLOAD_ROOT", str(root))
    monkeypatch.chdir(REPO / "notebooks")
    assert repo_root() == root.resolve()


def test_setup_resolves_relative_paths_against_the_root(tmp_path, monkeypatch, no_root_env, capsys):
    root = a_repo(tmp_path / "clone").resolve()
    table = a_table(root, "somehost")
    monkeypatch.chdir(root / "notebooks")  # where JupyterLab starts a kernel
    paths = notebook.setup("forest", data="data/runs/somehost/forest.parquet",
                           reference="data/reference/forest.csv", out_dir="results")
    assert paths.root == root
    assert paths.data == table
    assert paths.reference == root / "data" / "reference" / "forest.csv"
    assert paths.out == root / "results"
    assert (root / "results" / "tables").is_dir() and (root / "results" / "figures").is_dir()
    assert not (root / "notebooks" / "results").exists()
    assert paths.table() == root / "results" / "tables" / "forest.csv"
    assert paths.table("pairs") == root / "results" / "tables" / "forest-pairs.csv"
    assert paths.summary == root / "results" / "tables" / "forest-summary.json"
    assert capsys.readouterr().out.splitlines() == [
        f"root {root}", f"data {table}", f"reference {paths.reference}", f"out {paths.out}",
    ]


def test_setup_from_outside_any_clone(tmp_path, monkeypatch, no_root_env, capsys):
    """From /tmp the root is the package's clone; an absolute out_dir stays where it is."""
    if not Path(boatload.__file__).resolve().is_relative_to(REPO):
        pytest.skip("boatload is not imported from this clone (not an editable install)")
    monkeypatch.chdir(tmp_path)
    paths = notebook.setup("forest", data="data/runs/somehost/forest.parquet",
                           reference="data/reference/forest.csv", out_dir=str(tmp_path / "out"))
    assert paths.root == REPO
    assert paths.data == REPO / "data" / "runs" / "somehost" / "forest.parquet"  # no HOST: as given
    assert paths.reference == REPO / "data" / "reference" / "forest.csv" and paths.reference.is_file()
    assert paths.out == tmp_path / "out" and (tmp_path / "out" / "tables").is_dir()


def test_host_is_this_machine_when_it_has_a_table(tmp_path, monkeypatch, no_root_env):
    root = a_repo(tmp_path / "clone").resolve()
    mine = a_table(root, hostname())
    a_table(root, "otherhost")
    monkeypatch.chdir(root)
    assert notebook.find_data("forest", "data/runs/HOST/forest.parquet") == mine


def test_host_is_the_only_host_with_a_table(tmp_path, monkeypatch, no_root_env):
    root = a_repo(tmp_path / "clone").resolve()
    other = a_table(root, "otherhost")
    a_table(root, "thirdhost", study="journal")  # another study's table does not count
    monkeypatch.chdir(root / "notebooks")
    paths = notebook.setup("forest", data="data/runs/HOST/forest.parquet",
                           reference="data/reference/forest.csv", out_dir="results")
    assert paths.data == other


@pytest.mark.parametrize("hosts", [["hosta", "hostb"], []], ids=["two hosts", "none"])
def test_host_ambiguous_or_missing_asks_for_p_data(tmp_path, monkeypatch, no_root_env, hosts):
    root = a_repo(tmp_path / "clone").resolve()
    for host in hosts:
        a_table(root, host)
    monkeypatch.chdir(root)
    with pytest.raises(FileNotFoundError, match=r"pass -p data data/runs/<host>/forest\.parquet") as err:
        notebook.find_data("forest", "data/runs/HOST/forest.parquet")
    for host in hosts:
        assert f"data/runs/{host}/forest.parquet" in str(err.value)


def test_host_only_as_a_whole_component(tmp_path, monkeypatch, no_root_env):
    root = a_repo(tmp_path / "clone").resolve()
    monkeypatch.chdir(root)
    assert notebook.find_data("forest", "data/GHOSTS/forest.parquet") == root / "data" / "GHOSTS" / "forest.parquet"


def test_write_table_and_summary_are_atomic(tmp_path):
    tables = tmp_path / "results" / "tables"
    frame = pl.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert notebook.write_table(frame, tables / "t.csv") == tables / "t.csv"
    assert pl.read_csv(tables / "t.csv").equals(frame)
    notebook.write_summary({"n": 1, "s": "÷"}, tables / "t-summary.json")
    assert json.loads((tables / "t-summary.json").read_text(encoding="utf-8")) == {"n": 1, "s": "÷"}
    # NaN is no JSON: refused, and the summary already there is left whole
    with pytest.raises(ValueError):
        notebook.write_summary({"n": math.nan}, tables / "t-summary.json")
    assert json.loads((tables / "t-summary.json").read_text()) == {"n": 1, "s": "÷"}
    assert sorted(p.name for p in tables.iterdir()) == ["t-summary.json", "t.csv"]
    assert (tables / "t.csv").stat().st_mode & 0o777 == 0o644


def pasted(nb_path: Path) -> list[str]:
    """What a notebook does itself that boatload.analysis.notebook does: defining the
    root/data finders, replacing files by hand."""
    found = []
    cells = json.loads(nb_path.read_text())["cells"]
    for i, cell in enumerate(c for c in cells if c["cell_type"] == "code"):
        tree = ast.parse("".join(cell["source"]))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in PASTED_DEFS:
                found.append(f"code cell {i} defines {node.name}()")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in PASTED_CALLS:
                    found.append(f"code cell {i} calls {owner.id}.{node.func.attr}()")
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                for alias in node.names:
                    if ("os", alias.name) in PASTED_CALLS:
                        found.append(f"code cell {i} imports os.{alias.name}")
    return found


def test_there_are_notebooks_to_scan():
    assert {p.stem for p in NOTEBOOKS} >= {"degradation", "journal", "forest", "filecount", "tmpfs"}


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_notebook_pastes_what_boatload_notebook_does(nb_path):
    assert pasted(nb_path) == [], (
        f"{nb_path.name}: use boatload.analysis.notebook.setup(), write_table() and write_summary() instead"
    )
    assert "notebook.setup(" in nb_path.read_text()


def test_the_scan_sees_a_pasted_copy(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": [
        "import os\n", "def find_root():\n", "    pass\n", "os.replace('a', 'b')\n"]}]}
    path = tmp_path / "pasted.ipynb"
    path.write_text(json.dumps(nb))
    assert pasted(path) == ["code cell 0 defines find_root()", "code cell 0 calls os.replace()"]
