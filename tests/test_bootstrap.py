"""scripts/bootstrap.sh: what it finds missing and what it says to do about it.

The root-on-Debian branch (apt-get for real) runs in tests/test_fresh_machine.py,
in a clean Debian root; here the other branches, as a real unprivileged user
with a PATH that lacks the studies' tools."""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from boatload.base.tools import TOOLS
from conftest import ROOT

BOOTSTRAP = ROOT / "scripts" / "bootstrap.sh"
# What the script itself runs, and the essentials it checks for.
BASICS = ["sh", "sed", "id", "cat", "rm", "dirname", "mktemp", "python3", "cc", "make"]


def table_as_the_script_reads_it() -> list[tuple[str, str]]:
    out = subprocess.run(["sed", "-n", r's/^ *Tool("\([^"]*\)", "\([^"]*\)".*/\1 \2/p', "src/boatload/base/tools.py"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [tuple(line.split()) for line in out.splitlines()]


def test_the_script_reads_the_whole_tools_table():
    assert table_as_the_script_reads_it() == [(t.command, t.debian) for t in TOOLS]


@pytest.fixture
def bare_path() -> Path:
    """A PATH with only the basics, the system's python3 (with pip) among them, that
    another user can reach (pytest's own temporary directories are private to root)."""
    top = Path(tempfile.mkdtemp(prefix="boatload-bootstrap-"))
    top.chmod(0o755)
    bin_dir = top / "bin"
    bin_dir.mkdir()
    for name in BASICS:
        found = shutil.which(name, path="/usr/bin:/bin")
        if found is None:
            shutil.rmtree(top)
            pytest.skip(f"no {name} in /usr/bin or /bin that another user could run")
        (bin_dir / name).symlink_to(found)
    # The script and the table it reads, where that user can read them (a clone may be under /root).
    for part in ("scripts/bootstrap.sh", "src/boatload/base/tools.py"):
        (top / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / part, top / part)
    for d in (top / "scripts", top / "src", top / "src" / "boatload", top / "src" / "boatload" / "base"):
        d.chmod(0o755)
    yield bin_dir
    shutil.rmtree(top)


def run_as_nobody(path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    script = path.parent / "scripts" / "bootstrap.sh"
    return subprocess.run(
        [shutil.which("setpriv"), "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", str(script), *args],
        capture_output=True, text=True, env={"PATH": str(path), **(env or {})},
    )


def system_pip() -> bool:
    """Whether the system's python3 has pip (else the script names pip as missing, and stops)."""
    python3 = shutil.which("python3", path="/usr/bin:/bin")
    return subprocess.run([python3, "-m", "pip", "--version"], capture_output=True).returncode == 0


def missing_line(stderr: str) -> tuple[list[str], str]:
    match = re.search(r"^boatload: missing tools: (.*?); to install them: (.*)$", stderr, re.M)
    assert match, stderr
    return match.group(1).split(), match.group(2)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_not_root_on_debian_lists_every_missing_tool_and_the_apt_command(bare_path):
    out = run_as_nobody(bare_path, "test")
    # With the essentials there, the preflight says what else matters.
    assert out.returncode == (0 if system_pip() else 1), out.stderr
    commands, how = missing_line(out.stderr)
    assert len(out.stderr.strip().splitlines()) == 1
    # Every tool of the table that is not in sbin (the script looks on PATH only), and the tests' tools.
    for tool in TOOLS:
        if shutil.which(tool.command, path=str(bare_path)) is None:
            assert tool.command in commands
    assert {"pdftotext", "chromium", "nix-instantiate", "debootstrap", "git", "sinfo", "munged"} <= set(commands)
    packages = how.removeprefix("sudo apt-get install ").split()
    assert how.startswith("sudo apt-get install ")
    assert {"e2fsprogs", "xfsprogs", "btrfs-progs", "fio", "bonnie++", "poppler-utils", "chromium", "nix-bin",
            "slurmctld", "slurmd", "slurm-client", "munge"} <= set(packages)
    assert len(packages) == len(set(packages))


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
@pytest.mark.parametrize("os_id, command", [("fedora", "sudo dnf install"), ("arch", "sudo pacman -S"),
                                            ("plan9", "install them with your package manager")])
def test_other_distributions_get_their_own_command(bare_path, os_id, command):
    release = bare_path.parent / "os-release"
    release.write_text(f"ID={os_id}\n")
    release.chmod(0o644)
    out = run_as_nobody(bare_path, env={"BOATLOAD_OS_RELEASE": str(release)})
    assert out.returncode == (0 if system_pip() else 1), out.stderr
    _, how = missing_line(out.stderr)
    assert how.startswith(command)
    assert "build-essential" not in how.split()[:-1] or os_id == "plan9"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_without_a_compiler_nothing_can_run(bare_path):
    (bare_path / "cc").unlink()
    out = run_as_nobody(bare_path)
    assert out.returncode == 1
    commands, how = missing_line(out.stderr)
    assert "cc" in commands and "build-essential" in how.split()


def test_nothing_missing_says_nothing():
    out = subprocess.run(["sh", str(BOOTSTRAP)], capture_output=True, text=True)
    if "missing tools" in out.stderr or "installing" in out.stdout:
        pytest.skip("this machine lacks some tools")  # then the other tests cover it
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
