"""Does a fixed CPU loop see the host's slow moments that the journal's random
stat sees? Alternates, for SECONDS, a yardstick (a fixed arithmetic loop) and a
pass of os.stat over FILES cached empty files in a random order, times each,
and prints how the two rates move together: their CVs, their correlation, the
CV of the stat rate over the yardstick's, and, in blocks of five passes (a
quick journal run's), the CV of the fastest pass against that of the block's
mean rate over the yardstick's.

    uv run python bench/yardstick.py [--seconds 60] [--files 20000] [--dir /dev/shm]

Both halves run in this Python process, so the interpreter's own speed is in
both: a first look, not the worker's numbers.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

from boatload.analysis.spread import point_spread


def yardstick() -> float:
    t = time.perf_counter()
    s = 0
    for i in range(150_000):
        s += i * i
    return time.perf_counter() - t


def stat_pass(names: list[str]) -> float:
    t = time.perf_counter()
    for name in names:
        os.stat(name)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to alternate (default 60)")
    ap.add_argument("--files", type=int, default=20_000, help="empty files statted a pass (default 20,000)")
    ap.add_argument("--dir", default="/dev/shm", help="where the files are made, in a directory of their own")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="boatload-yardstick-", dir=args.dir) as d:
        names = [os.path.join(d, f"f{i:06d}") for i in range(args.files)]
        for name in names:
            open(name, "w").close()
        random.Random(1).shuffle(names)
        yard, stat = [], []
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            yard.append(1.0 / yardstick())
            stat.append(1.0 / stat_pass(names))
    over = [s / y for s, y in zip(stat, yard)]
    print(f"{len(stat)} passes: yardstick CV {point_spread(yard):.1%}, stat CV {point_spread(stat):.1%}, "
          f"correlation {statistics.correlation(yard, stat):.2f}; stat over yardstick CV {point_spread(over):.1%}")
    blocks = [range(i, i + 5) for i in range(0, len(stat) - 4, 5)]
    fastest = [max(stat[j] for j in b) for b in blocks]
    normalised = [statistics.fmean(over[j] for j in b) for b in blocks]
    print(f"{len(blocks)} blocks of 5: fastest pass CV {point_spread(fastest):.1%}, mean over the yardstick CV "
          f"{point_spread(normalised):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
