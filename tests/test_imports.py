"""The shape of boatload, read from its source with `ast`: no import cycle
(imports inside functions and relative imports included), no private name
used across modules, the teardown layers in order, and no module over 600
lines."""

import ast
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "boatload"
MAX_LINES = 600


def module_name(path: Path, root: Path | None = None) -> str:
    parts = path.relative_to((root or SRC).parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_nodes(path: Path, root: Path):
    """(node, names it imports, fully qualified) for every import statement in `path`, at any depth."""
    me = module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield node, [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x, from ..y import z
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            yield node, [base] + [f"{base}.{a.name}" for a in node.names]


def imports(path: Path, modules: set[str], root: Path | None = None) -> set[str]:
    """The modules of the package that `path` imports: `import boatload.x`,
    `from boatload.x import y`, `from boatload import x` (an edge to x and to
    the package), `from . import x`, at module level or inside a function."""
    out = set()
    for _node, names in _import_nodes(path, root):
        out |= {n for n in names if n in modules}
    return out - {module_name(path, root)}


def graph(root: Path | None = None) -> dict[str, set[str]]:
    root = root or SRC
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    return {m: imports(p, set(files), root) for m, p in files.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles, each as the path that closes it ([a, b, a]); one per back edge of a depth-first search."""
    found, state = [], {}

    def visit(m, stack):
        state[m] = "open"
        for n in sorted(g.get(m, ())):
            if state.get(n) == "open":
                found.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n, stack + [n])
        state[m] = "done"

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    return found


def reachable(g: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for n in g.get(todo.pop(), ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def named(found: list[list[str]]) -> str:
    return "; ".join(" -> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": {"b"}}) == [["b", "b"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_sees_lazy_and_relative_imports(tmp_path):
    """A cycle closed only by an import inside a function, spelled relatively, is still one."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from pkg import b\n",
        "b.py": "def f():\n    from .sub import c\n    return c\n",
        "sub/__init__.py": "",
        "sub/c.py": "import os\n\nclass C:\n    def m(self):\n        from .. import a\n",
        "d.py": "from pkg.sub.c import C  # not part of the cycle\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    g = graph(pkg)
    assert g["pkg.a"] == {"pkg", "pkg.b"}
    assert g["pkg.b"] == {"pkg.sub", "pkg.sub.c"}
    assert g["pkg.sub.c"] == {"pkg", "pkg.a"}
    assert cycles(g) == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]
    assert named(cycles(g)) == "pkg.a -> pkg.b -> pkg.sub.c -> pkg.a"


def test_no_import_cycle_inside_boatload():
    found = cycles(graph())
    assert not found, f"import cycles in src/boatload: {named(found)}"


def test_teardown_layers_import_downwards_only():
    """cleanup is the one module that knows both targets and memlimit (for
    killed runs); neither of those, nor what they build on, reaches back."""
    g = graph()
    assert {"boatload.provision.targets", "boatload.provision.memlimit"} <= g["boatload.provision.cleanup"]
    below = {
        "boatload.provision.targets": {"boatload.provision.memlimit", "boatload.provision.cleanup"},
        "boatload.provision.memlimit": {"boatload.provision.targets", "boatload.provision.cleanup"},
        "boatload.provision.cgroups": {"boatload.provision.targets", "boatload.provision.memlimit", "boatload.provision.swapfiles", "boatload.provision.cleanup"},
        "boatload.provision.swapfiles": {"boatload.provision.targets", "boatload.provision.memlimit", "boatload.provision.cleanup"},
        "boatload.provision.hostops": {"boatload.provision.targets", "boatload.provision.memlimit", "boatload.provision.cgroups", "boatload.provision.swapfiles",
                             "boatload.provision.cleanup"},
        "boatload.base.targetspec": {m for m in g if m != "boatload.base.targetspec"},
    }
    wrong = {m: sorted(reachable(g, m) & never) for m, never in below.items() if reachable(g, m) & never}
    assert not wrong, wrong


def test_no_private_name_is_used_across_modules():
    """`from boatload.x import _y` and `x._y` on an imported boatload module:
    a name another module needs is public where it lives."""
    files = {module_name(p): p for p in SRC.rglob("*.py")}
    wrong = []
    for m, path in files.items():
        aliases = set()
        for node, names in _import_nodes(path, SRC):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__") and names[0].startswith("boatload"):
                        wrong.append(f"{m}: from {names[0]} import {a.name}")
                    if f"{names[0]}.{a.name}" in files:
                        aliases.add(a.asname or a.name)
            else:
                aliases |= {a.asname for a in node.names if a.asname and a.name in files}
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                wrong.append(f"{m}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not wrong, wrong


def test_no_module_is_over_600_lines():
    sizes = {module_name(p): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    assert "boatload.provision.targets" in sizes
    long = {m: n for m, n in sizes.items() if n > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"


def test_a_measuring_process_does_not_import_polars():
    """`boatload run` imports the CLI, every study record and the runner, and builds
    no table: polars (the largest part of its start) stays out; a study's column
    types become polars dtypes only where a table is built."""
    import subprocess
    import sys

    code = ("import sys, boatload.workflow.cli, boatload.measure.runner\n"
            "from boatload.studies import names, study\n"
            "[study(n) for n in names()]\n"
            "print('polars' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

    import polars as pl
    import pytest

    from boatload.base import dtypes
    from boatload.studies import study

    schema = study("filecount").table_schema
    assert schema["host"] == pl.String and schema["interval_iops"] == pl.List(pl.Float64)
    with pytest.raises(TypeError, match="boatload.base.dtypes"):
        dtypes.to_polars(pl.Int64)
