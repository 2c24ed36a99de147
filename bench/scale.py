"""How the worker's cost grows with the number of files: create, stat and
delete of 1e4 .. 1e7 empty files, 1,000 per directory, on tmpfs, ext4, xfs
and btrfs (images in /dev/shm).

    uv run python bench/scale.py [--sizes 10000,100000,1000000,10000000]
        [--targets tmpfs,ext4,xfs,btrfs] [--threads 2] [--repeats 3] [--big-repeats 1]

Each point is one `boatload-worker meta --files N --dirs N/1000 --threads T
--phases create:seq,stat:seq,delete:seq` in a fresh directory of a target
mounted for the largest size (so every size meets the same file system),
with the worker's peak resident set size as it reports it (`max_rss_kib`:
VmHWM of its own address space; wait4's ru_maxrss would report this
harness's own size, which the child inherits at fork). Printed per target and
size: files/s and microseconds per file of each phase, the mkdir and rmdir
phases, and max RSS; then the RSS above the smallest size's against the
directory count, which is what the worker keeps per run (its directory list):
the files themselves must cost it no memory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import benchlib as bl

PHASES = ("create", "stat", "delete")


def measure(worker: Path, d: Path, files: int, per_dir: int, threads: int, out: Path) -> dict:
    """One meta run: its JSON document (with the worker's max_rss_kib), wall_s added."""
    argv = [str(worker), "meta", "--dir", str(d), "--files", str(files), "--dirs", str(files // per_dir),
            "--threads", str(threads), "--phases", ",".join(f"{p}:seq" for p in PHASES), "--out", str(out)]
    t0 = time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace")
        raise bl.RunError(f"worker meta --files {files}: exit {proc.returncode}: {err.strip()[-300:]}")
    doc = json.loads(out.read_text())
    if doc.get("status") != "ok":
        raise bl.RunError(f"worker meta --files {files}: status {doc.get('status')}: {doc.get('error')}")
    for want, ph in zip(PHASES, doc["phases"]):
        if ph["name"] != want or ph["ops"] != files:
            raise bl.RunError(f"worker meta: phase {ph['name']} with {ph['ops']} ops where {want} of {files}")
    if not isinstance(doc.get("max_rss_kib"), int):
        raise bl.RunError("worker meta: no max_rss_kib in its document (a worker older than the scale benchmark?)")
    doc["wall_s"] = time.monotonic() - t0
    return doc


def image_mb(target: str, files: int) -> int:
    """A sparse image big enough for `files` empty files and their directories
    (only what is written takes RAM): ext4 has at most 32,768 inodes per
    128 MiB block group, xfs gives inodes at most 25 % of the space (512
    bytes each), btrfs keeps two copies of its metadata (about 1 KiB a file)."""
    per_file = {"ext4": 4096, "xfs": 4096, "btrfs": 3072}.get(target, 0)
    return max(8192, int(files * per_file * 1.2) >> 20)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000,10000000",
                    help="file counts, comma-separated (default 1e4,1e5,1e6,1e7)")
    ap.add_argument("--per-dir", type=int, default=1000, help="files per directory (default 1000)")
    ap.add_argument("--targets", default=",".join(bl.TARGETS), help=f"comma-separated (default {','.join(bl.TARGETS)})")
    ap.add_argument("--threads", type=int, default=2, help="worker threads (default 2)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per size up to 1e6 files (default 3)")
    ap.add_argument("--big-repeats", type=int, default=1, help="runs per size above 1e6 files (default 1)")
    ap.add_argument("--json", help="write every run's document to this file")
    bl.add_scratch_arg(ap)
    args = ap.parse_args()
    try:
        sizes = sorted({int(float(x)) for x in args.sizes.split(",") if x})
    except ValueError:
        ap.error(f"--sizes: expected numbers like 1e4,1e5, got {args.sizes!r}")
    bad = [n for n in sizes if n < args.per_dir or n % args.per_dir]
    if bad:
        ap.error(f"--sizes: {bad[0]} is not a multiple of --per-dir {args.per_dir}")
    if os.geteuid() != 0:
        sys.exit("bench: needs root (it mounts its targets)")

    runs: dict[str, dict[int, list[dict]]] = {}
    with bl.scratch_dir(args.scratch_in) as scratch:
        bins = bl.snapshot(["boatload-worker"], scratch)
        print("\n".join(bl.host_header(bins)))
        print(f"# meta --phases create:seq,stat:seq,delete:seq --threads {args.threads}, {args.per_dir} files per "
              f"directory; {args.repeats} runs per size (>1e6 files: {args.big_repeats}), median; fresh directory "
              "per run")
        for tname in args.targets.split(","):
            biggest = sizes[-1]
            inodes = int(biggest * 1.1) + (1 << 16)
            size_mb = image_mb(tname, biggest) if tname != "tmpfs" else 4096
            runs[tname] = {}
            with bl.mounted(tname, scratch, inodes, size_mb) as tgt:
                for n in sizes:
                    for r in range(args.repeats if n <= 1_000_000 else args.big_repeats):
                        bl.wait_quiet(5)
                        try:
                            with bl.fresh_dir(tgt.path, f"scale-{n}", sync=(tname != "tmpfs")) as d:
                                doc = measure(bins["boatload-worker"].path, d, n, args.per_dir, args.threads,
                                              scratch / "meta.json")
                        except bl.RunError as e:  # a size the machine cannot hold: say so, keep the others
                            print(f"  {tname} {n:>11,} run {r + 1}: ERROR {e}", flush=True)
                            continue
                        runs[tname].setdefault(n, []).append(doc)
                        rates = " ".join(f"{p['name']}={bl.fmt_rate(p['ops_per_s'])}/s" for p in doc["phases"])
                        print(f"  {tname} {n:>11,} run {r + 1}: {rates} max RSS {doc['max_rss_kib'] / 1024:.1f} MiB "
                              f"({doc['wall_s']:.1f} s)", flush=True)
            report(tname, runs[tname], args.per_dir)

    if args.json:
        Path(args.json).write_text(json.dumps({"argv": sys.argv, "runs": runs}, indent=1))
    return 0


def report(tname: str, by_size: dict[int, list[dict]], per_dir: int) -> None:
    rows = []
    base = None
    for n, docs in sorted(by_size.items()):
        row = [f"{n:,}"]
        for i, name in enumerate(PHASES):
            rate = bl.med([d["phases"][i]["ops_per_s"] for d in docs])
            row += [bl.fmt_rate(rate), f"{1e6 / rate:.2f}" if rate else "-"]
        dirs = {p["name"]: bl.med([next(x["seconds"] for x in d.get("dir_phases", []) if x["name"] == p["name"])
                                   for d in docs]) for p in docs[0].get("dir_phases", [])}
        rss = bl.med([d["max_rss_kib"] for d in docs])
        base = rss if base is None else base
        row += [f"{dirs.get('mkdir', 0):.3f}", f"{dirs.get('rmdir', 0):.3f}", f"{rss / 1024:.1f}",
                f"{(rss - base) / 1024:+.1f}", f"{n // per_dir:,}", len(docs)]
        rows.append(row)
    print(f"\n## {tname}: the worker's cost by size")
    print(bl.table(["files", "create/s", "us/file", "stat/s", "us/file", "delete/s", "us/file", "mkdir s", "rmdir s",
                    "max RSS MiB", "vs smallest", "dirs", "runs"], rows))


if __name__ == "__main__":
    sys.exit(main())
