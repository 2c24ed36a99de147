"""Modelled devices on the real stack (nbdkit with the device-model filter,
nbdfuse, a direct-I/O loop device), measured with fio, the peer: each preset
against what its parameters give (devmodel-calc); flushes counted by the
model; the error filter; nbdkit dying; signals and SIGKILL + cleanup leaving
nothing. Images live in the test's own tmp directory.

The accuracy checks compare means without the slowest 2 % of requests (the
SSD: the median request; a sequential read: the stream's rate), as
boatload.measure.fiocheck says why, each the median of short turns that found
the host in order (a bare stack's stream before and after each: a spell of the
hypervisor's steal slows every request, whatever the model), and need a machine
that is not overloaded throughout: on a loaded one every request comes back late."""

import os
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from targetlib import IS_ROOT, SSD_ABOVE_FLOOR, leftovers, scratch, wait_clean  # noqa: F401 - scratch is a fixture

from boatload.provision import cleanup as cleanup_module
from boatload.provision.cleanup import cleanup
from boatload.measure import fiocheck
from boatload.provision.devmodel import device, presets
from boatload.provision.devmodel.device import modelled_image
from boatload.base.targetspec import TargetError

pytestmark = pytest.mark.skipif(not IS_ROOT or not os.path.exists("/dev/fuse"), reason="needs root and /dev/fuse")

MiB = 1 << 20
TOLERANCE = 0.15
#: each accuracy check is the median of this many short runs that found the host in order
#: (fiocheck.in_order_turns): in CI a single run once came back a third slow at every request
TURNS = 5


def image(tmp_path: Path, size_mb: int, name: str = "disk") -> Path:
    img = tmp_path / f"{name}-{size_mb}.img"
    with open(img, "wb") as f:
        f.truncate(size_mb * MiB)
    return img


#: a model that costs next to nothing: what a request through the stack costs by itself
BARE_STACK = {"kind": "ssd", "read_latency_us": 1, "read_mbps": 1e9, "write_latency_us": 0, "write_mbps": 1e9,
              "flush_us": 0}


@contextmanager
def bare_probe(tmp_path: Path, scratch: Path) -> Iterator[Callable[[], float]]:
    """A bare stack's stream rate in MB/s, 32 MiB in 128 KiB reads (a tenth of a second): how the
    host is doing at the moment, for fiocheck.in_order_turns (bench/README.md "The host's slow
    spells")."""
    with modelled_image(image(tmp_path, 64, "bare-probe"), 64, BARE_STACK, scratch=scratch, name="bare-probe",
                        calibrated=False) as bare:
        yield lambda: fiocheck.seq_read(bare.device, 64 * MiB, BARE_STACK, area=32 * MiB)["stream_mbps"]


# The SSD's reads with a latency of 2 ms (ssd-2008's is 100 us): a request that waited costs
# the stack 300-510 us more on this kind of machine, from one stack to the next (bench/README.md
# "A modelled SSD's short reads"), which the filter takes off the model's time as calibrated on
# another stack; ssd-2008's 32 KiB read (352 us) is within that spread, and a CI run saw 1.64
# times the model. What this checks of the SSD: every read costs its latency and its transfer.
SLOW_SSD = {"preset": "ssd-2008", "read_latency_us": 2000}


@pytest.mark.parametrize("preset, length", [("hdd-7200", 4096), ("raid-hdd", 4096), (SLOW_SSD, 32768)],
                         ids=["hdd-7200", "raid-hdd", "ssd-2008-2ms"])
def test_random_reads_take_the_models_mean_service_time(tmp_path, scratch, preset, length):
    params = presets.resolve(preset, "m")
    with bare_probe(tmp_path, scratch) as probe, \
            modelled_image(image(tmp_path, 256), 256, params, scratch=scratch, name=params["kind"]) as stack:
        # the SSD's reads all cost the same in the model: its median request (fiocheck)
        key = "median_ratio" if params["kind"] == "ssd" else "ratio"
        r = fiocheck.in_order_turns(
            lambda: fiocheck.random_read(stack.device, 256 * MiB, params, seconds=1, length=length), probe, TURNS, key)
    assert not r["short"], r
    assert r["n"] > 50, r
    assert abs(r[key] - 1) <= TOLERANCE, (r["turns"], r, device.stack_cost(scratch))




