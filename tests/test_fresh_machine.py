"""`make reproduce CONFIG=config/ci.yaml` on a clean Debian 12 machine (in
CI with STUDIES=tmpfs; BOATLOAD_FULL=1: every study).

scripts/fresh-machine.sh makes a real clean root with debootstrap (minbase
plus make, nothing else), clones the committed HEAD of this repository into
it and runs the command there in a private mount namespace. Everything else
(python3, the C compiler, the file-system tools, uv, the Python environment)
must come from the repository's own bootstrap, and the run must end with the
paper and leave nothing of its own on the host: no loop device on an image in
its root, no swap file there, no mount under it, and no cgroup of those its
ledger records (other tests' runs beside it make and leave their own).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from boatload.provision.ledger import Ledger
from conftest import FULL, PAIRED_INTERFERENCE, ROOT

SCRIPT = ROOT / "scripts" / "fresh-machine.sh"
# CI: the study that needs loop images, a memory cgroup and a swap file (the
# workflow of all five is the e2e test's); BOATLOAD_FULL=1: all of config/ci.yaml.
STUDIES = ("degradation", "journal", "forest", "filecount", "tmpfs") if FULL else ("tmpfs",)
# Beside another test (tests/conftest.py's PAIRED_FILES) a run it disturbs is kept and marked, not measured
# again: the clone is the committed HEAD, so its config with that setting (config/ci.yaml and this line) is
# written there first, in the clone's git-ignored results/.
CONFIG = "results/fresh-machine.yaml"
PAIRED_LINE = f"interference: {json.dumps(PAIRED_INTERFERENCE)}"
COMMAND = ["sh", "-c", f"mkdir -p results && {{ cat config/ci.yaml; printf '\\n%s\\n' '{PAIRED_LINE}'; }} > {CONFIG} "
           f'&& exec make reproduce CONFIG={CONFIG} "$@"', "sh",
           *([] if FULL else [f"STUDIES={' '.join(STUDIES)}"])]
# The root, the packages bootstrap installs, the Python environment, the
# images (one at a time), a swap file: about 2.5 GB at the end of a run.
NEEDS_BYTES = 5 << 30
TIMEOUT_S = 15 * 60
BOOTSTRAP_LINE = "boatload: installing the missing tools with apt-get:"
# Not in a Debian minbase root, and needed by make reproduce: bootstrap must name them.
MUST_INSTALL = {"python3", "build-essential", "xfsprogs", "btrfs-progs", "fio"}


def _base() -> Path | None:
    """/var/tmp (a disk, unlike /tmp on many machines), or /tmp if only it has room."""
    for base in (Path("/var/tmp"), Path(tempfile.gettempdir())):
        if base.is_dir() and shutil.disk_usage(base).free >= NEEDS_BYTES:
            return base
    return None


def _missing_tools() -> list[str]:
    return [t for t in ("debootstrap", "unshare", "chroot", "git", "losetup", "pdftotext", "pdfinfo")
            if shutil.which(t) is None]


pytestmark = [
    pytest.mark.slow,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: debootstrap, chroot, mounts and loop devices"),
    pytest.mark.skipif(bool(_missing_tools()),
                       reason=f"not installed on this host: {' '.join(_missing_tools())} "
                              "(Debian: debootstrap, util-linux, git, poppler-utils; make test's bootstrap installs them)"),
    pytest.mark.skipif(_base() is None,
                       reason=f"neither /var/tmp nor {tempfile.gettempdir()} has {NEEDS_BYTES >> 30} GiB free"),
]


# What a run could leave on the host, seen from the host.

def _loops() -> set[tuple[str, str]]:
    out = subprocess.run(["losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE"],
                         capture_output=True, text=True, check=True).stdout
    return {tuple((line.split(" ", 1) + [""])[:2]) for line in out.splitlines() if line.strip()}


def _swaps() -> set[str]:
    return {line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:] if line.strip()}


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path) + "/"
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if (p + "/").startswith(prefix)]


def _cgroups_made(root: Path) -> list[str]:
    """The cgroups the run in the root made: its scratch directory's ledger records each before making it
    (the path as the root sees it, /sys being the host's). Not every new boatload-* cgroup on the host: the
    runs of other tests beside this one make their own, and a killed one leaves its own for a while."""
    scratch = root / "boatload" / "results" / "scratch"
    if not (scratch / "ledger.jsonl").is_file():
        return []
    return sorted({r.path for r in Ledger(scratch).resources().values() if r.kind == "cgroup"})


def _ours(path: str, root: Path) -> bool:
    """Under the root: its images, its swap files, its private /dev/shm (the
    host sees that one's files as <root>/dev/shm/...)."""
    path = path.replace("\\x20", " ").replace("\\040", " ")
    return path.startswith(str(root) + "/")


def _remove_root(root: Path) -> None:
    """rm -rf the root, but never while anything is mounted under it (a bind of /dev, say)."""
    if not root.exists():
        return
    mounted = _mounts_under(root)
    assert not mounted, f"still mounted under {root}, not removing it: {mounted}"
    subprocess.run(["rm", "-rf", "--one-file-system", str(root)], check=True)


def _run(args: list[str], log: Path) -> tuple[int, str, dict[str, float]]:
    """Run the script, its output into `log` with the seconds since the start;
    also when each phase began (the lines that announce them)."""
    marks = {
        "bootstrap": lambda s: s.startswith(BOOTSTRAP_LINE),
        "uv sync": lambda s: "uv sync --frozen" in s,
        "worker": lambda s: "make[1]: Entering directory '/boatload/native'" in s or "make -C native" in s,
        "snakemake": lambda s: s.startswith("Building DAG of jobs"),
    }
    phases: dict[str, float] = {}
    lines: list[str] = []
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", start_new_session=True)
    timed_out = threading.Event()

    def stop() -> None:  # SIGTERM to the whole run: the script cleans up before it leaves
        timed_out.set()
        os.killpg(proc.pid, signal.SIGTERM)

    watchdog = threading.Timer(TIMEOUT_S, stop)
    watchdog.start()
    t0 = time.monotonic()
    try:
        with log.open("w") as f:
            for line in proc.stdout:
                t = time.monotonic() - t0
                line = line.rstrip("\n")
                lines.append(line)
                f.write(f"[{t:7.1f}] {line}\n")
                f.flush()
                for name, starts in marks.items():
                    if name not in phases and starts(line):
                        phases[name] = t
                if line.startswith("fresh-machine: debootstrap took"):
                    phases["debootstrap done"] = t
        try:
            rc = proc.wait(timeout=300 if timed_out.is_set() else None)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
    finally:
        watchdog.cancel()
    phases["end"] = time.monotonic() - t0
    if timed_out.is_set():
        lines.append(f"(the test stopped the run after {TIMEOUT_S} s)")
    return rc, "\n".join(lines), phases


def test_make_reproduce_on_a_fresh_debian_machine():
    base = Path(tempfile.mkdtemp(prefix="boatload-fresh-", dir=_base()))
    root = base / "root"
    log = base / "run.log"
    loops, swaps = _loops(), _swaps()
    passed = False
    try:
        rc, out, phases = _run([str(SCRIPT), str(root), "--", *COMMAND], log)
        spans = []
        for a, b in [("start", "debootstrap done"), ("debootstrap done", "bootstrap"), ("bootstrap", "uv sync"),
                     ("uv sync", "worker"), ("worker", "snakemake"), ("snakemake", "end")]:
            if b in phases and (a == "start" or a in phases):
                spans.append(f"{a} -> {b}: {phases[b] - phases.get(a, 0.0):.0f} s")
        print(f"fresh machine ({log}): " + "; ".join(spans) + f"; total {phases['end']:.0f} s")
        tail = "\n".join(out.splitlines()[-60:])

        # Nothing of the run is left on the host, whatever the result.
        left = [f"loop device {n} on {b}" for n, b in _loops() - loops if _ours(b, root)]
        left += [f"swap {s}" for s in _swaps() - swaps if _ours(s, root)]
        left += [f"mount {m}" for m in _mounts_under(root)]
        made = _cgroups_made(root)
        left += [f"cgroup {c}" for c in made if Path(c).exists()]
        assert left == [], f"left on the host: {left}\n{tail}"
        assert "fresh-machine: the command left" not in out, tail

        assert rc == 0, f"status {rc}; the last lines:\n{tail}"
        assert "debootstrap done" in phases, "the root was not made afresh"
        # the cgroup check above had something to look at: the tmpfs study's memory limit is a cgroup
        assert made, "the run's ledger records no cgroup"

        # bootstrap installed what the clean machine lacks, with one line saying what
        said = [line for line in out.splitlines() if line.startswith(BOOTSTRAP_LINE)]
        assert len(said) == 1, said or tail
        packages = set(said[0][len(BOOTSTRAP_LINE):].split())
        assert MUST_INSTALL <= packages, f"bootstrap did not install {sorted(MUST_INSTALL - packages)}: {said[0]}"
        clone = root / "boatload"
        for tool in ("python3", "cc", "mkfs.xfs", "mkfs.btrfs", "fio"):
            # (lexists: cc is a symlink to an absolute path, which means the root's, not the host's)
            assert any(os.path.lexists(root / d / tool) for d in ("usr/bin", "usr/sbin")), tool
        # the locked environment, synced in the clone, and the worker built there
        assert "uv sync --frozen" in out
        assert (clone / ".venv" / "bin" / "snakemake").exists()
        assert (clone / "native" / "build" / "boatload-worker").exists()

        # the paper: a real PDF of several pages about the studies
        pdf = clone / "results" / "paper" / "paper.pdf"
        assert pdf.exists(), tail
        assert pdf.read_bytes().startswith(b"%PDF")
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
        pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M)[1])
        assert pages >= 4, info
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout.lower()
        for name in STUDIES:
            assert name in text, f"{name} is not in the paper's text"

        # the raw runs, under data/runs/<host>/, every study
        host = socket.gethostname().split(".")[0] or "localhost"
        runs = clone / "data" / "runs" / host
        assert runs.is_dir(), sorted(p.name for p in (clone / "data" / "runs").iterdir())
        for name in STUDIES:
            assert list((runs / name).rglob("rep*.json")), f"no raw runs of {name} under {runs}"
            assert (runs / f"{name}.parquet").exists(), name
        left_out = {"degradation", "journal", "forest", "filecount", "tmpfs"} - set(STUDIES)
        assert not [name for name in left_out if (runs / name).exists()], "STUDIES= ran more than it named"
        passed = True
    finally:
        _remove_root(root)
        if passed:  # else the log stays, for a look at the whole run
            shutil.rmtree(base)
