"""`kind: mount`: a file system the user mounted, never formatted. Each run
works in a new `boatload-<run id>` directory under `path` and deletes it;
the user's file and directory beside it are unchanged (content and mtime);
after a SIGKILL the directory is gone after `make clean-mounts`. On a mounted
tmpfs and on a mounted ext4 image, as root and as the user nobody."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from contextlib import contextmanager
from pathlib import Path

import pytest

from boatload.provision import capacity
from boatload.base.errors import ConfigError
from boatload.provision.targets import provision
from boatload.base.targetspec import TargetError, parse_target
from asnobody import NOBODY, run_as_nobody
from devicelib import loop_device, sh
from targetlib import root

pytestmark = root
ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PAST = 1_000_000_000  # an mtime no run can produce


@pytest.fixture
def base():
    """A directory nobody may enter (pytest's tmp_path is root's alone)."""
    d = Path(tempfile.mkdtemp(prefix="boatload-mount-test-"))
    os.chmod(d, 0o755)
    yield d
    for mp in sorted((line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                      if line.split()[4].startswith(str(d) + "/")), key=len, reverse=True):
        subprocess.run(["umount", mp], check=False)
    shutil.rmtree(d)


@contextmanager
def mounted(base: Path, fs: str):
    """`base/fs`, a tmpfs or an ext4 image mounted by the test, world-writable,
    with a file and a directory of the user's in it."""
    mp = base / "fs"
    mp.mkdir()
    if fs == "tmpfs":
        sh("mount", "-t", "tmpfs", "-o", "size=16m", "usertmpfs", str(mp))
        dev_ctx = None
    else:
        dev_ctx = loop_device(base, 64, "user")
        dev = dev_ctx.__enter__()
        sh("mkfs.ext4", "-q", "-F", dev)
        sh("mount", dev, str(mp))
    try:
        os.chmod(mp, 0o1777)
        (mp / "mine.txt").write_text("the user's")
        (mp / "minedir").mkdir()
        (mp / "minedir" / "inner").write_text("also the user's")
        for p in (mp / "mine.txt", mp / "minedir" / "inner", mp / "minedir"):
            os.utime(p, (PAST, PAST))
        yield mp
    finally:
        sh("umount", str(mp))
        if dev_ctx is not None:
            dev_ctx.__exit__(None, None, None)


def users_things(mp: Path) -> dict:
    out = {}
    for p in (mp / "mine.txt", mp / "minedir", mp / "minedir" / "inner"):
        st = os.stat(p)
        out[p.name] = (p.read_text() if p.is_file() else sorted(os.listdir(p)), st.st_mtime)
    return out


def ours(mp: Path) -> list[str]:
    return sorted(n for n in os.listdir(mp) if n.startswith("boatload-"))


RUN = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from boatload.provision.targets import provision
    from boatload.base.targetspec import parse_target
    spec = parse_target("mine", {"kind": "mount", "path": sys.argv[1]})
    with provision(spec, Path(sys.argv[2])) as t:
        (t.path / "made-by-boatload").write_text("x")
        os.mkdir(t.path / "d")
        print(t.path, t.provenance["kernel_fs"], t.provenance["mount_source"], flush=True)
        if sys.argv[3] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
    print(t.path.exists())
""")


def scratch_of(base: Path, who: str) -> Path:
    """The run's scratch directory; nobody's own when the run is nobody's."""
    scratch = base / "scratch"
    if who == "nobody":
        scratch.mkdir()
        os.chown(scratch, NOBODY, NOBODY)
    return scratch


def run_as(who: str, mp: Path, scratch: Path, how: str) -> subprocess.CompletedProcess:
    """RUN on the mount target at `mp`, as root (this process's user) or as nobody."""
    if who == "root":
        return subprocess.run([sys.executable, "-c", RUN, str(mp), str(scratch), how], capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=60)
    return run_as_nobody(RUN, str(mp), str(scratch), how)