def test_a_read_the_model_makes_cheaper_than_the_stack_costs_what_the_stack_costs(tmp_path, scratch):
    """An SSD whose least request the model makes a tenth cheaper than the stack's own
    cost (stack_us, calibrated: 77-151 us from one stack to the next here; ssd-2008's
    103.9 us was refused when five stacks in a row cost over 122), its 4 KiB read less
    than the bare stack's: the stack can make no request faster than it costs. Such a
    read is never much faster than the model, and never slower than the bare stack's
    own read by more than the tolerance.
    The stacks are measured in turns, six short runs each, and compared turn by turn:
    the bare stack's median moved from 97 to 160 us between runs a second apart, so one
    run of each would compare two moments, not two stacks; and two bare stacks, as the
    least a request costs differs from one stack to the next (189-227 against 213-287 us
    once)."""
    ssd = presets.resolve("ssd-2008", "m")
    # its least request (512 B, presets.check) a tenth cheaper than the stack's own cost
    params = {**ssd, "read_latency_us": round(0.9 * device.stack_cost(scratch).stack_us - 512 / ssd["read_mbps"], 1)}
    bare_medians: dict[str, list[float]] = {"a": [], "b": []}
    model_medians = []
    with modelled_image(image(tmp_path, 256, "bare-a"), 256, BARE_STACK, scratch=scratch, name="bare-a",
                        calibrated=False) as bare_a, \
            modelled_image(image(tmp_path, 256, "bare-b"), 256, BARE_STACK, scratch=scratch, name="bare-b",
                           calibrated=False) as bare_b, \
            modelled_image(image(tmp_path, 256, "ssd"), 256, params, scratch=scratch, name="ssd") as model:
        for _ in range(TURNS + 1):
            for name, bare in (("a", bare_a), ("b", bare_b)):
                bare_medians[name].append(
                    fiocheck.random_read(bare.device, 256 * MiB, BARE_STACK, seconds=0.5)["median_us"])
            r = fiocheck.random_read(model.device, 256 * MiB, params, seconds=0.5)
            assert r["n"] > 100, r
            model_medians.append(r["median_us"])
    # each turn's model against the dearer bare stack of the same turn: a slow spell of the machine
    # (a bare stack's median from 233 to 887 us in the next turn, once) moves both
    over_bare = [m / max(a, b, r["expected_us"]) for m, a, b in zip(model_medians, *bare_medians.values())]
    seen = (model_medians, bare_medians, r["expected_us"])
    assert statistics.median(model_medians) >= r["expected_us"] * (1 - TOLERANCE), seen
    assert statistics.median(over_bare) <= 1 + TOLERANCE, seen


# A stream the stack cannot carry runs at the stack's rate, not the model's: raid-hdd's four
# disks stream 420 MB/s in their outer zone, and a bare stack carried 271-504 MB/s here from one
# moment to the next (CI once saw the modelled RAID at 0.735 of its rate). The RAID checked is
# two of its disks in their inner zone (116 MB/s), where the stack has room to spare, as the
# single disk's outer zone (105 MB/s) has: what it checks is that the stripe streams both arms.
INNER_RAID = {"preset": "raid-hdd", "disks": 2}


@pytest.mark.parametrize("preset, length, zone",
                         [("hdd-7200", 128 * 1024, "outer"), (INNER_RAID, 256 * 1024, "inner")],
                         ids=["hdd-7200-outer", "raid-hdd-2-disks-inner"])
def test_a_sequential_read_runs_at_the_zone_rate(tmp_path, scratch, preset, length, zone):
    """The stream's rate (bytes over the run's time), which is what the model promises: a reply the
    host delays is repaid by the read-ahead the drive did meanwhile. Its median request is not: in a
    slow spell of the host it fell to 0.55-0.72 of the model while the stream kept 0.94-0.96."""
    params = presets.resolve(preset, "m")
    size = 1024 * MiB  # a zone of 64 MiB: long enough a stream
    area = size // params["zones"]
    offset = 0 if zone == "outer" else size - area
    with bare_probe(tmp_path, scratch) as probe, \
            modelled_image(image(tmp_path, 1024), 1024, params, scratch=scratch, name=params["kind"]) as stack:
        r = fiocheck.in_order_turns(
            lambda: fiocheck.seq_read(stack.device, size, params, length=length, area=area, offset=offset),
            probe, TURNS, "stream_ratio")
    assert not r["short"], r
    assert abs(r["stream_ratio"] - 1) <= TOLERANCE, (r["turns"], r, device.stack_cost(scratch))


