"""The Nix path (flake.nix, flake.lock, nix/) stays valid and in step with the uv path.

No network and no nixpkgs are needed: the flake is parsed with
`nix-instantiate --parse` (Debian's nix-bin), the lock is read as JSON, and the
rest is read from the flake's text. What is checked:

1. flake.nix and every nix/*.nix parse.
2. flake.lock is a version-7 lock whose nodes pin every input of flake.nix
   (rev + narHash) and whose root and `follows` structure match flake.nix.
3. No drift: every `nix` attribute of boatload.base.tools.TOOLS is in the flake's
   system tool list, that list reaches the apps and the dev shell, and the
   Python environment is built from uv.lock by uv2nix (no hand-written list).
4. The flake's Python (pkgs.python3XY) satisfies pyproject's requires-python.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from boatload.base.tools import TOOLS

ROOT = Path(__file__).resolve().parents[1]
FLAKE = ROOT / "flake.nix"
LOCK = ROOT / "flake.lock"
NIX_DIR = ROOT / "nix"

NIX_INSTANTIATE = shutil.which("nix-instantiate")
needs_nix = pytest.mark.skipif(
    NIX_INSTANTIATE is None,
    reason="nix-instantiate not found (Debian package nix-bin; .ci/run installs it)",
)


# --- reading flake.nix --------------------------------------------------------


def strip_comments(text: str) -> str:
    """Drop whole-line `#` comments (the flake only uses those), keep the code."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def flake_text() -> str:
    return strip_comments(FLAKE.read_text())


def block_span(text: str, opener: str) -> tuple[str, int]:
    """The body of the first `opener` bracket (`name = {` or `name = [`), brackets matched,
    and the index just past its closing bracket."""
    start = text.find(opener)
    assert start >= 0, f"{opener!r} not found in flake.nix"
    open_ch = opener.rstrip()[-1]
    close_ch = {"{": "}", "[": "]"}[open_ch]
    body_start = start + len(opener.rstrip())
    depth = 1
    in_string = False
    for i in range(body_start, len(text)):
        ch = text[i]
        if ch == '"' and text[i - 1] != "\\":
            in_string = not in_string
        elif not in_string:
            if ch == open_ch:
                depth += 1
            elif ch == close_ch:
                depth -= 1
                if depth == 0:
                    return text[body_start:i], i + 1
    raise AssertionError(f"unbalanced {opener!r} in flake.nix")


def block(text: str, opener: str) -> str:
    return block_span(text, opener)[0]


def parse_inputs(text: str) -> dict[str, dict]:
    """flake.nix `inputs = { ... };` as {name: {"url": ..., "follows": {input: target}}}.

    Handles the two forms the flake uses: `name.url = "...";` and
    `name = { url = "..."; inputs.X.follows = "Y"; };`.
    """
    body = block(text, "inputs = {")
    inputs: dict[str, dict] = {}
    pos = 0
    entry = re.compile(r'\s*([A-Za-z_][\w-]*)(\.url\s*=\s*"([^"]*)"\s*;|\s*=\s*\{)', re.S)
    while True:
        m = entry.match(body, pos)
        if not m:
            break
        name = m.group(1)
        if m.group(3) is not None:
            inputs[name] = {"url": m.group(3), "follows": {}}
            pos = m.end()
            continue
        inner, end = block_span(body[m.start() :], f"{name} = {{")
        url = re.search(r'\burl\s*=\s*"([^"]*)"', inner)
        assert url, f"input {name} has no url"
        follows = dict(re.findall(r'inputs\.([\w-]+)\.follows\s*=\s*"([^"]*)"', inner))
        inputs[name] = {"url": url.group(1), "follows": follows}
        semicolon = re.compile(r"\s*;").match(body, m.start() + end)
        assert semicolon, f"input {name}: missing ';' after its attribute set"
        pos = semicolon.end()
    assert not body[pos:].strip(), f"unparsed text in inputs: {body[pos:][:80]!r}"
    return inputs


