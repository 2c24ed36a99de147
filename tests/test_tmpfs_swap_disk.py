"""A tmpfs target on modelled hardware (`model:` on kind tmpfs): the disk its
pages are swapped to. The memory limit's swap file lands on an ext4 on the
modelled disk, the pages pushed out of the limit reach the model as writes,
and a signal or a SIGKILL + cleanup leaves no swap, mount, loop device or
daemon behind. Images live in the test's own scratch directory."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from targetlib import IS_ROOT, leftovers, scratch, wait_clean  # noqa: F401 - scratch is a fixture

from boatload.provision.cleanup import cleanup
from boatload.provision.hostops import mount_at
from boatload.provision.memlimit import MemoryLimitError, memory_limit
from boatload.provision.targets import provision
from boatload.base.targetspec import TargetError, parse_target

pytestmark = pytest.mark.skipif(not IS_ROOT or not os.path.exists("/dev/fuse"), reason="needs root and /dev/fuse")

MiB = 1 << 20
SPEC = {"kind": "tmpfs", "size_mb": 96, "model": "hdd-7200"}


def swaps_under(path: Path) -> list[str]:
    lines = Path("/proc/swaps").read_text().splitlines()[1:]
    return [ln.split()[0] for ln in lines if ln.split()[0].startswith(str(path))]


def sectors_written(sys_block: Path) -> int:
    return int((sys_block / "stat").read_text().split()[6])


def test_model_is_a_loop_disk_or_a_tmpfs_swap_disk_only():
    assert parse_target("t", SPEC).model == "hdd-7200"
    with pytest.raises(TargetError, match=r"^targets\.d\.model: only loop targets .* not kind 'dir'"):
        parse_target("d", {"kind": "dir", "model": "hdd-7200"})


def test_the_swap_file_and_the_pages_pushed_out_reach_the_model(scratch):
    with provision(parse_target("tmpfs-hdd", SPEC), scratch) as t:
        swap_dir = Path(t.provenance["swap_dir"])
        assert mount_at(str(swap_dir)).fstype == "ext4"
        assert mount_at(str(t.path)).fstype == "tmpfs"
        loop = Path("/sys/block") / Path(t.provenance["swap_disk"]["device"]).name
        written_before = sectors_written(loop)
        with memory_limit(32, 64, scratch, swap_on=swap_dir) as lim:
            assert Path(lim.provenance["swap_file"]).parent == swap_dir / "swap"
            assert swaps_under(swap_dir) == [lim.provenance["swap_file"]]
            # 48 MiB of random bytes written into the tmpfs by a process held to 32 MiB
            r = lim.run(["dd", "if=/dev/urandom", f"of={t.path}/fill", "bs=1M", "count=48"], capture_output=True)
            assert r.returncode == 0, r.stderr
        assert swaps_under(swap_dir) == []
        # at least the 16 MiB beyond the limit went to the swap disk
        written = (sectors_written(loop) - written_before) * 512
        assert written >= 16 * MiB, written
        largest = int((loop / "queue" / "max_sectors_kb").read_text()) * 1024
    model = t.provenance["model"]
    # and every request of it reached the model
    requests = model["counts"]["writes"] - model["counts_at_attach"]["writes"]
    assert requests >= written // largest, (requests, written, largest)
    assert leftovers(scratch) == {} and swaps_under(scratch) == []


def test_a_swap_dir_that_is_not_a_targets_mount_is_refused(scratch, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(MemoryLimitError, match=r"^swap: .*elsewhere is not a file system mounted under .*/mnt"):
        with memory_limit(32, 16, scratch, swap_on=elsewhere):
            pass
    assert not (elsewhere / "swap").exists() and swaps_under(tmp_path) == []


HOLD = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from boatload.provision.memlimit import memory_limit
    # SIGINT as a terminal process has it, even when the tests run in a background job
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from boatload.provision.targets import provision
    from boatload.base.targetspec import parse_target
    scratch = Path(sys.argv[1])
    spec = parse_target("held", {"kind": "tmpfs", "size_mb": 64, "model": "hdd-7200"})
    with provision(spec, scratch) as t:
        # 1 MiB of swap: the highest-priority swap on the machine takes other processes'
        # pages too under global reclaim, and swapoff reads each back from the model
        # (about 13 ms a page on hdd-7200): at most 256 pages here
        with memory_limit(32, 1, scratch, swap_on=Path(t.provenance["swap_dir"])) as lim:
            print(lim.provenance["swap_file"], flush=True)
            time.sleep(120)
    """
)


def _held(scratch: Path) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(scratch)], stdout=subprocess.PIPE, text=True)
    swap = p.stdout.readline().strip()
    assert swaps_under(scratch) == [swap], (swap, swaps_under(scratch))
    held = leftovers(scratch)
    assert held.get("nbd") and held.get("mounts") and held.get("processes"), held
    return p, swap


def _where(pid: int) -> str:
    """What a process that does not end is doing: its own and its children's
    command and kernel wait channel, and the machine's swaps."""
    out = []
    for q in [pid, *map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]:
        try:
            cmd = Path(f"/proc/{q}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
            out.append(f"{q} {Path(f'/proc/{q}/wchan').read_text()} {cmd}")
        except OSError:
            pass
    return "; ".join(out) + " | " + " ".join(Path("/proc/swaps").read_text().split())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_leaves_no_swap_and_no_stack(scratch, sig):
    p, _ = _held(scratch)
    p.send_signal(sig)
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running 60 s after {signal.Signals(sig).name}: {_where(p.pid)}")
    assert wait_clean(scratch) == {} and swaps_under(scratch) == []


def test_sigkill_then_cleanup_swaps_off_before_it_unmounts(scratch):
    p, swap = _held(scratch)
    p.kill()
    p.wait(60)
    time.sleep(0.5)
    assert swaps_under(scratch) == [swap], "a SIGKILL leaves the swap file on"
    done = cleanup(scratch)
    assert any("swapoff" in d or "swapped off" in d for d in done), done
    assert swaps_under(scratch) == []
    assert wait_clean(scratch) == {}
