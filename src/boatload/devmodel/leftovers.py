"""What killed runs' modelled devices left under a scratch directory: loop
devices backed by a stack's FUSE file, FUSE mounts, nbdkit and nbdfuse
processes, the stacks' directories (socket, pidfile, logs) and calibration
images in `<scratch>/nbd/`. boatload.cleanup calls undo() once the file
systems on top are unmounted.

A stack is left over when the process that made it is gone (its pid is in
the directory's name and in the ledger), or with force. A daemon is stopped
only if it is the very process the ledger noted (pid and start time), or if
its command line names the stack's directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from boatload.hostops import DIR_RE, IMAGE_RE, loop_devices, mount_at, run, why, write_sys
from boatload.ledger import Ledger, pid_alive
from boatload.tools import find as find_tool


def _cmdline_names(pid: int, d: Path) -> bool:
    try:
        return str(d).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def stop_daemon(pid: int, start: str | None, timeout: float = 5.0) -> bool:
    """SIGTERM, then SIGKILL after `timeout`; False if it was not running."""
    if not pid_alive(pid, start):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid, start):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline += timeout
        time.sleep(0.05)
    return True


def _stacks(scratch: Path, ledger: Ledger, force: bool) -> tuple[dict[Path, list], list[Path], set[str]]:
    """Left-over stack directories (with their ledger resources), calibration
    images, and the ids of every ledger resource that belongs to them."""
    nbd = scratch / "nbd"
    owners: dict[Path, list] = {}
    ids: set[str] = set()
    live: set[Path] = set()
    for r in ledger.resources().values():
        stack = r.facts.get("stack") or (r.path if r.kind == "nbd" else None)
        if r.released or not stack or Path(stack).parent != nbd:
            continue
        if force or not pid_alive(r.pid, r.pid_start):
            owners.setdefault(Path(stack), []).append(r)
            ids.add(r.id)
        else:
            live.add(Path(stack))
    try:
        names = sorted(os.listdir(nbd))
    except OSError:
        names = []
    images = []
    for n in names:
        p = nbd / n
        m = IMAGE_RE.match(n) or DIR_RE.match(n)
        if not m or p in live or (not force and pid_alive(int(m["pid"]))):
            continue
        if IMAGE_RE.match(n):
            images.append(p)
        else:
            owners.setdefault(p, [])
    for r in ledger.resources().values():
        if not r.released and r.kind == "image" and Path(r.path) in images:
            ids.add(r.id)
    return owners, images, live


def privileged(scratch: Path, force: bool = False) -> list[str]:
    """The left-over stacks whose undoing needs root (a FUSE mount or a loop
    device on it), one phrase for cleanup's refusal; [] if none."""
    stacks, _, _ = _stacks(Path(scratch), Ledger(Path(scratch)), force)
    backed = {dev["back-file"] for dev in loop_devices(find_tool("losetup"))} if stacks else set()
    held = [d for d in stacks if mount_at(d / "mnt") is not None or str(d / "mnt" / "nbd") in backed]
    return [f"{len(held)} modelled device stack(s)"] if held else []


def undo(scratch: Path, force: bool = False) -> tuple[list[str], list[str]]:
    """Tear down left-over stacks; (what was done, what failed), one line each."""
    scratch = Path(scratch)
    ledger = Ledger(scratch)
    stacks, images, _ = _stacks(scratch, ledger, force)
    done: list[str] = []
    failed: list[str] = []
    if not stacks and not images:
        return done, failed
    losetup, fusermount, umount = find_tool("losetup"), find_tool("fusermount3"), find_tool("umount")
    for d, resources in stacks.items():
        backing = str(d / "mnt" / "nbd")
        found = {r.facts.get("device"): r.facts.get("write_cache_before") for r in resources if r.kind == "loop"}
        for dev in loop_devices(losetup):
            if dev["back-file"] == backing:
                if found.get(dev["name"]) in ("write back", "write through"):  # the driver keeps it after detach
                    write_sys(Path("/sys/block") / Path(dev["name"]).name / "queue" / "write_cache", found[dev["name"]])
                r = run([losetup, "-d", dev["name"]], timeout=120)
                (done if r.returncode == 0 else failed).append(
                    f"detached loop device {dev['name']} (backed by {backing})" if r.returncode == 0
                    else f"detach {dev['name']}: {why(r)}"
                )
        mnt = d / "mnt"
        if mount_at(mnt) is not None:
            r = run([fusermount, "-u", str(mnt)], timeout=60) if fusermount else None
            if r is None or r.returncode != 0:
                r = run([umount, "-l", str(mnt)], timeout=60)
            (done if r.returncode == 0 else failed).append(
                f"unmounted FUSE {mnt}" if r.returncode == 0 else f"unmount FUSE {mnt}: {why(r)}"
            )
        pids = {(r.facts["daemon_pid"], r.facts.get("daemon_start"), r.facts.get("role", "daemon"))
                for r in resources if r.kind == "daemon" and isinstance(r.facts.get("daemon_pid"), int)}
        try:
            pid = int((d / "nbdkit.pid").read_text().strip())
            if _cmdline_names(pid, d):
                pids.add((pid, None, "nbdkit"))
        except (OSError, ValueError):
            pass
        for pid, start, role in sorted(pids, key=lambda x: x[0]):
            try:
                if stop_daemon(pid, start):
                    done.append(f"stopped {role} (pid {pid}) of {d.name}")
            except OSError as e:
                failed.append(f"stop {role} (pid {pid}): {e.strerror}")
        if mount_at(mnt) is None:
            shutil.rmtree(d, ignore_errors=True)
            if not d.exists():
                done.append(f"removed {d}")
        if not d.exists() and not mount_at(mnt):
            for r in resources:
                ledger.release(r.id, by="cleanup")
    for img in images:
        try:
            os.unlink(img)
            done.append(f"deleted image {img}")
        except OSError as e:
            failed.append(f"delete {img}: {e.strerror}")
    for r in ledger.resources().values():
        if not r.released and r.kind == "image" and Path(r.path) in images and not os.path.lexists(r.path):
            ledger.release(r.id, by="cleanup")
    return done, failed
