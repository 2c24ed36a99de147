"""A modelled block device: an image served by nbdkit through the device-model
filter (and, with `faults:`, nbdkit's error filter), exposed as a file by
nbdfuse, attached as a loop device with direct I/O (without it the loop
device reads through the FUSE file's page cache and the model never shows).

Everything is recorded in the ledger before it is made and undone by the
caller's Teardown in reverse order: loop device, FUSE mount (nbdfuse exits),
nbdkit, the stack's directory (pidfile, logs, the model's counts). nbdkit
and nbdfuse share a socket pair, so there is no socket file. nbdkit runs with
--exit-with-parent, and both daemons in their own session, so a terminal's
Ctrl-C reaches only us and the teardown, not the device under the mounted
file system. After a SIGKILL, boatload.provision.devmodel.leftovers finds the rest.

A stack that must outlive us (`outlive_parent`: a disk holding swap, a
`boatload target up`) gives nbdkit a parent of its own that lives as long as
it does, coreutils `timeout 0` (no time limit): nbdkit 1.32 sets
PR_SET_PDEATHSIG to SIGTERM at start even without --exit-with-parent, so
with us as its parent it would stop serving the moment we exit. `timeout`
passes SIGTERM, SIGINT and SIGHUP on to nbdkit and exits as it does.

With PIN_DAEMONS, nbdkit and nbdfuse run on one CPU (`next_daemon_cpu`): a
request hops between their threads several times, and a hop to a sleeping
thread on the other CPU is a cross-CPU wake-up. Off: it lowered the least a
request costs outside the runs' shield and raised it inside it, where every
run calibrates and measures (bench/README.md "The stack's floor is a wake-up
across CPUs").
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from boatload.provision.blockdev import loop_backing_file
from boatload.provision.devmodel import native
from boatload.provision.hostops import Teardown, check, mount_at, run, subdir, token, why
from boatload.provision.ledger import Ledger, pid_start
from boatload.base.signals import deferred_signals
from boatload.base.targetspec import TargetError
from boatload.base.tools import find as find_tool

STACK_TOOLS = ("nbdkit", "nbdfuse", "fusermount3", "losetup", "timeout", "taskset")
START_TIMEOUT = 20.0


def fault_args(faults: dict | None, trigger: Path) -> list[str]:
    """nbdkit error-filter parameters for a target's checked `faults:`:
    EIO on reads and/or writes at a rate, only while `trigger` exists if
    faults["trigger"] is true."""
    if not faults:
        return []
    args = [f"error={faults.get('error', 'EIO')}"]
    args.append(f"error-pread-rate={faults.get('read_rate', 0)}")
    args.append(f"error-pwrite-rate={faults.get('write_rate', 0)}")
    if faults.get("trigger"):
        args.append(f"error-file={trigger}")
    return args


@dataclass
class Stack:
    """A running stack; `device` is the loop device to mkfs and mount."""

    name: str
    dir: Path
    image: Path
    device: str
    nbdkit: subprocess.Popen
    nbdfuse: subprocess.Popen
    stats_file: Path
    trigger: Path  # with faults: {trigger: true}, errors happen while this file exists
    final: dict  # the model's counts, kept at teardown before the directory goes

    def nbdkit_failure(self) -> str | None:
        """One line if nbdkit is no longer running (it never exits on its own)."""
        code = self.nbdkit.poll()
        if code is None:
            return None
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        return (
            f"targets.{self.name}: nbdkit (pid {self.nbdkit.pid}) serving the modelled device "
            f"{self.image.name} died mid-run ({how}){last_line(self.dir / 'nbdkit.log')}"
        )

    def check_alive(self) -> None:
        msg = self.nbdkit_failure()
        if msg:
            raise TargetError(msg)

    def stats(self) -> dict:
        """The model's counts (reads, writes, flushes, fua_writes ...), as the
        filter last wrote them: after every flush and when a connection
        closes; after teardown, the last counts it wrote."""
        return read_stats(self.stats_file) or self.final


def read_stats(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def last_line(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return f": {lines[-1].strip()}" if lines else ""


def resolve_stack_tools() -> dict[str, str]:
    out = {}
    for t in STACK_TOOLS:
        path = find_tool(t)
        if path is None:
            pkg = {"nbdkit": "nbdkit", "nbdfuse": "libnbd-bin", "fusermount3": "fuse3", "losetup": "mount",
                   "timeout": "coreutils", "taskset": "util-linux"}[t]
            raise TargetError(f"modelled devices need `{t}`, which is not installed (Debian package {pkg})")
        out[t] = path
    native.require_built()
    if not os.path.exists("/dev/fuse"):
        raise TargetError("modelled devices need /dev/fuse (FUSE), which this machine does not have")
    return out


def _stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)


#: the daemons on one CPU: off, as runs measure inside the shield (bench/stackfloor.py measures both)
PIN_DAEMONS = False
_stacks_pinned = itertools.count()


def next_daemon_cpu() -> int:
    """The CPU the next stack's daemons run on: the CPUs this process may use
    from the last down, one stack after another, so that two stacks serving
    at once (an array and its log) do not take turns on one CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1 - next(_stacks_pinned) % len(cpus)]


