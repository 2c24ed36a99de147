"""Targets on real file systems: parsing, signals and the ledger, provisioning
of every kind and file system, external logs, the write cache.

Root-needing tests are skipped without root. The state checks read
/proc/self/mountinfo and `losetup` directly, not through boatload (targetlib).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from boatload.provision import targets
from boatload.provision.targets import writecache
from boatload.provision.ledger import Ledger
from boatload.base.signals import Terminated, deferred_signals, signals_as_exceptions
from boatload.provision.cleanup import cleanup
from boatload.provision.hostops import Teardown
from boatload.provision.targets import provision
from boatload.base.targetspec import MKFS, TargetError, TargetSpec, needs_root, parse_target
from targetlib import (  # noqa: F401 (scratch is a fixture)
    SIZES, flushes, leftovers, log_image_dir, loops_under, mounts_under, root, scratch, spec_for, write_cache,
)


# -- parsing -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, mapping, field, words",
    [
        ("ext4", {"kind": "loop", "fs": "ext4", "size_mb": -3}, "targets.ext4.size_mb", "positive integer, got -3"),
        ("ext4", {"fs": "ext4", "size_mb": "big"}, "targets.ext4.size_mb", "'big'"),
        ("ext4", {"fs": "ext4", "size_mb": True}, "targets.ext4.size_mb", "True"),
        ("xfs", {"fs": "xfs", "size_mb": 100}, "targets.xfs.size_mb", "at least 300"),
        ("btrfs", {"fs": "btrfs", "size_mb": 64}, "targets.btrfs.size_mb", "at least 128"),
        ("ext4", {"fs": "ext4", "colour": "red"}, "targets.ext4.colour", "unknown field"),
        ("x", {"kind": "nfs"}, "targets.x.kind", "'nfs'"),
        ("x", {"kind": "loop", "fs": "zfs"}, "targets.x.fs", "'zfs'"),
        ("x", {"kind": "loop"}, "targets.x.fs", "missing"),
        ("x", {}, "targets.x.kind", "missing"),
        ("x", {"kind": "tmpfs", "fs": "ext4"}, "targets.x.fs", "takes tmpfs"),
        ("x", {"kind": "loop", "fs": "tmpfs"}, "targets.x.fs", "takes ext2"),
        ("x", {"fs": "ext4", "mkfs_options": [3]}, "targets.x.mkfs_options[0]", "non-empty string"),
        ("x", {"fs": "ext4", "mount_options": {"a": 1}}, "targets.x.mount_options", "list of strings"),
        ("x", {"fs": "tmpfs", "mkfs_options": ["-q"]}, "targets.x.mkfs_options", "not used by kind 'tmpfs'"),
        ("x", {"fs": "tmpfs", "mount_options": ["size=10m"]}, "targets.x.mount_options[0]", "size_mb"),
        ("x", {"kind": "dir", "size_mb": 10}, "targets.x.size_mb", "not used by kind 'dir'"),
        ("x", {"kind": "dir", "mount_options": ["noatime"]}, "targets.x.mount_options", "not used by kind 'dir'"),
        ("x", ["ext4"], "targets.x", "expected a mapping"),
        ("a/b", {"kind": "dir"}, "targets.a/b", "target name"),
        ("x", {"name": "y", "kind": "dir"}, "targets.x.name", "does not match"),
        ("x", {"fs": "ext4", "write_cache": "none"}, "targets.x.write_cache", "'none'"),
        ("x", {"fs": "ext4", "write_cache": True}, "targets.x.write_cache", "write through"),
        ("x", {"fs": "tmpfs", "write_cache": "write through"}, "targets.x.write_cache", "only loop and device targets"),
        ("x", {"kind": "dir", "write_cache": "write back"}, "targets.x.write_cache", "only loop and device targets"),
        ("x", {"fs": "btrfs", "log": {"size_mb": 64}}, "targets.x.log", "xfs or ext4"),
        ("x", {"fs": "ext3", "log": {"size_mb": 64}}, "targets.x.log", "xfs or ext4"),
        ("x", {"fs": "tmpfs", "log": {"size_mb": 64}}, "targets.x.log", "not tmpfs tmpfs"),
        ("x", {"fs": "xfs", "log": 128}, "targets.x.log", "{size_mb: N}"),
        ("x", {"fs": "xfs", "log": {}}, "targets.x.log.size_mb", "missing"),
        ("x", {"fs": "xfs", "log": {"size_mb": 64, "dev": "/dev/sda"}}, "targets.x.log.dev", "unknown field"),
        ("x", {"fs": "xfs", "log": {"size_mb": "big"}}, "targets.x.log.size_mb", "positive integer"),
        ("x", {"fs": "xfs", "log": {"size_mb": 32}}, "targets.x.log.size_mb", "64 to 2038 MB, got 32"),
        ("x", {"fs": "ext4", "log": {"size_mb": 4}}, "targets.x.log.size_mb", "8 to"),
        ("x", {"fs": "ext4", "log": {"size_mb": 16}, "mkfs_options": ["-b", "1024"]}, "targets.x.mkfs_options", "block size is 4096"),
    ],
)
def test_parse_errors_name_the_field(name, mapping, field, words):
    with pytest.raises(TargetError) as e:
        parse_target(name, mapping)
    msg = str(e.value)
    assert msg.startswith(field + ":"), msg
    assert words in msg
    assert "\n" not in msg


def test_parse_defaults_and_round_trip():
    s = parse_target("ext4", {"fs": "ext4", "mkfs_options": "-E lazy_itable_init=0", "mount_options": "noatime, nodiratime"})
    assert s == TargetSpec("ext4", "loop", "ext4", 1024, ("-E", "lazy_itable_init=0"), ("noatime", "nodiratime"))
    d = s.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert parse_target(d["name"], d) == s
    assert "write_cache" not in d and "log" not in d  # absent unless set: old provenance unchanged
    j = parse_target("j", {"fs": "xfs", "size_mb": 1024, "write_cache": "write through", "log": {"size_mb": 128}})
    assert (j.write_cache, j.log_size_mb) == ("write through", 128)
    dj = j.to_dict()
    assert dj["write_cache"] == "write through" and dj["log"] == {"size_mb": 128}
    assert parse_target(dj["name"], dj) == j
    assert parse_target("t", {"kind": "tmpfs"}) == TargetSpec("t", "tmpfs", "tmpfs")
    assert parse_target("d", {"fs": "dir"}) == TargetSpec("d", "dir", "dir")
    assert needs_root(parse_target("t", {"kind": "tmpfs"}))
    assert needs_root(s)
    assert not needs_root(parse_target("d", {"kind": "dir"}))


# -- signals and ledger (no root) ----------------------------------------------


def test_signals_as_exceptions_raises_and_restores():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as e:
        with signals_as_exceptions():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted by the handler
    assert e.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.fixture
def sigint_raises():
    """SIGINT as a terminal process has it, even when pytest runs in a
    background job or under nohup (where it starts out ignored)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_deferred_signals_hold_until_the_block_ends(sigint_raises):
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_signals():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            steps.append("finished the critical step")
    assert steps == ["finished the critical step"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ledger_skips_damaged_lines(tmp_path):
    led = Ledger(tmp_path)
    a = led.record("image", tmp_path / "images" / "a.img")
    with open(led.path, "a") as f:
        f.write('{"op": "create", "id": "zz", "ki')  # torn line
    b = led.record("dir", tmp_path / "dirs" / "b")
    led.note(a, inode=5)
    led.release(b)
    res = led.resources()
    assert set(res) == {a, b}
    assert res[a].facts["inode"] == 5 and not res[a].released
    assert res[b].released and res[b].pid == os.getpid()


def test_teardown_runs_every_step_and_keeps_the_exception_that_started_it(tmp_path, capsys):
    led = Ledger(tmp_path)
    rid = led.record("dir", tmp_path / "dirs" / "d")
    ran = []

    def fail():
        ran.append("second")
        raise OSError("disk on fire")

    with pytest.raises(KeyboardInterrupt):  # not the OSError of a step
        with Teardown("target 'x'") as undo:
            undo.step("first", lambda: ran.append("first"), release=(led, rid))
            undo.step("second", fail)
            undo.step("third", lambda: ran.append("third"))
            raise KeyboardInterrupt
    assert ran == ["third", "second", "first"]
    assert led.get(rid).released
    assert capsys.readouterr().err == "boatload: teardown of target 'x': second: disk on fire\n"

    def raising(message):
        def step():
            raise ValueError(message)

        return step

    with pytest.raises(TargetError, match=r"^teardown of target 'x' failed: b: 2; a: 1$"):  # every failure, named
        with Teardown("target 'x'") as undo:
            undo.step("a", raising("1"))
            undo.step("b", raising("2"))


# -- dir (no root) -------------------------------------------------------------


def test_dir_target(scratch):
    spec = spec_for("dir")
    with provision(spec, scratch) as t:
        assert t.path.is_dir() and t.path.parent == scratch / "dirs"
        (t.path / "sub").mkdir()
        (t.path / "sub" / "f").write_text("hello")
        os.symlink("/etc", t.path / "escape")  # rmtree must not follow it
        u = t.usage()
        assert set(u) == {"blocks_used_kb", "inodes_used", "inodes_total"}
        assert t.provenance["kind"] == "dir" and t.provenance["path"] == str(t.path)
        assert t.provenance["backing_fs"]
    assert leftovers(scratch) == {}
    assert Path("/etc/passwd").exists()
    assert cleanup(scratch) == []


def test_missing_tool_names_command_and_package(scratch, monkeypatch):
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda c, *a, **k: None if c == "mkfs.xfs" else real(c, *a, **k))
    monkeypatch.setattr(targets, "is_root", lambda: True)
    with pytest.raises(TargetError) as e:
        with provision(spec_for("xfs"), scratch):
            pass
    assert "mkfs.xfs" in str(e.value) and "xfsprogs" in str(e.value)
    assert str(e.value).startswith("targets.xfs.fs:")
    assert not scratch.exists()  # checked before touching anything