def _cpus_allowed(pid: int) -> set[str]:
    """Cpus_allowed_list of every thread of `pid`."""
    out = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                out.add(line.split()[1])
    return out


def _one_read(device: str) -> None:
    import mmap

    fd = os.open(device, os.O_RDONLY | os.O_DIRECT)  # a request, so that any worker threads exist
    try:
        assert os.preadv(fd, [mmap.mmap(-1, 4096)], 0) == 4096
    finally:
        os.close(fd)


@pytest.mark.parametrize("pinned", [False, True])
def test_the_daemons_run_where_this_process_may_or_each_stack_on_one_cpu(tmp_path, scratch, monkeypatch, pinned):
    """By default a stack's daemons may run wherever this process may (pinned, they cost more
    inside the runs' shield: bench/README.md "The stack's floor is a wake-up across CPUs").
    With stack.PIN_DAEMONS each stack's daemons, every thread, are on one CPU, and two stacks
    serving at once (an array and its log) on two where there are two."""
    from boatload.provision.devmodel import stack as stack_module

    monkeypatch.setattr(stack_module, "PIN_DAEMONS", pinned)
    allowed = {str(c) for c in os.sched_getaffinity(0)}
    ours = _cpus_allowed(os.getpid())  # this process's Cpus_allowed_list, as /proc writes it
    params = presets.resolve("hdd-7200", "m")
    with modelled_image(image(tmp_path, 16, "a"), 16, params, scratch=scratch, name="pin-a") as a, \
            modelled_image(image(tmp_path, 16, "b"), 16, params, scratch=scratch, name="pin-b") as b:
        cpus = []
        for stack in (a, b):
            _one_read(stack.device)
            kit, fuse = _cpus_allowed(stack.nbdkit.pid), _cpus_allowed(stack.nbdfuse.pid)  # every thread's
            if not pinned:
                assert kit == fuse == ours, (kit, fuse, ours)
                continue
            assert len(kit) == 1 and kit == fuse, (kit, fuse)
            cpus.append(kit.pop())
    if pinned:
        assert set(cpus) <= allowed and len(set(cpus)) == min(2, len(allowed)), cpus


@pytest.mark.parametrize("preset", ["hdd-7200", "raid-hdd", "ssd-2008"])
def test_an_fsync_pays_for_writing_the_dirty_blocks_out(tmp_path, scratch, preset):
    params = presets.resolve(preset, "m")
    with modelled_image(image(tmp_path, 256), 256, params, scratch=scratch, name=preset) as stack:
        r = fiocheck.fsync_writeout(stack.device, 256 * MiB, params, blocks=48)
        stats = stack.stats()
    assert r["n"] == 48 and stats["flushes"] >= 1, (r, stats)
    assert r["fsync_us"] >= r["least_us"], r
    if params["kind"] == "ssd":
        # no write cache to write out: the flush costs flush_us (the stack's fsync path adds its own)
        assert r["least_us"] == params["flush_us"] and stats["extents_written"] == 0, (r, stats)
        return
    # writes were acknowledged from the cache (one to the platter would seek: ~seek_avg_ms);
    # the flush wrote them out, in LBA order
    assert r["write_us"] < params["seek_avg_ms"] * 1000 / 2, r
    assert r["fsync_us"] <= r["most_us"] * (1 + TOLERANCE), r
    assert stats["extents_written"] == 48, stats


def _fs_with_fsyncs(device: str, mnt: Path, write_cache: str) -> None:
    """mkfs.ext4 and mount on `device` with its write cache set, then fsync
    ten small files."""
    Path(f"/sys/block/{Path(device).name}/queue/write_cache").write_text(write_cache)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", device], check=True)
    mnt.mkdir()
    subprocess.run(["mount", device, str(mnt)], check=True)
    try:
        for i in range(10):
            fd = os.open(mnt / f"f{i}", os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"x" * 4096)
            os.fsync(fd)
            os.close(fd)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
        # the loop driver keeps the setting after detaching: put its default back
        Path(f"/sys/block/{Path(device).name}/queue/write_cache").write_text("write back")


