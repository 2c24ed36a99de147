"""Loop targets on modelled hardware, provisioned as runs provision them
(boatload.provision.targets.provision): the file system on the modelled device, the
model in the provenance, write-through keeping flushes from the model, an
external log on its own model, faults, and nbdkit dying under a run."""

import json
import mmap
import os
import signal
from pathlib import Path

import pytest
from targetlib import IS_ROOT, SSD_ABOVE_FLOOR, leftovers, scratch, wait_clean  # noqa: F401 - scratch is a fixture

from boatload.provision.targets import provision
from boatload.base.targetspec import TargetError, parse_target

pytestmark = pytest.mark.skipif(not IS_ROOT or not os.path.exists("/dev/fuse"), reason="needs root and /dev/fuse")


def model_flushes(prov: dict, key: str = "model") -> int:
    return json.loads((Path(prov[key]["stack"]) / "stats.json").read_text())["flushes"]


def fsync_files(d: Path, n: int) -> None:
    for i in range(n):
        fd = os.open(d / f"f{i}", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"x" * 4096)
        os.fsync(fd)
        os.close(fd)


@pytest.mark.parametrize("write_cache", ["write back", "write through"])
def test_ext4_on_a_modelled_disk(scratch, write_cache):
    spec = parse_target("disk", {"kind": "loop", "fs": "ext4", "size_mb": 64, "model": "hdd-7200",
                                 "write_cache": write_cache})
    with provision(spec, scratch) as p:
        prov = p.provenance
        assert prov["model"]["parameters"]["kind"] == "hdd" and prov["model"]["config"] == "hdd-7200"
        assert Path(f"/sys/block/{Path(prov['loop_device']).name}/loop/backing_file").read_text().strip() == str(
            Path(prov["model"]["stack"]) / "mnt" / "nbd")
        assert prov["loop_write_cache"] == write_cache
        before = model_flushes(prov)
        fsync_files(p.path, 5)
        sent = model_flushes(prov) - before
    assert sent == 0 if write_cache == "write through" else sent >= 5
    assert wait_clean(scratch) == {}


def test_xfs_on_the_array_with_its_log_on_the_ssd(scratch):
    spec = parse_target("journal", {"kind": "loop", "fs": "xfs", "size_mb": 300, "model": "raid-hdd",
                                    "log": {"size_mb": 64, "model": "ssd-2008"}})
    with provision(spec, scratch) as p:
        prov = p.provenance
        assert prov["model"]["parameters"]["disks"] == 4 and prov["log_model"]["parameters"]["kind"] == "ssd"
        # the log's reads are left out of the stack check (read only at mount), the array's are not
        assert prov["log_model"]["reads_timed"] is False and prov["model"]["reads_timed"] is True
        before = model_flushes(prov, "log_model")
        fsync_files(p.path, 3)
        assert model_flushes(prov, "log_model") > before  # the log's commits reach the SSD's model
    assert wait_clean(scratch) == {}


def test_a_bad_model_is_refused_before_anything_is_made(scratch):
    spec = parse_target("t", {"kind": "loop", "fs": "ext4", "size_mb": 64,
                              "model": {"preset": "hdd-7200", "rate_inner_mbps": 900}})
    with pytest.raises(TargetError) as e:
        with provision(spec, scratch):
            pass
    assert str(e.value).startswith("targets.t.model.rate_inner_mbps ")
    assert not (scratch / "images").exists() or not os.listdir(scratch / "images")


def test_faults_on_demand(scratch):
    spec = parse_target("f", {"kind": "loop", "fs": "ext4", "size_mb": 64, "model": SSD_ABOVE_FLOOR,
                              "faults": {"read_rate": 1.0, "trigger": True}})
    with provision(spec, scratch) as p:
        fsync_files(p.path, 1)
        trigger = Path(p.provenance["model"]["stack"]) / "fault"
        fd = os.open(p.path / "f0", os.O_RDONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, 4096)
            assert os.preadv(fd, [buf], 0) == 4096
            trigger.touch()
            with pytest.raises(OSError) as e:
                os.preadv(fd, [buf], 0)
            assert e.value.errno == 5
            trigger.unlink()
        finally:
            os.close(fd)
    assert wait_clean(scratch) == {}


def test_nbdkit_dying_under_a_run_fails_it_in_one_line(scratch):
    spec = parse_target("victim", {"kind": "loop", "fs": "ext4", "size_mb": 64, "model": SSD_ABOVE_FLOOR})
    with pytest.raises(TargetError) as e:
        with provision(spec, scratch) as p:
            pid = int((Path(p.provenance["model"]["stack"]) / "nbdkit.pid").read_text())
            os.kill(pid, signal.SIGKILL)
            fsync_files(p.path, 3)  # fails: the device is gone
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("targets.victim: nbdkit (pid ") and "died mid-run" in msg, msg
    assert wait_clean(scratch, timeout=30) == {}