# -- real file systems (root) ---------------------------------------------------


@root
@pytest.mark.parametrize("fs", ["tmpfs", "ext2", "ext3", "ext4", "xfs", "btrfs"])
def test_provision_real_fs(fs, scratch):
    spec = spec_for(fs, mount_options=["noatime"])
    with provision(spec, scratch) as t:
        assert mounts_under(scratch) == {str(t.path): fs}
        assert t.path.parent == scratch / "mnt" and t.path.name.startswith("boatload-")
        (t.path / "hello.txt").write_text("hi")
        assert (t.path / "hello.txt").read_text() == "hi"
        u = t.usage()
        assert u["blocks_used_kb"] >= 0
        if fs.startswith("ext"):
            assert u["inodes_total"] > 0 and u["inodes_used"] >= 11  # reserved inodes + our file
        p = t.provenance
        assert p["kind"] == spec.kind and p["fs"] == fs and p["kernel_fs"] == fs
        assert "noatime" in p["mount_options"]
        assert p["backing_fs"]
        if fs == "tmpfs":
            assert p["loop_device"] is None and p["mkfs_command"] is None
            assert any(o.startswith("size=") for o in p["mount_options"])
        else:
            assert p["loop_device"].startswith("/dev/loop")
            assert loops_under(scratch) == {p["loop_device"]: p["image"]}
            assert p["image_size_bytes"] == SIZES[fs] * 1024 * 1024
            assert Path(p["mkfs_command"][0]).name == MKFS[fs][0]
            assert p["mkfs_command"][-1] == p["loop_device"]
            assert os.stat(p["image"]).st_blocks * 512 < p["image_size_bytes"]  # sparse
        json.dumps(p)  # provenance is plain data
    assert leftovers(scratch) == {}
    assert cleanup(scratch) == []
    res = Ledger(scratch).resources()
    assert res and all(r.released for r in res.values())


