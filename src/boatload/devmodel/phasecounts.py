"""What reached a modelled device during each timed phase of a worker run.

The device-model filter keeps its counts current after every request in
`<stack>/stats.json.live` (native/devmodel/filter.c), a file it maps shared;
`stats.json` itself is rewritten only after a flush and at close, so its
writes and modelled time can lag a phase by everything since the last
flush (all of a write-through device's run). `PhaseCounts` is a
`run_worker(on_phase=...)` hook: at each phase's edges, outside its timed
window, it reads the live counts of every modelled device of the target
(`model`, and `log_model` for a modelled log), and `phases()` gives each
phase's differences. Requests the kernel still had queued at a phase's end
fall to the next phase.

Beside what the model counted (requests, bytes, reads that began where the
request before them ended, the time it charged), each device's loop device
is read from /sys/block/<loop>/stat at the same edges: the requests as the
file system sent them, before nbdfuse, and how many were in flight (the
mean queue depth while busy: time in queue over busy time).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

# a sequence number (odd while the filter updates), then these
LIVE = struct.Struct("<7Q2dQ3Qd")
LIVE_KEYS = ("reads", "writes", "flushes", "fua_writes", "cache_read_hits", "extents_written",
             "modelled_us", "flush_us", "size", "read_bytes", "write_bytes", "seq_reads", "read_us")
LIVE_FILE = "stats.json.live"
# a target's modelled devices, by their key in its provenance (boatload.targets.modelled)
DEVICES = ("model", "log_model")
COUNTS = ("flushes", "fua_writes", "writes", "reads", "read_bytes", "write_bytes", "seq_reads")
# /sys/block/<dev>/stat (Documentation/block/stat.rst), the fields kept
BLOCK_FIELDS = {"reads": 0, "read_merges": 1, "read_sectors": 2, "read_ms": 3, "writes": 4, "write_sectors": 6,
                "in_flight": 8, "busy_ms": 9, "queue_ms": 10}


def live_counts(stack_dir: Path | str, tries: int = 1000) -> dict:
    """The model's counts now: two equal reads of the live file with an even
    sequence number. Empty when the stack is gone (or the filter is busy
    through `tries` attempts)."""
    try:
        fd = os.open(Path(stack_dir) / LIVE_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        for _ in range(tries):
            a, b = os.pread(fd, LIVE.size, 0), os.pread(fd, LIVE.size, 0)
            if a == b and len(a) == LIVE.size:
                seq, *values = LIVE.unpack(a)
                if seq % 2 == 0:
                    return dict(zip(LIVE_KEYS, values))
    finally:
        os.close(fd)
    return {}


def block_counts(device: str | None) -> dict:
    """A block device's counters now (BLOCK_FIELDS); empty if it is gone."""
    if not device:
        return {}
    try:
        f = (Path("/sys/block") / Path(device).name / "stat").read_text().split()
    except OSError:
        return {}
    return {k: int(f[i]) for k, i in BLOCK_FIELDS.items()}


def block_delta(begin: dict, end: dict) -> dict | None:
    """The loop device's requests between two readings: counts, mean sizes,
    and the mean number in flight while it was busy."""
    if not begin or not end:
        return None
    d = {k: end[k] - begin[k] for k in BLOCK_FIELDS if k != "in_flight"}
    return {"reads": d["reads"], "read_merges": d["read_merges"], "writes": d["writes"],
            "read_kib": d["read_sectors"] / 2, "write_kib": d["write_sectors"] / 2,
            "mean_read_kib": round(d["read_sectors"] / 2 / d["reads"], 2) if d["reads"] else None,
            "busy_ms": d["busy_ms"],
            "queue_depth": round(d["queue_ms"] / d["busy_ms"], 3) if d["busy_ms"] else None}


def delta(begin: dict, end: dict) -> dict | None:
    """What reached the device between two readings (None if either is missing)."""
    if "reads" not in (begin or {}) or "reads" not in (end or {}):
        return None
    reads = end["reads"] - begin["reads"]
    return {**{k: end[k] - begin[k] for k in COUNTS},
            "modelled_ms": round((end["modelled_us"] - begin["modelled_us"]) / 1000, 3),
            "flush_ms": round((end["flush_us"] - begin["flush_us"]) / 1000, 3),
            "read_ms": round((end["read_us"] - begin["read_us"]) / 1000, 3),
            "mean_read_kib": round((end["read_bytes"] - begin["read_bytes"]) / 1024 / reads, 2) if reads else None,
            "block": block_delta(begin.get("block"), end.get("block"))}


@dataclass
class PhaseCounts:
    """The hook; `stacks` maps each modelled device (DEVICES) to its stack directory."""

    stacks: dict[str, str]
    devices: dict[str, str] = field(default_factory=dict)  # each modelled device's loop device
    edges: list[tuple[str, str, dict]] = field(default_factory=list)  # (begin|end, phase, device -> counts)

    @classmethod
    def of(cls, provenance: dict | None) -> PhaseCounts | None:
        """For a provisioned target's provenance; None when nothing of it is modelled."""
        found = {k: (provenance or {}).get(k) or {} for k in DEVICES}
        stacks = {k: v["stack"] for k, v in found.items() if v.get("stack")}
        devices = {k: v["device"] for k, v in found.items() if v.get("stack") and v.get("device")}
        return cls(stacks, devices) if stacks else None

    def __call__(self, what: str, phase: str) -> None:
        self.edges.append((what, phase, {k: {**live_counts(d), "block": block_counts(self.devices.get(k))}
                                         for k, d in self.stacks.items()}))

    def phases(self) -> list[dict]:
        """One entry per phase that began and ended, in order: its name and
        each modelled device's delta."""
        out, begun = [], None
        for what, phase, counts in self.edges:
            if what == "begin":
                begun = (phase, counts)
            elif what == "end" and begun is not None and begun[0] == phase:
                out.append({"phase": phase, **{k: delta(begun[1].get(k), counts.get(k)) for k in self.stacks}})
                begun = None
        return out


def attach(doc: dict, phases: list[dict]) -> None:
    """Put each phase's deltas into the worker phase it belongs to (in order,
    by name) as `model_counts`."""
    queue = list(phases)
    for ph in doc.get("phases", []):
        if queue and queue[0]["phase"] == ph.get("name"):
            ph["model_counts"] = {k: v for k, v in queue.pop(0).items() if k != "phase"}


REQUESTS = ("reads", "seq_reads", "read_kib", "read_ms", "writes", "loop_reads", "loop_queue_depth")


def requests(phases: list[dict]) -> dict | None:
    """What reached the target's modelled disk over a test's phases: the
    model's reads (how many began where the request before them ended,
    bytes, the time it charged) and writes, and the loop device's reads and
    mean queue depth while busy. None if the target is not modelled."""
    got = [(ph.get("model_counts") or {}).get("model") for ph in phases]
    if not got or any(g is None for g in got):
        return None
    blocks = [g.get("block") or {} for g in got]
    busy = sum(b.get("busy_ms") or 0 for b in blocks)
    return {
        "reads": sum(g["reads"] for g in got), "seq_reads": sum(g["seq_reads"] for g in got),
        "read_kib": sum(g["read_bytes"] for g in got) / 1024, "read_ms": round(sum(g["read_ms"] for g in got), 3),
        "writes": sum(g["writes"] for g in got),
        "loop_reads": sum(b.get("reads") or 0 for b in blocks) if all(blocks) else None,
        "loop_queue_depth": round(sum((b.get("queue_depth") or 0) * b["busy_ms"] for b in blocks) / busy, 3)
        if all(blocks) and busy else None,
    }
