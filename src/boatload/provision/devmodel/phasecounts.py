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

The same hook reads what the block layer passed to the target's loop
devices (`loop` for the data device, `log_loop` for an external log's), from
`/sys/block/<loop>/stat` (the kernel's Documentation/block/stat.rst: reads,
writes and flushes completed): the counts of this machine's disk, where no
model counts anything. A loop device that reports a write-through cache
never receives a flush (the block layer drops them before the driver).

Beyond the counts of requests: the model's bytes, its reads that began where
the request before them (of any kind) ended and the time it charged for
reads; the loop device's read sectors and its busy and queue times, whose
ratio is the mean number of requests in flight while it was busy.
`requests()` adds a test's phases up (the tmpfs study's table columns).
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
# a target's modelled devices, by their key in its provenance (boatload.provision.targets.modelled)
DEVICES = ("model", "log_model")
COUNTS = ("flushes", "fua_writes", "writes", "reads", "read_bytes", "write_bytes", "seq_reads",
          "read_sectors", "busy_ms", "queue_ms")
# a target's loop devices (data, external log), by the key of their path in its provenance
LOOPS = {"loop": "loop_device", "log_loop": "log_device"}
# /sys/block/<dev>/stat: 0-based field -> our name (reads, writes and flushes completed;
# sectors read; ms busy and ms of requests in flight, io_ticks and time_in_queue)
BLOCK_STAT_FIELDS = {0: "reads", 4: "writes", 15: "flushes", 2: "read_sectors", 9: "busy_ms", 10: "queue_ms"}


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


def block_counts(device: str | Path) -> dict:
    """The block layer's counts of a device now (BLOCK_STAT_FIELDS); empty when it is gone."""
    try:
        fields = (Path("/sys/block") / Path(device).name / "stat").read_text().split()
    except OSError:
        return {}
    return {name: int(fields[i]) for i, name in BLOCK_STAT_FIELDS.items() if i < len(fields)}


def delta(begin: dict, end: dict) -> dict | None:
    """What reached the device between two readings (None if either is
    missing): the counts both have, a model's times in ms, the mean read's
    KiB and a loop device's mean queue depth while busy."""
    if not begin or not end:
        return None
    out = {k: end[k] - begin[k] for k in COUNTS if k in begin and k in end}
    if "modelled_us" in begin and "modelled_us" in end:
        out |= {"modelled_ms": round((end["modelled_us"] - begin["modelled_us"]) / 1000, 3),
                "flush_ms": round((end["flush_us"] - begin["flush_us"]) / 1000, 3)}
    if "read_us" in begin and "read_us" in end:
        out["read_ms"] = round((end["read_us"] - begin["read_us"]) / 1000, 3)
    read_kib = (out["read_bytes"] / 1024 if "read_bytes" in out
                else out["read_sectors"] / 2 if "read_sectors" in out else None)
    if read_kib is not None:
        out["read_kib"] = read_kib
    return _with_means(out)


#: fields worked out from the others (`_with_means`), never added up
MEANS = ("mean_read_kib", "queue_depth")


def _with_means(out: dict) -> dict:
    """`out` with the mean read's KiB and the mean queue depth while busy, from its sums."""
    if "read_kib" in out:
        out["mean_read_kib"] = round(out["read_kib"] / out["reads"], 2) if out.get("reads") else None
    if "queue_ms" in out:
        out["queue_depth"] = round(out["queue_ms"] / out["busy_ms"], 3) if out.get("busy_ms") else None
    return out


def summed(deltas: list[dict | None]) -> dict | None:
    """What reached a device over consecutive phases (a phase's passes), from
    each phase's `delta`: counts and times added up, the mean read's KiB and
    the queue depth worked out again from the sums (None if any is missing)."""
    if not deltas or any(d is None for d in deltas):
        return None
    out = {k: sum(d[k] for d in deltas) for k in deltas[0]
           if k not in MEANS and all(isinstance(d.get(k), (int, float)) and not isinstance(d.get(k), bool)
                                     for d in deltas)}
    for k in ("modelled_ms", "flush_ms", "read_ms"):
        if k in out:
            out[k] = round(out[k], 3)
    return _with_means(out)


@dataclass
class PhaseCounts:
    """The hook; `stacks` maps each modelled device (DEVICES) to its stack
    directory, `loops` each loop device (LOOPS) to its path."""

    stacks: dict[str, str]
    loops: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str, dict]] = field(default_factory=list)  # (begin|end, phase, device -> counts)

    @classmethod
    def of(cls, provenance: dict | None) -> PhaseCounts | None:
        """For a provisioned target's provenance; None when it has neither a model nor a loop device."""
        prov = provenance or {}
        stacks = {k: (prov.get(k) or {}).get("stack") for k in DEVICES}
        stacks = {k: v for k, v in stacks.items() if v}
        loops = {k: prov[key] for k, key in LOOPS.items() if prov.get(key)}
        return cls(stacks, loops) if stacks or loops else None

    def __call__(self, what: str, phase: str) -> None:
        self.edges.append((what, phase, {**{k: live_counts(d) for k, d in self.stacks.items()},
                                         **{k: block_counts(d) for k, d in self.loops.items()}}))

    def phases(self) -> list[dict]:
        """One entry per phase that began and ended, in order: its name and
        each modelled device's delta."""
        out, begun = [], None
        for what, phase, counts in self.edges:
            if what == "begin":
                begun = (phase, counts)
            elif what == "end" and begun is not None and begun[0] == phase:
                out.append({"phase": phase, **{k: delta(begun[1].get(k), counts.get(k))
                                               for k in (*self.stacks, *self.loops)}})
                begun = None
        return out


def attach(doc: dict, phases: list[dict]) -> None:
    """Put each phase's deltas into the worker phase it belongs to (in order,
    by name) as `model_counts`."""
    queue = list(phases)
    for ph in doc.get("phases", []):
        if queue and queue[0]["phase"] == ph.get("name"):
            ph["model_counts"] = {k: v for k, v in queue.pop(0).items() if k != "phase"}


# a test's columns (boatload.studies.tmpfs): the model's and the data loop device's
REQUESTS = ("model_reads", "model_seq_reads", "model_read_kib", "model_read_ms", "model_writes",
            "loop_reads", "loop_read_kib", "loop_queue_depth")


def requests(phases: list[dict]) -> dict | None:
    """What a test's phases (a worker result's, with `model_counts`) sent the
    disk, added up: the modelled disk's reads (how many began where the
    request before them ended, KiB, the time it charged) and writes, and the
    data loop device's reads, KiB and mean queue depth while busy (weighted
    by each phase's busy time). None where neither was counted."""
    counted = [ph.get("model_counts") or {} for ph in phases]
    model = [c.get("model") for c in counted]
    loop = [c.get("loop") for c in counted]
    out = {}
    if model and all(model):
        out |= {"model_reads": sum(m["reads"] for m in model), "model_seq_reads": sum(m["seq_reads"] for m in model),
                "model_read_kib": sum(m["read_kib"] for m in model),
                "model_read_ms": round(sum(m["read_ms"] for m in model), 3),
                "model_writes": sum(m["writes"] for m in model)}
    if loop and all(loop):
        busy = sum(lp["busy_ms"] for lp in loop)
        out |= {"loop_reads": sum(lp["reads"] for lp in loop), "loop_read_kib": sum(lp["read_kib"] for lp in loop),
                "loop_queue_depth": round(sum(lp["queue_ms"] for lp in loop) / busy, 3) if busy else None}
    return out or None