@root
def test_xfs_external_log(scratch):
    spec = spec_for("xfs", log={"size_mb": 64}, mount_options=["noatime"])
    with provision(spec, scratch) as t:
        p = t.provenance
        data, log = p["loop_device"], p["log_device"]
        assert log.startswith("/dev/loop") and log != data
        assert Path(p["log_image"]).parent == log_image_dir(scratch)
        assert p["log_size_bytes"] == 64 * 1024 * 1024 and p["log_backing_fs"] == "tmpfs"
        assert loops_under(scratch) == {data: p["image"]} and loops_under(log_image_dir(scratch)) == {log: p["log_image"]}
        assert f"logdev={log},size=64m" in p["mkfs_command"]
        # the kernel's view: mounted with the external log
        line = next(x for x in Path("/proc/self/mountinfo").read_text().splitlines() if f" {t.path} " in x)
        assert f"logdev={log}" in line and "noatime" in line
        if shutil.which("xfs_info") or Path("/usr/sbin/xfs_info").exists():
            info = subprocess.run([shutil.which("xfs_info") or "/usr/sbin/xfs_info", str(t.path)],
                                  capture_output=True, text=True, check=True).stdout
            log_line = next(x for x in info.splitlines() if x.startswith("log"))
            assert log in log_line and "internal" not in log_line, info
        for i in range(100):
            (t.path / f"f{i}").write_bytes(b"x" * 1000)
        os.sync()
        assert len(os.listdir(t.path)) == 100
        json.dumps(p)
    assert leftovers(scratch) == {}
    assert not log_image_dir(scratch).exists()
    assert cleanup(scratch) == []
    assert all(r.released for r in Ledger(scratch).resources().values())


