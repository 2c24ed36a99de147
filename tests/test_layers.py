"""The layers of boatload, read from its source with `ast`: every module sits
in one layer package, imports (module level or inside a function) only from
its own layer and those below, and no import closes a cycle; each layer's
docstring names the layers it may import as the table below does; no Python
module of the repository is over 600 lines."""

import ast
import shutil
from pathlib import Path

from test_imports import SRC, cycles, graph, named

ROOT = SRC.parents[1]
MAX_LINES = 600

# The one table: bottom first. A module's layer is the package right under
# boatload that holds it (boatload.<layer>.<module>); boatload itself is base.
LAYERS = ("base", "provision", "measure", "studies", "analysis", "publish", "workflow")


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) == 1:
        return "base"  # the package's own __init__: its version, imported by base.system
    return parts[1] if parts[1] in LAYERS else None


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import (importer, imported) from a lower layer into a higher one."""
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    return sorted((m, n) for m, targets in g.items() for n in targets
                  if layer_of(m) in rank and layer_of(n) in rank and rank[layer_of(n)] > rank[layer_of(m)])


def may_import(init: Path) -> set[str]:
    """The layers a layer package's docstring says it may import ("It may import: boatload.x, boatload.y.")."""
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    lines = [line for line in doc.splitlines() if line.startswith("It may import:")]
    assert len(lines) == 1, f"{init}: no one line 'It may import: ...' in its docstring"
    return {word.split(".")[1].rstrip(".,") for word in lines[0].split() if word.startswith("boatload.")}


def test_the_checker_finds_an_upward_import_in_a_planted_graph():
    g = {"boatload.base.errors": {"boatload.workflow.cli"}, "boatload.workflow.cli": {"boatload.base.errors"},
         "boatload.measure.runner": {"boatload.provision.targets", "boatload.measure.worker"},
         "boatload.measure.worker": set(), "boatload.provision.targets": set()}
    assert upward(g) == [("boatload.base.errors", "boatload.workflow.cli")]
    assert cycles(g) == [["boatload.base.errors", "boatload.workflow.cli", "boatload.base.errors"]]


def test_a_planted_upward_import_in_a_copy_of_the_tree_is_found(tmp_path):
    """The tree copied, one import planted inside a function of a base module:
    the checker names it, and the cycle it closes (the config imports the errors)."""
    copy = tmp_path / "boatload"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert not upward(graph(copy)) and not cycles(graph(copy))
    errors = copy / "base" / "errors.py"
    errors.write_text(errors.read_text() + "\n\ndef planted():\n    from boatload.studies import config\n"
                      "    return config\n")
    g = graph(copy)
    assert upward(g) == [("boatload.base.errors", "boatload.studies"), ("boatload.base.errors", "boatload.studies.config")]
    assert {"boatload.base.errors", "boatload.studies.config"} in [set(c) for c in cycles(g)], cycles(g)


def test_every_module_sits_in_a_layer():
    unplaced = sorted(m for m in graph() if layer_of(m) is None)
    assert not unplaced, f"modules outside the layer packages {LAYERS}: {unplaced}"
    assert {layer_of(m) for m in graph()} == set(LAYERS)


def test_no_module_imports_from_a_layer_above_and_none_closes_a_cycle():
    g = graph()
    wrong = upward(g)
    assert not wrong, "upward imports: " + "; ".join(f"{m} ({layer_of(m)}) -> {n} ({layer_of(n)})" for m, n in wrong)
    found = cycles(g)
    assert not found, f"import cycles: {named(found)}"


def test_each_layer_says_what_it_may_import_as_the_table_does():
    for i, layer in enumerate(LAYERS):
        assert may_import(SRC / layer / "__init__.py") == set(LAYERS[:i]), layer


def test_no_python_module_is_over_600_lines():
    files = [p for d in ("src", "tests", "bench", "scripts") for p in (ROOT / d).rglob("*.py")
             if "__pycache__" not in p.parts]
    assert SRC / "workflow" / "cli.py" in files
    long = {str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"
