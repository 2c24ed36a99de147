"""`boatload devices`: every block device of this machine, what uses it, and
whether boatload would accept it as a `device` target, and if not why.
Read only: sysfs and /proc; signatures are probed (wipefs --no-act, blkid -p)
only on devices nothing uses."""

from __future__ import annotations

from pathlib import Path

from boatload.provision import blockdev
from boatload.provision.devmodel.leftovers import dead_servers
from boatload.provision.targets.guard import assess
from boatload.base.targetspec import LOOP_FS, MIN_SIZE_MB, MiB

SMALLEST = min(MIN_SIZE_MB[fs] for fs in LOOP_FS) * MiB  # the file systems a device target can take


def survey(scratch: Path | None) -> list[dict]:
    out = []
    dead = dead_servers(scratch) if scratch is not None else {}
    for dev in blockdev.all_devices():
        a = assess(dev, scratch)
        size = dev.size_bytes
        if a.in_use:
            reason = a.in_use
        elif size == 0:
            reason = "empty (size 0: no medium, or a loop device with nothing attached)"
        elif dev.read_only:
            reason = "read-only"
        elif size < SMALLEST:
            reason = f"{size // MiB} MiB is smaller than any file system boatload makes ({SMALLEST // MiB} MiB)"
        else:
            reason = None
        rotational = dev.queue("rotational")
        out.append({
            "path": dev.path,
            "identity": blockdev.identity(dev),
            "accepted": reason is None,
            "reason": reason,
            "size_bytes": size,
            "model": blockdev.model(dev),
            "rotational": None if rotational is None else rotational == "1",
            "in_use": a.in_use,
            "signatures": a.signatures,
            "wipe_needed": bool(a.signatures),
            "dead_stack": dead.get(dev.path),  # a modelled device whose nbdkit is gone
        })
    return out


def _size(n: int) -> str:
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{n}B"


def render(rows: list[dict]) -> list[str]:
    """The human listing: one line per device, then its identity."""
    lines = []
    for r in rows:
        if r["accepted"]:
            status = "accepted" + (f", with wipe (carries {', '.join(r['signatures'])})" if r["wipe_needed"] else "")
        else:
            status = f"refused: {r['reason']}"
        rot = {True: "rotational", False: "non-rotational", None: "?"}[r["rotational"]]
        lines.append(f"{r['path']:<16} {_size(r['size_bytes']):>7} {rot:<14} {r['model'] or '-':<16} {status}")
        lines.append(f"{'':<16} identity: {r['identity']}")
        if r.get("dead_stack"):
            lines.append(f"{'':<16} {r['dead_stack']}")
    return lines
