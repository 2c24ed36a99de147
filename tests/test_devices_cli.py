"""`boatload devices` on this machine, and `boatload target up` / `down` for
every kind: up prints the mount point as its last line and leaves it up for
the user's own tools; down leaves nothing behind and restores what it changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from boatload.provision.cleanup import cleanup
from devicelib import identity, loop_device, signatures, sh
from targetlib import leftovers, mounts_under, root, write_cache

ROOT = Path(__file__).resolve().parents[1]
BOATLOAD = ROOT / ".venv" / "bin" / "boatload"


def boatload(*args: str, scratch: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    exe = str(BOATLOAD) if BOATLOAD.exists() else shutil.which("boatload")
    env = {**os.environ, "BOATLOAD_SCRATCH": str(scratch)}
    return subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def root_disk() -> str:
    st = os.stat("/")
    return "/dev/" + Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve().name


@root
def test_devices_lists_the_root_disk_as_refused_mounted(tmp_path):
    with loop_device(tmp_path, 64) as blank:
        r = boatload("devices", "--json", scratch=tmp_path / "scratch")
        assert r.returncode == 0, r.stderr
        rows = {row["path"]: row for row in json.loads(r.stdout)}
        human = boatload("devices", scratch=tmp_path / "scratch").stdout
        blank_identity = identity(blank)
    disk = rows[root_disk()]
    assert disk["accepted"] is False and disk["reason"] == "is mounted as the root file system /"
    assert f"{root_disk()}" in human and "refused: is mounted as the root file system /" in human
    assert disk["signatures"] is None  # a device in use is not probed
    mine = rows[blank]
    assert mine["accepted"] is True and mine["reason"] is None and mine["identity"] == blank_identity
    assert mine["size_bytes"] == 64 << 20 and mine["signatures"] == [] and not mine["wipe_needed"]
    for row in rows.values():
        assert {"path", "identity", "accepted", "reason"} <= set(row)
        assert row["accepted"] == (row["reason"] is None)


@pytest.fixture
def world(tmp_path):
    """A config with one target of every kind, and a scratch directory of the test's own."""
    base = Path(tempfile.mkdtemp(prefix="boatload-updown-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@root
@pytest.mark.parametrize("kind", ["tmpfs", "loop", "device", "mount", "dir"])
def test_target_up_then_down_leaves_nothing(tmp_path, world, kind):
    scratch = world / "scratch"
    config = yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())
    with loop_device(tmp_path, 64) as dev:
        cache_before = write_cache(dev)
        userfs = world / "userfs"
        userfs.mkdir()
        sh("mount", "-t", "tmpfs", "-o", "size=8m", "usertmpfs", str(userfs))
        try:
            config["targets"]["t"] = {
                "tmpfs": {"kind": "tmpfs", "fs": "tmpfs", "size_mb": 16},
                "loop": {"kind": "loop", "fs": "ext4", "size_mb": 64, "write_cache": "write through"},
                "device": {"kind": "device", "fs": "ext4", "device": dev, "write_cache": "write through"},
                "mount": {"kind": "mount", "path": str(userfs)},
                "dir": {"kind": "dir", "fs": "dir"},
            }[kind]
            cfg = world / "c.yaml"
            cfg.write_text(yaml.safe_dump(config))
            up = boatload("target", "up", "t", "--configfile", str(cfg), scratch=scratch)
            assert up.returncode == 0, up.stderr
            path = Path(up.stdout.splitlines()[-1])
            assert path.is_dir()
            (path / "by-the-user").write_text("fio was here")  # the target stays up after boatload exits
            if kind in ("tmpfs", "loop", "device"):
                assert mounts_under(scratch) == {str(path): "tmpfs" if kind == "tmpfs" else "ext4"}
            if kind == "device":
                assert write_cache(dev) == "write through"
            again = boatload("target", "up", "t", "--configfile", str(cfg), scratch=scratch)
            assert again.returncode == 1 and "already up" in again.stderr
            down = boatload("target", "down", "t", scratch=scratch)
            assert down.returncode == 0, down.stderr
            assert not path.exists()
            assert leftovers(scratch) == {} and os.listdir(userfs) == []
            assert write_cache(dev) == cache_before and signatures(dev) == ""
            assert boatload("target", "down", "t", scratch=scratch).returncode == 1  # not up any more
        finally:
            if leftovers(scratch):  # a failed assertion left the target up: down before the device goes
                cleanup(scratch, force=True)
            sh("umount", str(userfs))