def github_original(url: str) -> dict[str, str]:
    """`github:owner/repo[/ref]` as a flake.lock `original` entry."""
    m = re.fullmatch(r"github:([^/]+)/([^/?]+)(?:/([^?]+))?", url)
    assert m, f"not a github: flake URL: {url}"
    original = {"owner": m.group(1), "repo": m.group(2), "type": "github"}
    if m.group(3):
        original["ref"] = m.group(3)
    return original


def system_tools(text: str) -> list[str]:
    """The nixpkgs attribute names in the flake's `systemTools = [ ... ];` list."""
    body = block(text, "systemTools = [")
    items = body.split()
    assert items, "systemTools is empty"
    for item in items:
        assert item.startswith("pkgs."), f"systemTools entry {item!r} is not a plain pkgs.<attr>"
    return [item.removeprefix("pkgs.") for item in items]


# --- 1. the Nix files parse ---------------------------------------------------


def nix_files() -> list[Path]:
    return [FLAKE, *sorted(NIX_DIR.glob("**/*.nix"))]


@needs_nix
@pytest.mark.parametrize("path", nix_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_nix_file_parses(path: Path) -> None:
    run = subprocess.run([NIX_INSTANTIATE, "--parse", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, f"{path.relative_to(ROOT)} does not parse:\n{run.stderr}"


@needs_nix
def test_parse_check_catches_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.nix"
    broken.write_text("{ inputs = { nixpkgs.url = ; }; }\n")
    run = subprocess.run([NIX_INSTANTIATE, "--parse", str(broken)], capture_output=True, text=True)
    assert run.returncode != 0


@needs_nix
def test_input_parser_agrees_with_nix() -> None:
    """The text parser used below reads the same inputs Nix itself evaluates."""
    run = subprocess.run(
        [NIX_INSTANTIATE, "--eval", "--strict", "--json", "-E", f"(import {FLAKE}).inputs"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    evaluated = json.loads(run.stdout)
    by_nix = {
        name: {
            "url": spec["url"],
            "follows": {k: v["follows"] for k, v in spec.get("inputs", {}).items()},
        }
        for name, spec in evaluated.items()
    }
    assert parse_inputs(flake_text()) == by_nix


# --- 2. flake.lock ------------------------------------------------------------


def lock() -> dict:
    return json.loads(LOCK.read_text())


def test_lock_is_version_7_with_a_root() -> None:
    data = lock()
    assert data["version"] == 7
    assert data["root"] in data["nodes"]


def test_lock_root_inputs_match_flake() -> None:
    data = lock()
    root = data["nodes"][data["root"]]
    assert set(root["inputs"]) == set(parse_inputs(flake_text()))


@pytest.mark.parametrize("name", sorted(parse_inputs(flake_text())))
def test_every_input_is_pinned(name: str) -> None:
    data = lock()
    spec = parse_inputs(flake_text())[name]
    node_name = data["nodes"][data["root"]]["inputs"][name]
    assert isinstance(node_name, str), f"root input {name} must be a node, not a follows"
    node = data["nodes"][node_name]
    locked = node["locked"]
    assert locked["type"] == "github"
    assert re.fullmatch(r"[0-9a-f]{40}", locked["rev"]), f"{name}: locked rev is not a full commit"
    assert re.fullmatch(r"sha256-[A-Za-z0-9+/]{43}=", locked["narHash"]), f"{name}: bad narHash"
    assert isinstance(locked["lastModified"], int)
    original = github_original(spec["url"])
    assert node["original"] == original, f"{name}: lock original differs from flake.nix url"
    assert (locked["owner"].lower(), locked["repo"]) == (original["owner"].lower(), original["repo"])
    # `inputs.X.follows = "Y"` in flake.nix is `"X": ["Y"]` in the lock.
    assert node.get("inputs", {}) == {k: [v] for k, v in spec["follows"].items()}


def test_nixpkgs_is_a_stable_branch() -> None:
    ref = github_original(parse_inputs(flake_text())["nixpkgs"]["url"]).get("ref", "")
    assert re.fullmatch(r"nixos-\d\d\.\d\d", ref), f"nixpkgs should follow a stable release branch, not {ref!r}"


# --- 3. no drift from tools.py or uv.lock -------------------------------------


def test_every_tool_in_tools_py_is_in_the_flake() -> None:
    in_flake = set(system_tools(flake_text()))
    missing = sorted({t.nix for t in TOOLS} - in_flake)
    assert not missing, f"in src/boatload/base/tools.py but not in flake.nix systemTools: {missing}"


def test_flake_has_no_tool_that_tools_py_lacks() -> None:
    extra = sorted(set(system_tools(flake_text())) - {t.nix for t in TOOLS})
    assert not extra, f"in flake.nix systemTools but not in src/boatload/base/tools.py: {extra}"


def test_system_tools_reach_the_apps_and_the_dev_shell() -> None:
    text = flake_text()
    runtime = block(text, "runtimeInputs = [")
    assert "venv" in runtime.split() and "worker" in runtime.split() and "pkgs.gnumake" in runtime.split()
    assert re.search(r"runtimeInputs = \[[^\]]*\]\s*\+\+\s*systemTools\s*;", text), "apps lack systemTools"
    shell = block(text, "devShells.default = pkgs.mkShell {")
    assert re.search(r"\]\s*\+\+\s*systemTools\s*;", shell), "dev shell lacks systemTools"
    for app in ("reproduce", "figure", "lab"):
        app_body = block(text, f"{app} = pkgs.writeShellApplication {{")
        assert "inherit runtimeInputs runtimeEnv;" in app_body, f"{app} does not get the tools and the worker"


def test_python_environment_comes_from_uv_lock() -> None:
    text = flake_text()
    assert (ROOT / "uv.lock").is_file()
    assert "builtins.pathExists ./uv.lock" in text
    assert re.search(r"uv2nix\.lib\.workspace\.loadWorkspace\s*\{\s*workspaceRoot\s*=\s*\./\.\s*;\s*\}", text)
    assert 'workspace.mkPyprojectOverlay { sourcePreference = "wheel"; }' in text
    assert 'pythonSet.mkVirtualEnv "boatload-env" workspace.deps.default' in text
    assert "pyproject-build-systems.overlays." in text
    # No second, hand-written Python package list beside uv.lock.
    for forbidden in ("withPackages", "python3Packages", "python311Packages", "buildPythonPackage"):
        assert forbidden not in text, f"flake.nix uses {forbidden}: the environment must come from uv.lock"


def test_reproduce_runs_what_make_reproduce_runs() -> None:
    """Both front doors run the same driver (preflight, lock, progress, cleanup)."""
    app = block(flake_text(), "reproduce = pkgs.writeShellApplication {")
    assert 'exec boatload reproduce "$@"' in app
    recipe = re.search(r"^reproduce:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert recipe.startswith("boatload reproduce ")
    assert re.search(r"BOATLOAD_WORKER\s*=\s*lib\.getExe worker", flake_text())


def test_worker_builds_with_the_makefile_and_runs_its_tests() -> None:
    worker = strip_comments((NIX_DIR / "worker.nix").read_text())
    assert "make -C native\n" in worker
    assert "doCheck = true;" in worker
    assert "make -C native test" in worker
    assert 'native/build/boatload-worker "$out/bin/boatload-worker"' in worker
    assert "pkgs.callPackage ./nix/worker.nix" in flake_text()


def test_outputs_cover_both_linux_systems() -> None:
    systems = re.findall(r'"([\w]+-linux)"', block(flake_text(), "systems = ["))
    assert sorted(systems) == ["aarch64-linux", "x86_64-linux"]


# --- 4. Python version --------------------------------------------------------


def test_flake_python_matches_requires_python() -> None:
    pythons = set(re.findall(r"\bpkgs\.python3(\d+)\b", flake_text()))
    assert len(pythons) == 1, f"flake.nix should use exactly one pkgs.python3XY, found {sorted(pythons)}"
    minor = int(pythons.pop())
    spec = SpecifierSet(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"])
    lock_spec = SpecifierSet(tomllib.loads((ROOT / "uv.lock").read_text())["requires-python"])
    for patch in (0, 99):
        version = Version(f"3.{minor}.{patch}")
        assert version in spec, f"flake python 3.{minor} is outside requires-python {spec}"
        assert version in lock_spec, f"flake python 3.{minor} is outside uv.lock's requires-python {lock_spec}"