@root
def test_ext4_external_journal(scratch):
    spec = spec_for("ext4", log={"size_mb": 16}, mkfs_options=["-E", "lazy_itable_init=0"])
    with provision(spec, scratch) as t:
        p = t.provenance
        data, log = p["loop_device"], p["log_device"]
        assert p["log_mkfs_command"][-1] == log and "journal_dev" in p["log_mkfs_command"]
        assert f"device={log}" in p["mkfs_command"] and p["mkfs_command"][-1] == data
        dumpe2fs = shutil.which("dumpe2fs") or "/usr/sbin/dumpe2fs"
        head = subprocess.run([dumpe2fs, "-h", data], capture_output=True, text=True, check=True).stdout
        rdev = os.stat(log).st_rdev
        assert "Journal device:" in head
        jdev = next(x for x in head.splitlines() if x.startswith("Journal device:")).split()[-1]
        assert int(jdev, 16) == (os.major(rdev) << 8 | os.minor(rdev))  # the journal is our log device
        assert "has_journal" in head
        jhead = subprocess.run([dumpe2fs, "-h", log], capture_output=True, text=True).stdout
        assert "journal_dev" in jhead
        (t.path / "f").write_text("x" * 5000)
        with open(t.path / "f", "rb+") as f:
            os.fsync(f.fileno())
        assert mounts_under(scratch) == {str(t.path): "ext4"}
    assert leftovers(scratch) == {}
    assert not log_image_dir(scratch).exists()
    assert cleanup(scratch) == []


def _fsync_files(path: Path, n: int = 5) -> None:
    for i in range(n):
        with open(path / f"sync{i}", "wb") as f:
            f.write(b"y" * 4096)
            f.flush()
            os.fsync(f.fileno())


@root
def test_write_cache_through_drops_flushes(scratch):
    """ "write through" reads back from sysfs and no flush reaches the device;
    the default is "write back", where fsync does send flushes."""
    with provision(spec_for("ext4", write_cache="write through"), scratch) as t:
        dev = t.provenance["loop_device"]
        assert write_cache(dev) == "write through" == t.provenance["loop_write_cache"]
        before = flushes(dev)
        _fsync_files(t.path)
        assert flushes(dev) == before
    with provision(spec_for("ext4"), scratch) as t:
        dev = t.provenance["loop_device"]
        assert write_cache(dev) == "write back" == t.provenance["loop_write_cache"]
        before = flushes(dev)
        _fsync_files(t.path)
        assert flushes(dev) >= before + 5
    assert leftovers(scratch) == {}


@root
def test_write_cache_is_restored_and_applies_to_the_log(scratch):
    spec = spec_for("xfs", write_cache="write through", log={"size_mb": 64})
    with provision(spec, scratch) as t:
        p = t.provenance
        devs = (p["loop_device"], p["log_device"])
        assert [write_cache(d) for d in devs] == ["write through"] * 2
        assert p["log_write_cache"] == "write through"
    # the kernel keeps the setting on a detached loop device: teardown put back what it found
    before = {r.facts["device"]: r.facts.get("write_cache_before")
              for r in Ledger(scratch).resources().values() if r.kind == "loop"}
    assert set(before) == set(devs)
    for dev, value in before.items():
        if value and not Path(f"/sys/block/{Path(dev).name}/loop/backing_file").exists():  # nobody took it since
            assert write_cache(dev) == value
    assert leftovers(scratch) == {}


