"""What the target tests share: an independent view of the system (mounts,
loop devices, write cache and flush counters read from /proc, /sys and
losetup, not through boatload), the target specs they provision, and the
`scratch` fixture that never leaves anything behind."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from boatload.provision.cleanup import cleanup
from boatload.base.targetspec import TargetSpec, parse_target

IS_ROOT = os.geteuid() == 0
root = pytest.mark.skipif(not IS_ROOT, reason="needs root (mount, loop devices)")

#: ssd-2008 with a slower read, for tests of faults, dying daemons and cleanup that want a quick device:
#: ssd-2008's own 512-byte read (103.9 us) sits near the least a request costs through the stack
#: (61-90 us on an idle 2-CPU machine, above 119.5 us at times when tests load both CPUs), and a
#: data device's model is refused when the stack is more than 15 % slower than it
SSD_ABOVE_FLOOR = {"preset": "ssd-2008", "read_latency_us": 200}

SIZES = {"tmpfs": 64, "ext2": 64, "ext3": 64, "ext4": 64, "xfs": 300, "btrfs": 128}

# The start of a child that a test signals once it printed READY, and `wait(seconds)`, its wait for the
# signal. Python runs a handler between bytecodes: a signal landing after its last look and before a
# blocking call (time.sleep's clock_nanosleep) waits for the call to end, 60 s (CI, once in about 20
# runs). Its byte in the wakeup pipe does not: select returns at once and the handler runs.
SIGNAL_WAIT = '''
import os as _os, select as _select, signal as _signal
_woken, _wake = _os.pipe()
_os.set_blocking(_wake, False)
_signal.set_wakeup_fd(_wake)
def wait(seconds):
    _select.select([_woken], [], [], seconds)
'''


def spec_for(fs: str, **kw) -> TargetSpec:
    kind = "tmpfs" if fs == "tmpfs" else "dir" if fs == "dir" else "loop"
    mapping = {"kind": kind, "fs": fs, **({"size_mb": SIZES[fs]} if fs in SIZES else {}), **kw}
    return parse_target(fs, mapping)


def clean_scratch(tmp_path: Path, left: Callable[[Path], dict]):
    """A scratch directory that ends with nothing `left` reports, even when
    the test failed half way (what it left is undone, then checked)."""
    s = (tmp_path / "scratch").resolve()
    yield s
    if IS_ROOT and left(s):
        cleanup(s, force=True)
    assert left(s) == {}


@pytest.fixture
def scratch(tmp_path):
    yield from clean_scratch(tmp_path, leftovers)


# -- independent view of the system ------------------------------------------


def _unescape(s: str) -> str:
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mounts_under(path: Path) -> dict[str, str]:
    """mount point -> fs type, for mounts at or below `path`."""
    out = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        parts = line.split()
        mp = _unescape(parts[4])
        fstype = parts[parts.index("-") + 1]
        if mp == str(path) or mp.startswith(str(path) + "/"):
            out[mp] = fstype
    return out


def loops_under(path: Path) -> dict[str, str]:
    """loop device -> backing file, for backing files below `path`."""
    r = subprocess.run(["losetup", "-J", "-l"], capture_output=True, text=True)
    if not r.stdout.strip():
        return {}
    out = {}
    for d in json.loads(r.stdout)["loopdevices"]:
        back = (d.get("back-file") or "").removesuffix(" (deleted)")
        if back.startswith(str(path) + "/"):
            out[d["name"]] = back
    return out


def log_image_dir(scratch: Path) -> Path:
    """Where the external log images of `scratch` live (the documented naming)."""
    return Path("/dev/shm") / f"boatload-{hashlib.sha256(str(scratch).encode()).hexdigest()[:16]}"


def leftovers(scratch: Path) -> dict:
    """Everything provisioning may leave behind; {} means clean."""
    found = {}
    if m := mounts_under(scratch):
        found["mounts"] = m
    if IS_ROOT and (lo := {**loops_under(scratch), **loops_under(log_image_dir(scratch))}):
        found["loops"] = lo
    for sub in ("images", "mnt", "dirs", "nbd"):
        d = scratch / sub
        if d.is_dir() and (names := sorted(os.listdir(d))):
            found[sub] = names
    if procs := processes_naming(scratch):
        found["processes"] = procs
    if log_image_dir(scratch).exists():
        found["shm"] = sorted(os.listdir(log_image_dir(scratch))) or ["(empty directory)"]
    return found


def processes_naming(path: Path) -> list[str]:
    """Command lines of running processes that name `path` (a modelled
    device's nbdkit and nbdfuse do)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(path).encode() in cmd and state != "Z":
            out.append(cmd.replace(b"\0", b" ").decode(errors="replace").strip())
    return out


def write_cache(device: str) -> str:
    return Path(f"/sys/block/{Path(device).name}/queue/write_cache").read_text().strip()


def flushes(device: str) -> int:
    """Flush requests the block device completed (field 16 of /sys/block/<dev>/stat)."""
    return int(Path(f"/sys/block/{Path(device).name}/stat").read_text().split()[15])


def wait_clean(scratch: Path, timeout: float = 5.0) -> dict:
    deadline = time.monotonic() + timeout
    while (left := leftovers(scratch)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
