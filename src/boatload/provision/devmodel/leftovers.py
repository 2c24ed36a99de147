"""What killed runs' modelled devices left under a scratch directory: loop
devices backed by a stack's FUSE file, FUSE mounts, nbdkit and nbdfuse
processes, the stacks' directories (socket, pidfile, logs) and calibration
images in `<scratch>/nbd/`. boatload.provision.cleanup calls undo() once the file
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

from boatload.provision.hostops import DIR_RE, IMAGE_RE, loop_devices, mount_at, run, why, write_sys
from boatload.provision.ledger import Ledger, pid_alive
from boatload.base.tools import find as find_tool


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


def _stacks(scratch: Path, ledger: Ledger, force: bool,
            only_pid: int | None = None) -> tuple[dict[Path, list], list[Path], set[str]]:
    """Left-over stack directories (with their ledger resources), calibration
    images, and the ids of every ledger resource that belongs to them.
    `only_pid`: just what that (exited) process made, e.g. a `target up`."""

    def gone(pid: int, start: str | None = None) -> bool:
        if only_pid is not None:
            return pid == only_pid
        return force or not pid_alive(pid, start)

    nbd = scratch / "nbd"
    owners: dict[Path, list] = {}
    ids: set[str] = set()
    live: set[Path] = set()
    for r in ledger.resources().values():
        stack = r.facts.get("stack") or (r.path if r.kind == "nbd" else None)
        if r.released or not stack or Path(stack).parent != nbd:
            continue
        if gone(r.pid, r.pid_start):
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
        if not m or p in live or not gone(int(m["pid"])):
            continue
        if IMAGE_RE.match(n):
            images.append(p)
        else:
            owners.setdefault(p, [])
    for r in ledger.resources().values():
        if not r.released and r.kind == "image" and Path(r.path) in images:
            ids.add(r.id)
    return owners, images, live


def _pidfile_pid(d: Path) -> int | None:
    try:
        return int((d / "nbdkit.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def dead_server(d: Path, resources: list, backed: dict[str, str]) -> str | None:
    """One line if the stack `d` still has its loop device but the nbdkit
    serving it is gone (killed while its target was up): every I/O of that
    device is an error. `backed` maps FUSE files to the loop devices on them."""
    device = backed.get(str(d / "mnt" / "nbd"))
    kits = [r for r in resources if r.kind == "daemon" and r.facts.get("role") == "nbdkit"
            and isinstance(r.facts.get("daemon_pid"), int)]
    if device is None or not kits:
        return None
    kit = kits[-1]
    pid, served = kit.facts["daemon_pid"], _pidfile_pid(d)
    # with a keeper (boatload.provision.devmodel.stack), daemon_pid is the keeper's and the pidfile nbdkit's
    alive = pid_alive(pid, kit.facts.get("daemon_start")) and (served is None or _cmdline_names(served, d))
    if alive:
        return None
    return (f"targets.{d.name.rsplit('-', 2)[0]}: the nbdkit (pid {served or pid}) serving modelled device "
            f"{device} is gone, so every I/O on {device} fails{_last_line(d / 'nbdkit.log')}")


def _last_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return f" (nbdkit's last words: {lines[-1]})" if lines else ""


def dead_servers(scratch: Path) -> dict[str, str]:
    """Every loop device of `scratch` whose stack's nbdkit is gone, whoever
    made it: device -> dead_server's line (for `boatload devices`)."""
    scratch = Path(scratch)
    by_stack: dict[Path, list] = {}
    for r in Ledger(scratch).resources().values():
        stack = r.facts.get("stack")
        if not r.released and stack and Path(stack).parent == scratch / "nbd":
            by_stack.setdefault(Path(stack), []).append(r)
    if not by_stack:
        return {}
    backed = {dev["back-file"]: dev["name"] for dev in loop_devices(find_tool("losetup"))}
    out = {}
    for d, resources in by_stack.items():
        line = dead_server(d, resources, backed)
        if line:
            out[backed[str(d / "mnt" / "nbd")]] = line
    return out


def privileged(scratch: Path, force: bool = False, only_pid: int | None = None) -> list[str]:
    """The left-over stacks whose undoing needs root (a FUSE mount or a loop
    device on it), one phrase for cleanup's refusal; [] if none."""
    stacks, _, _ = _stacks(Path(scratch), Ledger(Path(scratch)), force, only_pid)
    backed = {dev["back-file"] for dev in loop_devices(find_tool("losetup"))} if stacks else set()
    held = [d for d in stacks if mount_at(d / "mnt") is not None or str(d / "mnt" / "nbd") in backed]
    return [f"{len(held)} modelled device stack(s)"] if held else []


def undo(scratch: Path, force: bool = False, only_pid: int | None = None) -> tuple[list[str], list[str]]:
    """Tear down left-over stacks; (what was done, what failed), one line each."""
    scratch = Path(scratch)
    ledger = Ledger(scratch)
    stacks, images, _ = _stacks(scratch, ledger, force, only_pid)
    done: list[str] = []
    failed: list[str] = []
    if not stacks and not images:
        return done, failed
    losetup, fusermount, umount = find_tool("losetup"), find_tool("fusermount3"), find_tool("umount")
    backed = {dev["back-file"]: dev["name"] for dev in loop_devices(losetup)} if stacks else {}
    for d, resources in stacks.items():
        died = dead_server(d, resources, backed)
        if died:
            done.append(died)
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