@root
def test_write_cache_refused_by_the_kernel_names_the_field(scratch, monkeypatch):
    real_write, real_read = writecache.write_sys, writecache.read_sys

    def refuse(path, value):
        if Path(path).name == "write_cache":
            raise OSError(22, "Invalid argument")
        return real_write(path, value)

    def read(path):  # whatever a loop device was left at, it now needs changing
        return "write back" if Path(path).name == "write_cache" else real_read(path)

    monkeypatch.setattr(writecache, "write_sys", refuse)
    monkeypatch.setattr(writecache, "read_sys", read)
    with pytest.raises(TargetError) as e:
        with provision(spec_for("ext4", write_cache="write through"), scratch):
            pass
    assert str(e.value).startswith("targets.ext4.write_cache: the kernel refused 'write through' for /dev/loop")
    assert leftovers(scratch) == {}


@pytest.mark.parametrize(
    "mapping, field, words",
    [
        ({"kind": "device", "device": "/dev/sdb"}, "targets.x.fs", "a device target needs one of ext2"),
        ({"kind": "device", "fs": "ext4"}, "targets.x.device", "missing"),
        ({"kind": "device", "fs": "ext4", "device": "sdb"}, "targets.x.device", "under /dev"),
        ({"kind": "device", "fs": "ext4", "device": "/dev/sdb", "size_mb": 100}, "targets.x.size_mb", "the device's"),
        ({"kind": "device", "fs": "ext4", "device": "/dev/sdb", "wipe": ""}, "targets.x.wipe", "identity"),
        ({"kind": "device", "fs": "btrfs", "device": "/dev/sdb", "log": {"device": "/dev/sdc"}}, "targets.x.log", "xfs or ext4"),
        ({"kind": "device", "fs": "xfs", "device": "/dev/sdb", "log": {"size_mb": 64}}, "targets.x.log.size_mb", "unknown field"),
        ({"kind": "device", "fs": "xfs", "device": "/dev/sdb", "log": {"device": "/dev/sdb"}}, "targets.x.log.device", "another device"),
        ({"kind": "loop", "fs": "ext4", "device": "/dev/sdb"}, "targets.x.device", "only kind 'device'"),
        ({"kind": "loop", "fs": "ext4", "wipe": "x"}, "targets.x.wipe", "only kind 'device'"),
        ({"kind": "mount"}, "targets.x.path", "absolute path"),
        ({"kind": "mount", "path": "srv"}, "targets.x.path", "absolute path"),
        ({"kind": "mount", "path": "/srv", "mkfs_options": ["-q"]}, "targets.x.mkfs_options", "not used by kind 'mount'"),
        ({"kind": "mount", "path": "/srv", "mount_options": ["noatime"]}, "targets.x.mount_options", "boatload mounts nothing"),
        ({"kind": "mount", "path": "/srv", "write_cache": "write back"}, "targets.x.write_cache", "only loop and device"),
        ({"kind": "tmpfs", "path": "/srv"}, "targets.x.path", "only kind 'mount'"),
    ],
)
def test_device_and_mount_fields_name_the_field(mapping, field, words):
    with pytest.raises(TargetError) as e:
        parse_target("x", mapping)
    assert str(e.value).startswith(field + ":") and words in str(e.value), str(e.value)


def test_device_and_mount_specs_round_trip():
    for m in ({"kind": "device", "fs": "xfs", "device": "/dev/sdb", "wipe": "ata-X", "write_cache": "write through",
               "log": {"device": "/dev/nvme0n1p3", "wipe": "nvme-Y"}},
              {"kind": "mount", "path": "/srv/scratch/"}):
        s = parse_target("x", m)
        d = s.to_dict()
        assert parse_target(d.pop("name"), d) == s and s.size_mb is None
    assert parse_target("x", {"kind": "mount", "path": "/srv/scratch/"}).path == "/srv/scratch"
