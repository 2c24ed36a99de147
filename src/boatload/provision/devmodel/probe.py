"""Timed O_DIRECT requests on a block device, from Python: what the stack's
calibration and quick checks need (fio is the peer for the real tests)."""

from __future__ import annotations

import mmap
import os
import random
import time


def timed_requests(device: str, count: int, length: int, write: bool = False, span: int | None = None,
                   seed: int = 1) -> list[float]:
    """`count` random aligned requests of `length` bytes, one at a time;
    each one's latency in microseconds."""
    fd = os.open(device, (os.O_RDWR if write else os.O_RDONLY) | os.O_DIRECT | os.O_CLOEXEC)
    buf = mmap.mmap(-1, length)  # page-aligned, as O_DIRECT needs
    try:
        size = span or os.lseek(fd, 0, os.SEEK_END)
        slots = max(1, size // length)
        rng = random.Random(seed)
        out = []
        for _ in range(count):
            off = rng.randrange(slots) * length
            t = time.perf_counter()
            (os.pwritev if write else os.preadv)(fd, [buf], off)
            out.append((time.perf_counter() - t) * 1e6)
        return out
    finally:
        buf.close()
        os.close(fd)


def median(samples: list[float]) -> float:
    s = sorted(samples)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2

