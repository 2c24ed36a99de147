"""`kind: device` on real block devices: loop devices attached to sparse
images in the test's own directory stand in for the user's disks (their
identity is their backing file and size). Each run makes a fresh file system
on the whole device, mounts it under the scratch directory, and leaves the
device blank and its write cache as found."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from boatload.provision.cleanup import cleanup
from boatload.provision.ledger import Ledger
from boatload.provision.targets import provision
from boatload.base.targetspec import parse_target
from devicelib import identity, loop_device, loop_devices, sh, signatures
from targetlib import leftovers, mounts_under, root, scratch, write_cache  # noqa: F401 (scratch is a fixture)

pytestmark = root
SRC = Path(__file__).resolve().parents[1] / "src"


def sysfs(dev: str, key: str) -> str:
    return Path(f"/sys/block/{Path(dev).name}/queue/{key}").read_text().strip()


def test_ext4_on_a_device_with_a_signature_and_wipe(tmp_path, scratch):
    with loop_device(tmp_path, 64) as dev:
        sh("mkfs.ext2", "-q", "-F", dev)  # an old file system on it
        spec = parse_target("disk", {"kind": "device", "fs": "ext4", "device": dev, "wipe": identity(dev)})
        with provision(spec, scratch) as t:
            assert mounts_under(scratch) == {str(t.path): "ext4"}
            (t.path / "f").write_bytes(b"x" * 4096)
            prov = t.provenance
            assert prov["mount_source"] == dev and prov["kernel_fs"] == "ext4"
            facts = prov["device"]
            assert facts["identity"] == identity(dev)
            assert facts["size_bytes"] == 64 << 20
            assert facts["logical_block_size"] == int(sysfs(dev, "logical_block_size"))
            assert facts["rotational"] == (sysfs(dev, "rotational") == "1")
            assert facts["write_cache"] == sysfs(dev, "write_cache")
            assert facts["serial_hash"] is None and facts["backing_file"] == str(tmp_path / "disk.img")
            assert "ext4" in signatures(dev)
        assert leftovers(scratch) == {}
        assert signatures(dev) == ""  # left blank: the next run needs no wipe
        assert all(r.released for r in Ledger(scratch).resources().values())


def test_xfs_with_its_log_on_a_second_device_and_the_write_cache_restored(tmp_path, scratch):
    with loop_devices(tmp_path, 320, 64) as (data, log):
        before = {d: write_cache(d) for d in (data, log)}
        want = "write through" if before[data] == "write back" else "write back"
        spec = parse_target("j", {"kind": "device", "fs": "xfs", "device": data, "write_cache": want,
                                  "log": {"device": log}})
        with provision(spec, scratch) as t:
            assert f"logdev={log}" in t.provenance["mount_options"]
            assert write_cache(data) == want and write_cache(log) == want
            assert t.provenance["log_device_facts"]["identity"] == identity(log)
            info = sh("xfs_info", str(t.path))
            assert f"log      ={log}" in info or f"log ={log}" in " ".join(info.split())
        assert {d: write_cache(d) for d in (data, log)} == before
        assert signatures(data) == "" and signatures(log) == ""
        assert leftovers(scratch) == {}


def test_ext4_with_an_external_journal_device(tmp_path, scratch):
    with loop_devices(tmp_path, 64, 16) as (data, log):
        spec = parse_target("j", {"kind": "device", "fs": "ext4", "device": data, "log": {"device": log}})
        with provision(spec, scratch) as t:
            dump = sh("dumpe2fs", "-h", data)
            assert "Journal device:" in dump
            (t.path / "f").write_text("hello")
        assert leftovers(scratch) == {}


def test_a_killed_run_is_undone_by_cleanup(tmp_path, scratch):
    """SIGKILL with the file system mounted and the write cache changed: cleanup
    unmounts, puts the write cache back and erases the file system it made."""
    with loop_device(tmp_path, 64) as dev:
        before = write_cache(dev)
        want = "write through" if before == "write back" else "write back"
        code = textwrap.dedent("""
            import os, signal, sys
            from pathlib import Path
            from boatload.provision.targets import provision
            from boatload.base.targetspec import parse_target
            spec = parse_target("disk", {"kind": "device", "fs": "ext4", "device": sys.argv[1], "write_cache": sys.argv[3]})
            with provision(spec, Path(sys.argv[2])):
                os.kill(os.getpid(), signal.SIGKILL)
        """)
        r = subprocess.run([sys.executable, "-c", code, dev, str(scratch), want], env={**os.environ, "PYTHONPATH": str(SRC)},
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == -signal.SIGKILL, r.stderr
        assert write_cache(dev) == want and mounts_under(scratch)
        done = cleanup(scratch)
        assert any(f"write cache of {dev} back" in line for line in done), done
        assert any(f"erased the file system boatload made on {dev}" in line for line in done), done
        assert write_cache(dev) == before and signatures(dev) == ""
        assert leftovers(scratch) == {} and cleanup(scratch) == []