@pytest.mark.parametrize("fs", ["tmpfs", "ext4"])
@pytest.mark.parametrize("who", ["root", "nobody"])
def test_a_run_leaves_only_the_users_things(base, fs, who):
    scratch = scratch_of(base, who)
    with mounted(base, fs) as mp:
        before = users_things(mp)
        r = run_as(who, mp, scratch, "run")
        assert r.returncode == 0, r.stderr
        first, second = r.stdout.splitlines()
        path, kernel_fs, source = first.split()
        assert Path(path).parent == mp and Path(path).name.startswith("boatload-")
        assert kernel_fs == fs and source == ("usertmpfs" if fs == "tmpfs" else source)
        assert second == "False" and ours(mp) == []
        assert users_things(mp) == before


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_a_killed_runs_directory_goes_with_make_clean_mounts(base, who):
    scratch = scratch_of(base, who)
    with mounted(base, "ext4") as mp:
        before = users_things(mp)
        r = run_as(who, mp, scratch, "kill")
        assert r.returncode == -signal.SIGKILL, r.stderr
        left = ours(mp)
        assert len(left) == 1 and (mp / left[0] / "made-by-boatload").exists()
        if who == "root":
            env = {**os.environ, "BOATLOAD_SCRATCH": str(scratch), "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}
            clean = subprocess.run(["make", "clean-mounts"], cwd=ROOT, env=env, capture_output=True, text=True)
            assert clean.returncode == 0, clean.stderr
            assert f"removed directory {mp / left[0]}" in clean.stdout
        else:  # what make clean-mounts runs, as the user who ran boatload
            r = run_as_nobody("import sys; from pathlib import Path; from boatload.provision.cleanup import cleanup; "
                              "print(cleanup(Path(sys.argv[1])))", str(scratch))
            assert r.returncode == 0 and f"removed directory {mp / left[0]}" in r.stdout, r.stderr
        assert ours(mp) == [] and users_things(mp) == before


@pytest.mark.parametrize("path, words", [
    ("/", "/ is the root file system"),
    ("/proc", "/proc is a proc pseudo file system"),
    ("/etc", "/etc is not a mount point"),
])
def test_refusals_name_the_path(base, path, words):
    spec = parse_target("m", {"kind": "mount", "path": path})
    with pytest.raises(TargetError) as e:
        with provision(spec, base / "scratch"):
            pass
    assert str(e.value).startswith(f"targets.m.path: {words}") and "\n" not in str(e.value)
    assert not os.listdir(base) or os.listdir(base) == ["scratch"]


def test_read_only_mount_is_refused(base):
    mp = base / "ro"
    mp.mkdir()
    sh("mount", "-t", "tmpfs", "-o", "ro,size=1m", "rotmpfs", str(mp))
    try:
        with pytest.raises(TargetError, match=f"targets.m.path: {mp} is not writable"):
            with provision(parse_target("m", {"kind": "mount", "path": str(mp)}), base / "scratch"):
                pass
    finally:
        sh("umount", str(mp))


def test_the_scratch_directorys_file_system_is_refused(base):
    with mounted(base, "tmpfs") as mp:
        with pytest.raises(TargetError) as e:
            with provision(parse_target("m", {"kind": "mount", "path": str(mp)}), mp / "scratch"):
                pass
        assert str(e.value) == f"targets.m.path: {mp} is the scratch directory's file system; name another one"
        assert ours(mp) == []


def test_too_little_space_or_inodes_is_refused_before_any_run(base):
    """The studies' capacity check reads the mount's free space and inodes now."""
    mp = base / "small"
    mp.mkdir()
    sh("mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=100", "smalltmpfs", str(mp))
    try:
        target = {"name": "m", "kind": "mount", "path": str(mp)}
        with pytest.raises(ConfigError, match=r"targets\.m\.path: the file system at .* holds about \d+ more files"):
            capacity.check(target, study="forest", files=1000, data_bytes=0, what="1,000 files", lower="studies.forest.shape")
        with pytest.raises(ConfigError, match=r"targets\.m\.path: the file system at .* has room for about 4 MiB"):
            capacity.check(target, study="forest", files=10, data_bytes=64 << 20, what="64 MiB", lower="x")
        capacity.check(target, study="forest", files=10, data_bytes=1 << 20, what="fits", lower="x")
    finally:
        sh("umount", str(mp))
