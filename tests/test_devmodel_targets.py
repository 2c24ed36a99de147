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


def test_xfs_on_the_array_with_its_log_on_the_ssd(scratch, monkeypatch):
    """Its log on ssd-2008 also where the stack is slower than the SSD's 512-byte read allows (a
    CI machine's stack cost 136 us, the read allows 119.5): the log is read only at mount, and
    the filter is given its reads at the stack's floor (presets.served), not refused at start."""
    from dataclasses import replace

    from boatload.provision.devmodel import device

    monkeypatch.setattr(device, "_measured", None)
    slow = replace(device.stack_cost(scratch), stack_us=140.0)  # the overheads as measured here
    monkeypatch.setattr(device, "_measured", slow)
    spec = parse_target("journal", {"kind": "loop", "fs": "xfs", "size_mb": 300, "model": "raid-hdd",
                                    "log": {"size_mb": 64, "model": "ssd-2008"}})
    with provision(spec, scratch) as p:
        prov = p.provenance
        assert prov["model"]["parameters"]["disks"] == 4 and prov["log_model"]["parameters"]["kind"] == "ssd"
        # the log's reads are left out of the stack check (read only at mount), the array's are not
        assert prov["log_model"]["reads_timed"] is False and prov["model"]["reads_timed"] is True
        assert prov["log_model"]["stack_cost_us"]["stack_us"] == 140.0
        assert prov["log_model"]["parameters"]["read_latency_us"] == 100  # the model's own, as the data file says
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


def dirty_pages(path: str) -> int:
    """Pages of `path` dirty in the host's page cache: each page mapped (a read of one byte) and its
    flags looked up (/proc/self/pagemap, /proc/kpageflags: bit 4, KPF_DIRTY; root)."""
    import ctypes
    import struct

    page = mmap.PAGESIZE
    fd = os.open(path, os.O_RDWR)  # a writable shared mapping, for ctypes' address; nothing is written
    try:
        size = os.fstat(fd).st_size
        m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    try:
        base = ctypes.addressof(ctypes.c_char.from_buffer(m))
        for off in range(0, size, page):
            m[off]  # map the page cache page (a read: nothing dirtied)
        with open("/proc/self/pagemap", "rb") as pm, open("/proc/kpageflags", "rb") as kf:
            pm.seek(base // page * 8)
            entries = struct.unpack(f"{size // page}Q", pm.read(size // page * 8))
            dirty = 0
            for e in entries:
                if e >> 63 & 1:  # present
                    kf.seek((e & ((1 << 55) - 1)) * 8)
                    dirty += struct.unpack("Q", kf.read(8))[0] >> 4 & 1
        return dirty
    finally:
        import gc

        gc.collect()  # the ctypes view holds the buffer
        m.close()


def _written_through_the_model(d: Path, name: str, mib: int) -> None:
    fd = os.open(d / name, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, os.urandom(mib << 20))
        os.fsync(fd)  # through the model to nbdkit, which writes the image through the host's page cache
    finally:
        os.close(fd)


def test_a_modelled_images_host_copy_is_written_back_before_each_measured_phase(scratch):
    """The host wrote a modelled disk's image back inside later timed phases (516.6 MB during one
    read in a quick run): nbdkit writes the image through the host's page cache. The monitor of a
    run on a modelled target writes its images back before each measured phase, outside it."""
    from boatload.measure import interference
    from boatload.measure.runner import modelled_images

    spec = parse_target("wb", {"kind": "loop", "fs": "ext4", "size_mb": 64, "model": "hdd-7200",
                               "mkfs_options": ["-E", "lazy_itable_init=0,lazy_journal_init=0"]})
    with provision(spec, scratch) as p:
        images = modelled_images(p.provenance)
        assert images == (p.provenance["image"],)
        seen = {}
        for name, copies in (("without", ()), ("with", images)):
            _written_through_the_model(p.path, name, 8)
            before = dirty_pages(images[0])
            monitor = interference.Monitor(host_copies=copies, settings={**interference.DEFAULTS, "before_s": 0})
            with interference.monitoring(monitor):
                with monitor.phase("read", "worker"):
                    inside = dirty_pages(images[0])
                with monitor.phase("layout", "worker", measured=False):
                    pass
            seen[name] = (before, inside, [r["host_copies_written_back_s"] for r in monitor.records])
    # 8 MiB is 2,048 pages: most still dirty on the host when the phase is entered without it
    assert seen["without"][0] >= 1024 and seen["without"][1] >= 1024, seen
    assert seen["without"][2] == [None, None], seen
    assert seen["with"][0] >= 1024 and seen["with"][1] == 0, seen
    written_back_s, unmeasured = seen["with"][2]
    assert written_back_s > 0 and unmeasured is None, seen  # only measured phases pay for it
    assert wait_clean(scratch) == {}
