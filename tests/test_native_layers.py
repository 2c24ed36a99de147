"""No circle between the native C files: the call graph between the files of
native/src/ and native/devmodel/, read from `nm` of their object files (a file
uses another when it leaves undefined a symbol the other defines), has no
cycle. Checked on the tree and on a planted pair of files that call each
other."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "native"
# Each source folder and the folder native/Makefile compiles it into.
OBJECT_DIRS = {"src": "build/obj", "devmodel": "build/dm"}


def symbols(obj: Path) -> tuple[set[str], set[str]]:
    """The global symbols obj defines and those it leaves undefined."""
    out = subprocess.run(["nm", "-g", str(obj)], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2])
    return defined, undefined


def uses(objects: dict[str, Path]) -> dict[str, set[str]]:
    """File name -> the files whose symbols it uses (itself excluded)."""
    table = {name: symbols(obj) for name, obj in objects.items()}
    definer = {}
    for name, (defined, _) in table.items():
        for sym in defined:
            definer.setdefault(sym, set()).add(name)
    return {
        name: {other for sym in undefined for other in definer.get(sym, ()) if other != name}
        for name, (_, undefined) in table.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of graph as [a, b, ..., a], or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def tree_objects() -> dict[str, Path]:
    """Every native/src and native/devmodel C file's object, built by native/Makefile."""
    objects = {
        f"{folder}/{c.name}": NATIVE / outdir / c.with_suffix(".o").name
        for folder, outdir in OBJECT_DIRS.items()
        for c in sorted((NATIVE / folder).glob("*.c"))
    }
    targets = [str(obj.relative_to(NATIVE)) for obj in objects.values()]
    subprocess.run(["make", "-C", str(NATIVE), *targets], check=True, capture_output=True)
    return objects


def test_native_files_call_each_other_in_no_circle():
    objects = tree_objects()
    graph = uses(objects)
    # The graph is real: the worker's main uses the workloads, the filter the model.
    assert "src/meta.c" in graph["src/main.c"]
    assert "devmodel/model.c" in graph["devmodel/filter.c"]
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_a_planted_circle_is_found(tmp_path):
    (tmp_path / "ping.c").write_text("int pong(int n);\nint ping(int n) { return n ? pong(n - 1) : 0; }\n")
    (tmp_path / "pong.c").write_text("int ping(int n);\nint pong(int n) { return n ? ping(n - 1) : 1; }\n")
    (tmp_path / "base.c").write_text("int base(void) { return 0; }\n")
    objects = {}
    for name in ("ping", "pong", "base"):
        subprocess.run(["cc", "-c", "-o", f"{name}.o", f"{name}.c"], cwd=tmp_path, check=True)
        objects[f"{name}.c"] = tmp_path / f"{name}.o"
    cycle = find_cycle(uses(objects))
    assert cycle is not None and set(cycle) == {"ping.c", "pong.c"}
    # Together with the tree's own files the circle is still found.
    both = {**tree_objects(), **objects}
    assert set(find_cycle(uses(both)) or []) == {"ping.c", "pong.c"}


@pytest.mark.parametrize("pair", [("src/meta.c", "src/meta_phases.c"), ("devmodel/model.c", "devmodel/params.c")])
def test_the_split_pairs_share_a_file_that_uses_neither(pair):
    graph = uses(tree_objects())
    a, b = pair
    assert not (b in graph[a] and a in graph[b])
    shared = {"src/meta.c": "src/meta_order.c", "devmodel/model.c": "devmodel/seek_fit.c"}[a]
    assert shared in graph[a] | graph[b]
    assert not graph[shared] & {a, b}
