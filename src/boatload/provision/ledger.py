"""The ledger: an append-only record of what provisioning created.

`<scratch>/ledger.jsonl` holds one JSON object per line:

    {"op": "create",  "id": "…", "kind": "image|loop|mount|dir|cgroup|swap|device|userdir", "path": "…",
     "pid": 123, "pid_start": "…", "time": 1700000000.0}
    {"op": "note",    "id": "…", <more facts: inode, dev, device, …>}
    {"op": "release", "id": "…", "pid": 456, "time": …, "by": "teardown|cleanup"}

A resource is recorded *before* it is created, so a process killed at any
point leaves a line that says what might exist. Every append is one write(2)
under an exclusive flock, followed by fsync. Lines that do not parse (a
damaged file) are skipped when reading; `boatload.provision.cleanup` also scans
the system, so it does not depend on the ledger alone.

`path` is what identifies the resource: the image file for "image" (under
`<scratch>/images/`, or an external log's image under
`/dev/shm/boatload-<hash>/`), the image file backing the loop device for
"loop", the mount point for "mount", the directory for "dir", the cgroup
directory of a memory limit for "cgroup" (e.g.
`/sys/fs/cgroup/memory/boatload-<pid>-<rand>-<scratch tag>`), the swap file for "swap"
(under `<scratch>/swap/`), the user's block device a `device` target
formats for "device" (`/dev/sdb`: its write cache is put back), and the
`boatload-<pid>-<rand>` directory a run makes under a `mount` target's path
for "userdir"; for a modelled device (boatload.provision.devmodel), the stack's
directory `<scratch>/nbd/<name>-<pid>-<rand>` for "nbd", its FUSE mount
point for "fuse", the nbdkit or nbdfuse process for "daemon" (`path` its
pidfile or FUSE mount, the process's `daemon_pid` and `daemon_start` noted
once it runs).
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Ledger", "Resource", "KINDS", "pid_start", "pid_alive"]

KINDS = ("image", "loop", "mount", "dir", "cgroup", "swap", "device", "userdir", "nbd", "fuse", "daemon")
LEDGER_NAME = "ledger.jsonl"


def pid_start(pid: int) -> str | None:
    """Start time of a process (clock ticks since boot, /proc/<pid>/stat
    field 22), which tells a process from a later one that reuses its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold anything
    rest = stat[stat.rfind(")") + 2 :].split()
    # rest[0] is field 3 (state); field 22 is rest[19]
    return rest[19] if len(rest) > 19 else None


def pid_alive(pid: int | None, start: str | None = None) -> bool:
    """Is this process still running (not a zombie, and the same process if
    we know its start time)? Unknown pids count as dead."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # exists but unreadable: assume alive, touch nothing
    rest = stat[stat.rfind(")") + 2 :].split()
    if not rest or rest[0] in ("Z", "X"):
        return False
    if start is not None and len(rest) > 19 and rest[19] != start:
        return False
    return True


@dataclass
class Resource:
    """One resource as the ledger knows it: the create line plus notes."""

    id: str
    kind: str
    path: str
    pid: int | None
    pid_start: str | None
    released: bool = False
    facts: dict = field(default_factory=dict)


class Ledger:
    def __init__(self, scratch: Path):
        self.scratch = Path(scratch)
        self.path = self.scratch / LEDGER_NAME

    # -- writing ---------------------------------------------------------
    def _append(self, record: dict) -> None:
        line = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = "\n" + line  # a torn last line: start on a fresh one
            data = line.encode()
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)  # also drops the lock

    def record(self, kind: str, path: str | Path, **facts) -> str:
        """Append a create line for a resource about to be created; returns its id."""
        if kind not in KINDS:
            raise ValueError(f"ledger: unknown resource kind {kind!r}")
        rid = secrets.token_hex(8)
        pid = os.getpid()
        self._append(
            {
                "op": "create",
                "id": rid,
                "kind": kind,
                "path": str(path),
                "pid": pid,
                "pid_start": pid_start(pid),
                "time": round(time.time(), 3),
                **facts,
            }
        )
        return rid

    def note(self, rid: str, **facts) -> None:
        """Append facts learnt after creation (inode number, loop device…)."""
        self._append({"op": "note", "id": rid, **facts})

    def release(self, rid: str, by: str = "teardown") -> None:
        self._append(
            {"op": "release", "id": rid, "pid": os.getpid(), "time": round(time.time(), 3), "by": by}
        )

    # -- reading ---------------------------------------------------------
    def lines(self) -> list[dict]:
        """Every line that parses as a JSON object; damaged lines are skipped."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for line in raw.splitlines():
            try:
                obj = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(obj, dict) and isinstance(obj.get("id"), str):
                out.append(obj)
        return out

    def resources(self) -> dict[str, Resource]:
        """Resources by id, in creation order."""
        res: dict[str, Resource] = {}
        for obj in self.lines():
            op, rid = obj.get("op"), obj["id"]
            if op == "create":
                if obj.get("kind") not in KINDS or not isinstance(obj.get("path"), str):
                    continue
                pid = obj.get("pid")
                res[rid] = Resource(
                    id=rid,
                    kind=obj["kind"],
                    path=obj["path"],
                    pid=pid if isinstance(pid, int) else None,
                    pid_start=obj.get("pid_start") if isinstance(obj.get("pid_start"), str) else None,
                    facts={k: v for k, v in obj.items() if k not in ("op", "id", "kind", "path", "pid", "pid_start")},
                )
            elif rid in res:
                if op == "note":
                    res[rid].facts.update({k: v for k, v in obj.items() if k not in ("op", "id")})
                elif op == "release":
                    res[rid].released = True
        return res

    def get(self, rid: str) -> Resource | None:
        return self.resources().get(rid)