def _spawn(argv: list[str], log: Path, conn: socket.socket | None = None, pass_fds: tuple = ()) -> subprocess.Popen:
    """`conn`, if given, is the daemon's stdin and stdout (nbdkit -s)."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv, stdin=conn if conn else subprocess.DEVNULL, stdout=conn if conn else out, stderr=out,
            start_new_session=True, close_fds=True, pass_fds=pass_fds,
        )


def _exited_at_start(kit: subprocess.Popen, d: Path, name: str) -> TargetError:
    return TargetError(f"targets.{name}: nbdkit exited at start (status {kit.returncode}){last_line(d / 'nbdkit.log')}")


def _wait_for(cond, proc: subprocess.Popen, what: str, log: Path, name: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not cond():
        if proc.poll() is not None:
            raise TargetError(f"targets.{name}: {what} exited at start (status {proc.returncode}){last_line(log)}")
        if time.monotonic() > deadline:
            raise TargetError(f"targets.{name}: {what} did not come up within {START_TIMEOUT:.0f} s{last_line(log)}")
        time.sleep(0.02)


def _unmount_fuse(mnt: Path, fusermount: str) -> None:
    if mount_at(mnt) is not None:
        check(run([fusermount, "-u", str(mnt)], timeout=60), f"unmount FUSE {mnt}")


def _detach(device: str, backing: Path, losetup: str) -> None:
    now = loop_backing_file(device)
    if now is None:
        return  # already detached
    if now != str(backing):
        raise TargetError(f"{device} is no longer backed by {backing}; leaving it")
    check(run([losetup, "-d", device], timeout=120), f"detach {device}")


def attach(image: Path, params: dict, *, scratch: Path, name: str, ledger: Ledger, undo: Teardown,
           faults: dict | None = None, tools: dict[str, str] | None = None, outlive_parent: bool = False) -> Stack:
    """Serve `image` through the model `params` (C names, from presets.resolve
    plus the stack's measured costs) and attach it; every undo step goes on
    `undo`. Returns the running Stack.

    `outlive_parent`: nbdkit keeps serving after a SIGKILL of this process,
    until cleanup stops it. A disk that holds a swap file needs that: the
    kernel can swap a file off only while its disk answers (and its file
    system is still writable), so a dead device would leave the swap on
    until the next boot."""
    tools = tools or resolve_stack_tools()
    d = subdir(Path(scratch), "nbd") / f"{name}-{token()}"
    mnt = d / "mnt"
    stats, trigger = d / "stats.json", d / "fault"

    with deferred_signals():
        rid = ledger.record("nbd", d)
        os.mkdir(d, 0o700)
        undo.step(f"remove {d}", lambda: shutil.rmtree(d, ignore_errors=True), release=(ledger, rid))
        os.mkdir(mnt, 0o700)
    final: dict = {}
    undo.step("keep the model's counts", lambda: final.update(read_stats(stats)))

    # nbdkit and nbdfuse talk over a socket pair (nbdkit -s, nbdfuse --fd):
    # no socket file to leave behind, and a socket's 107-byte path limit
    # does not meet a deep scratch directory
    ours, theirs = socket.socketpair()
    try:
        # nbdkit: the error filter (if any) outside the model, the file plugin inside
        filters = ["--filter=error"] if faults else []
        keeper = [tools["timeout"], "0"] if outlive_parent else []  # see the module's docstring
        # taskset execs: the pid is the daemon's
        one_cpu = [tools["taskset"], "--cpu-list", str(next_daemon_cpu())] if PIN_DAEMONS else []
        argv = [
            *one_cpu, *keeper, tools["nbdkit"], "-s", *([] if outlive_parent else ["--exit-with-parent"]),
            "--pidfile", str(d / "nbdkit.pid"),
            *filters, f"--filter={native.filter_path()}", "file", str(image),
            *[f"dm-{a}" for a in native.param_args(params)], f"dm-stats={stats}", *fault_args(faults, trigger),
        ]
        with deferred_signals():
            kit_rid = ledger.record("daemon", d / "nbdkit.pid", role="nbdkit", stack=str(d))
            kit = _spawn(argv, d / "nbdkit.log", conn=ours)
            undo.step(f"stop nbdkit (pid {kit.pid})", lambda: _stop(kit), release=(ledger, kit_rid))
            ledger.note(kit_rid, daemon_pid=kit.pid, daemon_start=pid_start(kit.pid), argv=shlex.join(argv))

        # nbdfuse: the export as the file mnt/nbd
        with deferred_signals():
            fuse_rid = ledger.record("fuse", mnt, stack=str(d))
            fuse_pid_rid = ledger.record("daemon", mnt, role="nbdfuse", stack=str(d))
            fuse = _spawn([*one_cpu, tools["nbdfuse"], str(mnt), "--fd", str(theirs.fileno())], d / "nbdfuse.log",
                          pass_fds=(theirs.fileno(),))
            undo.step(f"stop nbdfuse (pid {fuse.pid})", lambda: _stop(fuse), release=(ledger, fuse_pid_rid))
            undo.step(f"unmount FUSE {mnt}", lambda: _unmount_fuse(mnt, tools["fusermount3"]),
                      release=(ledger, fuse_rid))
            ledger.note(fuse_pid_rid, daemon_pid=fuse.pid, daemon_start=pid_start(fuse.pid))
    finally:
        ours.close()
        theirs.close()
    try:
        _wait_for(lambda: mount_at(mnt) is not None and (mnt / "nbd").exists(), fuse, "nbdfuse", d / "nbdfuse.log",
                  name)
    except TargetError:
        if kit.poll() is None:
            raise
        # nbdfuse only saw the server hang up: nbdkit's own reason (its filter refusing the model) says why
        _stop(kit)
        raise _exited_at_start(kit, d, name) from None
    _wait_for(lambda: (d / "nbdkit.pid").exists(), kit, "nbdkit", d / "nbdkit.log", name)  # cleanup reads it
    if kit.poll() is not None:
        raise _exited_at_start(kit, d, name)

    # the loop device, direct I/O on
    backing = mnt / "nbd"
    with deferred_signals():
        loop_rid = ledger.record("loop", backing, stack=str(d))
        r = run([tools["losetup"], "--find", "--show", "--direct-io=on", str(backing)], timeout=120)
        if r.returncode != 0:
            ledger.release(loop_rid, by="never-created")
            raise TargetError(f"targets.{name}: `{shlex.join(r.args)}` failed ({why(r)})")
        device = r.stdout.strip()
        undo.step(f"detach {device}", lambda: _detach(device, backing, tools["losetup"]), release=(ledger, loop_rid))
        ledger.note(loop_rid, device=device)
    dio = Path("/sys/block") / Path(device).name / "loop" / "dio"
    if dio.exists() and dio.read_text().strip() != "1":
        raise TargetError(f"targets.{name}: {device} did not take direct I/O, so the model would not show")
    return Stack(name, d, Path(image), device, kit, fuse, stats, trigger, final)
