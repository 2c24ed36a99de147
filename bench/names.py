"""What the file names cost a create on ext4: the worker's tree against the
bare mknodat loop with names of 7 (the worker's "f000000"), 12, 20 and 32
characters, one thread, with the share of the time ext4 spends scanning
directory blocks (perf).

    uv run python bench/names.py [--files 100000] [--per-dir 1000] [--repeats 5]
        [--targets ext4] [--lengths 7,12,20,32] [--perf]

ext4 keeps a directory's entries in 4 KiB blocks, each entry 8 bytes plus
the name rounded up to 4; with its hashed index (dir_index) a create first
looks the name up in its leaf block and then walks that block for a free
slot, both linear in the entries per block. Shorter names mean more entries
per block and longer walks, so this separates the name format from the
tool: bare-create (native/bench/bare_create.c) makes the same tree with the
same calls as the worker (mknodat, directories made before the timed loop)
and only the name length changes.

--perf: one more run of each variant under `perf record -g` (cpu-clock),
and the share of the samples in the directory-block scan (ext4_search_dir,
ext4_find_dest_de, ext4_match and what they call) and in the whole ext4
create path.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import benchlib as bl

# ext4's directory-block walks on a create: the name lookup in the leaf
# block and the search for a free slot in it
SCAN_SYMBOLS = ("ext4_search_dir", "ext4_find_dest_de", "ext4_match", "ext4_check_dir_entry", "__ext4_check_dir_entry")


def methods(lengths: list[int]) -> list[str]:
    return ["worker-1t"] + [f"bare-mknod-{n}" for n in lengths]


def argv(method: str, bins: dict, d: Path, dirs: int, per_dir: int) -> list:
    if method == "worker-1t":
        return [bins["boatload-worker"].path, "tree", "--dir", d, "--shape", f"{dirs}x{per_dir}", "--threads", 1]
    return [bins["bare-create"].path, d, dirs, per_dir, "mknod", method.rsplit("-", 1)[1]]


def inner_seconds(method: str, out: str) -> float:
    if method == "worker-1t":
        doc = json.loads(out)
        return next(p["seconds"] for p in doc["phases"] if p["name"] == "create")
    return float(re.search(r"\(([0-9.]+) s\)", out).group(1))


def scan_share(report: str) -> tuple[float, float]:
    """(directory-block scan, all ext4) percent of the samples, from
    `perf report --no-children --sort sym --stdio -g none` lines like
    `  12.34%  [k] ext4_search_dir`."""
    scan = ext4 = 0.0
    for line in report.splitlines():
        m = re.match(r"^\s*([\d.]+)%\s+\[k\]\s+(\S+)", line)
        if not m:
            continue
        pct, sym = float(m.group(1)), m.group(2)
        if sym in SCAN_SYMBOLS:
            scan += pct
        if sym.startswith(("ext4", "__ext4", "dx_", "jbd2")) or sym in SCAN_SYMBOLS:
            ext4 += pct
    return scan, ext4


def profile(method: str, bins: dict, tgt, dirs: int, per_dir: int, scratch: Path) -> tuple[float, float]:
    data = scratch / f"perf-{method}.data"
    with bl.fresh_dir(tgt.path, f"perf-{method}", sync=True) as d:
        subprocess.run(["perf", "record", "-q", "-g", "-F", "2999", "-o", str(data), "--",
                        *map(str, argv(method, bins, d, dirs, per_dir))],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--sort", "sym", "--stdio",
                             "-g", "none"], capture_output=True, text=True, check=True).stdout
    data.unlink()
    return scan_share(report)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000, help="files per run (default 100000)")
    ap.add_argument("--per-dir", type=int, default=1000, help="files per directory (default 1000)")
    ap.add_argument("--repeats", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument("--targets", default="ext4", help="comma-separated (default ext4)")
    ap.add_argument("--lengths", default="7,12,20,32", help="name lengths of the bare loop (default 7,12,20,32)")
    ap.add_argument("--perf", action="store_true", help="also profile one run of each with perf record")
    bl.add_run_args(ap)
    args = ap.parse_args()
    if args.files % args.per_dir:
        ap.error("--files must be a multiple of --per-dir")
    lengths = [int(x) for x in args.lengths.split(",")]
    if any(n < 7 or n > 200 for n in lengths):
        ap.error("--lengths: each 7..200")
    if os.geteuid() != 0:
        sys.exit("bench: needs root (it mounts its targets)")
    if args.perf and not shutil.which("perf"):
        sys.exit("bench: --perf needs perf (Debian: linux-perf)")
    dirs = args.files // args.per_dir
    ms = methods(lengths)
    all_samples = {}
    with bl.scratch_dir(args.scratch_in) as scratch:
        bins = bl.snapshot(["boatload-worker", "bare-create"], scratch)
        print("\n".join(bl.host_header(bins)))
        print(f"# {dirs} dirs x {args.per_dir} files, 1 thread, mknodat per file, directories made before the "
              f"timed loop; {args.repeats} repetitions, order shuffled each repetition")
        for tname in args.targets.split(","):
            with bl.mounted(tname, scratch, max(1 << 20, 3 * args.files)) as tgt:
                def run_one(m, r):
                    with bl.fresh_dir(tgt.path, m, sync=(tname != "tmpfs")) as d:
                        run = bl.run_timed(argv(m, bins, d, dirs, args.per_dir))
                        if bl.count_tree(d) != (args.files, dirs):
                            raise bl.RunError(f"{m}: the tree is not {args.files} files in {dirs} dirs")
                        return bl.Sample.of(run, args.files, inner_seconds(m, run.out))

                res = bl.alternate(ms, args.repeats, run_one, args.quiet_wait, max_others=args.max_others,
                                   tries=args.tries)
                shares = {m: profile(m, bins, tgt, dirs, args.per_dir, scratch) for m in ms} if args.perf else {}
            all_samples[tname] = res
            rows = []
            for m in ms:
                rates = [s.rate_of("inner") if s else None for s in res[m]]
                ratios = bl.paired_ratios(res["worker-1t"], res[m], "inner", "inner") if m != "worker-1t" else []
                scan, ext4 = shares.get(m, (None, None))
                rows.append([m, bl.fmt_rate(bl.med(rates)), bl.spread(rates),
                             f"{bl.med(ratios):.3f}" if ratios else "-", bl.rng(ratios, ".3f") if ratios else "-",
                             f"{scan:.1f}" if scan is not None else "-", f"{ext4:.1f}" if ext4 is not None else "-"])
            print(f"\n## create on {tname}, 1 thread: files/s, median of {args.repeats}")
            print(bl.table(["method", "files/s", "spread", "worker/x", "range", "dir scan %", "ext4 %"], rows))
    bl.dump_samples(args.json, all_samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
