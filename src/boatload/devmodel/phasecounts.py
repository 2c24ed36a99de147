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
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

# a sequence number (odd while the filter updates), then these
LIVE = struct.Struct("<7Q2dQ")
LIVE_KEYS = ("reads", "writes", "flushes", "fua_writes", "cache_read_hits", "extents_written",
             "modelled_us", "flush_us", "size")
LIVE_FILE = "stats.json.live"
# a target's modelled devices, by their key in its provenance (boatload.targets.modelled)
DEVICES = ("model", "log_model")
COUNTS = ("flushes", "fua_writes", "writes", "reads")


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


def delta(begin: dict, end: dict) -> dict | None:
    """What reached the device between two readings (None if either is missing)."""
    if not begin or not end:
        return None
    return {**{k: end[k] - begin[k] for k in COUNTS},
            "modelled_ms": round((end["modelled_us"] - begin["modelled_us"]) / 1000, 3),
            "flush_ms": round((end["flush_us"] - begin["flush_us"]) / 1000, 3)}


@dataclass
class PhaseCounts:
    """The hook; `stacks` maps each modelled device (DEVICES) to its stack directory."""

    stacks: dict[str, str]
    edges: list[tuple[str, str, dict]] = field(default_factory=list)  # (begin|end, phase, device -> counts)

    @classmethod
    def of(cls, provenance: dict | None) -> PhaseCounts | None:
        """For a provisioned target's provenance; None when nothing of it is modelled."""
        stacks = {k: (provenance or {}).get(k, {}).get("stack") for k in DEVICES}
        stacks = {k: v for k, v in stacks.items() if v}
        return cls(stacks) if stacks else None

    def __call__(self, what: str, phase: str) -> None:
        self.edges.append((what, phase, {k: live_counts(d) for k, d in self.stacks.items()}))

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
