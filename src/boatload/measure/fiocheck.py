"""fio (the peer) on a modelled device, beside what the model's parameters
give (devmodel-calc): the accuracy checks of the tests and of
bench/devmodel.py. One request at a time (psync, iodepth 1), O_DIRECT.

Means are reported twice: over every request, and without the slowest 2 %
(`trimmed_us`), because on a shared machine a few requests stall for
reasons that are not the model's (another job's CPU burst). Where every
request costs the same in the model (a sequential read; any read of the
SSD, which has no seek), the median request is given too: a burst of
another job's load moves it least. A disk's random reads have no such
shortcut: their mean is what the model gives. A sequential read's stream
rate (bytes over the run's time) is given as well: what the model promises
of a stream, whose drive reads ahead while the host is late.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from boatload.provision.devmodel import native
from boatload.measure.peers import fio

TRIM = 0.02


def _argv(device: str, *opts: str) -> list[str]:
    exe = shutil.which("fio")
    if exe is None:
        raise fio.FioError("fio is not installed (Debian package fio)")
    return [exe, "--name=devmodel", f"--filename={device}", "--ioengine=psync", "--direct=1",
            "--randrepeat=1", "--randseed=7", "--output-format=json", *opts]


def _lat_log(prefix: Path) -> list[tuple[float, int]]:
    """(completion latency us, offset) of every request, from fio's per-I/O log."""
    out = []
    for log in sorted(prefix.parent.glob(prefix.name + "_clat.*.log")):
        for line in log.read_text().splitlines():
            f = [x.strip() for x in line.split(",")]
            if len(f) >= 5:
                out.append((int(f[1]) / 1000.0, int(f[4])))
    return out


def _run_logged(device: str, *opts: str, timeout: float = 300) -> tuple[dict, list[tuple[float, int]]]:
    with tempfile.TemporaryDirectory(prefix="boatload-fio-") as tmp:
        prefix = Path(tmp) / "lat"
        doc = fio.run(_argv(device, f"--write_lat_log={prefix}", "--log_offset=1", *opts), timeout)
        return doc, _lat_log(prefix)


def _means(lat: list[float]) -> tuple[float, float]:
    s = sorted(lat)
    keep = s[: max(1, int(len(s) * (1 - TRIM)))]
    return sum(s) / len(s), sum(keep) / len(keep)


def random_read(device: str, size: int, params: dict, span: float = 1.0, length: int = 4096,
                seconds: float = 3.0) -> dict:
    """Random `length`-byte reads over the first `span` of the device."""
    area = int(size * span) // length * length
    doc, log = _run_logged(device, "--rw=randread", f"--bs={length}", f"--size={area}",
                           "--time_based", f"--runtime={int(seconds * 1000)}ms")
    lat = [t for t, _ in log]
    mean, trimmed = _means(lat)
    median = sorted(lat)[len(lat) // 2]
    expected = native.expect_random_read_us(params, size, span, length)
    return {"what": f"random {length} B reads over {span:.0%}", "n": len(lat), "mean_us": mean,
            "trimmed_us": trimmed, "median_us": median, "expected_us": expected, "ratio": trimmed / expected,
            "median_ratio": median / expected}


def _stream_mbps(doc: dict) -> float:
    """The stream's rate: bytes read over the job's run time (fio's bw), the time between requests included."""
    return doc["jobs"][0]["read"]["bw_bytes"] / 1e6


def seq_read(device: str, size: int, params: dict, length: int = 128 * 1024, area: int = 16 << 20,
             offset: int = 0) -> dict:
    """Sequential `length`-byte reads of the `area` bytes from `offset` (one zone)."""
    doc, log = _run_logged(device, "--rw=read", f"--bs={length}", f"--size={area}", f"--offset={offset}")
    lat = [t for t, _ in log][1:]  # the first request seeks to the start
    mean, trimmed = _means(lat)
    median = sorted(lat)[len(lat) // 2]
    expected = native.expect_seq_read_mbps(params, size, offset, length)
    stream = _stream_mbps(doc)
    # every request of a stream costs the same in the model: the median request
    # says the stream's rate, and a burst of another job's load moves it least
    return {"what": f"sequential {length // 1024} KiB reads", "n": len(lat), "mbps": length / mean,
            "trimmed_mbps": length / trimmed, "median_mbps": length / median, "expected_mbps": expected,
            "ratio": (length / trimmed) / expected, "median_ratio": (length / median) / expected,
            "stream_mbps": stream, "stream_ratio": stream / expected}


#: a turn counts where the bare stack carried at least this share of the best it carried in the check
IN_ORDER = 0.6
#: how long a check keeps taking turns for its count of turns in order
TURNS_LIMIT_S = 90.0


def in_order_turns(measure: Callable[[], dict], probe: Callable[[], float], turns: int, key: str,
                   limit_s: float = TURNS_LIMIT_S) -> dict:
    """`measure` run in turns, each between two `probe`s (a bare stack's stream rate), until `turns`
    (odd) of them found the host in order: both probes at least IN_ORDER of the best probe of the
    check. In a spell of the hypervisor's steal every modelled request comes back late, whatever the
    model (bench/README.md "The host's slow spells"): a turn in one says nothing of the model.
    Returns the middle turn in order by `key`, with every in-order turn's `key`, sorted, under
    "turns", and what was left out under "out_of_order" (key, probe); fewer than `turns` in order
    within `limit_s` gives "short": True and the middle of those there were."""
    if turns % 2 == 0:
        raise ValueError(f"turns: {turns} has no middle turn; give an odd number")
    taken: list[tuple[dict, float]] = []
    started = time.monotonic()
    before = best = probe()
    while True:
        result = measure()
        after = probe()
        taken.append((result, min(before, after)))
        before, best = after, max(best, after)
        kept = sorted((r for r, p in taken if p >= IN_ORDER * best), key=lambda r: r[key])
        if len(kept) >= turns or time.monotonic() - started > limit_s:
            break
    middle = kept[len(kept) // 2] if kept else taken[-1][0]
    return {**middle, "turns": [r[key] for r in kept], "short": len(kept) < turns, "best_probe": best,
            "out_of_order": [(r[key], p) for r, p in taken if p < IN_ORDER * best]}


def fsync_writeout(device: str, size: int, params: dict, blocks: int = 64, length: int = 4096) -> dict:
    """Random writes of `blocks` blocks into the cache, then one fsync:
    its time beside the least and the most the model can take to write
    those blocks out (no rotational wait, a full turn for each)."""
    # fio times an fsync only when a write follows it: blocks + 1 writes
    doc, log = _run_logged(device, "--rw=randwrite", f"--bs={length}", f"--number_ios={blocks + 1}",
                           f"--fsync={blocks}", f"--size={size}")
    offsets = [off for _, off in log][:blocks]
    sync = doc["jobs"][0].get("sync") or {}
    fsync_us = (sync.get("lat_ns") or {}).get("mean", 0) / 1000.0
    # the model starts the write-out where the arm is; devmodel-calc starts it at
    # cylinder 0: a full-stroke seek either way covers the difference
    stroke = params.get("seek_full_ms", 0) * 1000
    return {
        "what": f"fsync after {blocks} random {length} B writes", "n": len(offsets), "fsync_us": fsync_us,
        "write_us": _means([t for t, _ in log])[0],
        "least_us": native.expect_writeout_us(params, size, length, offsets, rot="none") - stroke,
        "most_us": native.expect_writeout_us(params, size, length, offsets, rot="full") + stroke,
    }