@pytest.mark.parametrize("write_cache", ["write through", "write back"])
def test_write_through_sends_no_flush_to_the_model(tmp_path, scratch, write_cache):
    params = presets.resolve("hdd-7200", "m")
    with modelled_image(image(tmp_path, 64), 64, params, scratch=scratch, name="wt") as stack:
        # nbdfuse turns the close of the FUSE file after losetup into a flush
        before = stack.stats()["flushes"]
        _fs_with_fsyncs(stack.device, tmp_path / "mnt", write_cache)
        flushes = stack.stats()["flushes"] - before  # before teardown's own close
    if write_cache == "write through":
        assert flushes == 0
    else:
        assert flushes >= 10  # at least one per fsync


def test_the_error_filter_fails_io_only_while_triggered(tmp_path, scratch):
    params = presets.resolve(SSD_ABOVE_FLOOR, "m")
    faults = {"read_rate": 1.0, "write_rate": 1.0, "trigger": True}
    with modelled_image(image(tmp_path, 16), 16, params, scratch=scratch, name="faulty", faults=faults) as stack:
        fd = os.open(stack.device, os.O_RDONLY | os.O_DIRECT)
        try:
            import mmap

            buf = mmap.mmap(-1, 4096)
            assert os.preadv(fd, [buf], 0) == 4096
            stack.trigger.touch()
            with pytest.raises(OSError) as e:
                os.preadv(fd, [buf], 8192)
            assert e.value.errno == 5  # EIO
            stack.trigger.unlink()
            assert os.preadv(fd, [buf], 8192) == 4096
        finally:
            os.close(fd)


def test_a_model_the_filter_refuses_at_start_is_one_line_giving_nbdkits_reason(tmp_path, scratch):
    """nbdfuse sees only the server hanging up ("server disconnected unexpectedly", as a CI run
    said): the line gives nbdkit's own reason, its filter refusing the model."""
    params = {**presets.resolve("ssd-2008", "m"), "stack_us": 900.0}  # a stack slower than any request of it
    with pytest.raises(TargetError) as e:
        with modelled_image(image(tmp_path, 16), 16, params, scratch=scratch, name="refused", calibrated=False):
            pass
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("targets.refused: nbdkit exited at start (status "), msg
    assert "read_latency_us gives 103.9 us per request" in msg and "(stack_us)" in msg, msg
    assert wait_clean(scratch) == {}


def test_nbdkit_dying_mid_run_is_one_line_naming_it(tmp_path, scratch):
    params = presets.resolve(SSD_ABOVE_FLOOR, "m")
    with pytest.raises(TargetError) as e:
        with modelled_image(image(tmp_path, 16), 16, params, scratch=scratch, name="victim") as stack:
            os.kill(stack.nbdkit.pid, signal.SIGKILL)
            stack.nbdkit.wait()
            fd = os.open(stack.device, os.O_RDONLY | os.O_DIRECT)
            try:
                import mmap

                os.preadv(fd, [mmap.mmap(-1, 4096)], 0)
            finally:
                os.close(fd)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("targets.victim: nbdkit (pid ") and "died mid-run (killed by signal 9)" in msg
    assert wait_clean(scratch) == {}


HOLD = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from boatload.provision.devmodel import presets
    # SIGINT as a terminal process has it, even when the tests run in a background job
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from boatload.provision.devmodel.device import modelled_image
    with modelled_image(None, 32, presets.resolve("hdd-7200", "m"), scratch=Path(sys.argv[1]), name="held") as st:
        print(st.device, flush=True)
        time.sleep(120)
    """
)


def _held(scratch: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(scratch)], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("/dev/loop"), line
    held = leftovers(scratch)
    assert held.get("processes") and held.get("nbd") and held.get("mounts"), held
    return p


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_leaves_nothing(scratch, sig):
    p = _held(scratch)
    p.send_signal(sig)
    p.wait(60)
    assert wait_clean(scratch) == {}


def test_sigkill_then_cleanup_leaves_nothing(scratch, monkeypatch):
    p = _held(scratch)
    p.kill()
    p.wait(60)
    time.sleep(0.5)
    assert leftovers(scratch).get("nbd"), "a SIGKILL leaves the stack for cleanup"
    # not root: refused before anything is touched, naming the stack
    monkeypatch.setattr(cleanup_module, "is_root", lambda: False)
    with pytest.raises(cleanup_module.NeedsRoot, match=r"1 modelled device stack\(s\) under .* needs root"):
        cleanup(scratch)
    assert leftovers(scratch).get("nbd")
    monkeypatch.undo()
    done = cleanup(scratch)
    assert any("unmounted FUSE" in d for d in done) and any("detached loop device" in d for d in done), done
    assert wait_clean(scratch) == {}
