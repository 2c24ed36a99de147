"""stat and delete rates: boatload-worker `meta` against bonnie++ -n, same files, same targets.

    uv run python bench/meta.py [--k 1000] [--dirs K] [--repeats 5] [--targets tmpfs,ext4] [--threads 1]

bonnie++ -n K:0:0:DIRS makes K*1024 empty files in DIRS directories and, in
one process, runs six timed phases: sequential create, stat (in readdir
order), delete (readdir order), then random create, stat (random files) and
delete (random order). The worker runs the same six phases over the same
number of files and directories in one invocation:

    boatload-worker meta --dir DIR --files K*1024 --dirs DIRS --threads T
        --phases create:seq,stat:seq,delete:seq,create:rand,stat:rand,delete:rand

and each bonnie++ column is compared with the worker phase of the same
position (rates in files/s; worker / bonnie++ per repetition, median).
Goal (from the project issue): stat and delete rates at least those of
bonnie++ -n on the same tree, i.e. worker / bonnie++ >= 1.00 for the four
stat and delete phases (the creates are shown for information).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import benchlib as bl
from boatload.measure.peers import bonnie as bonnie_peer

PHASES = ["create:seq", "stat:seq", "delete:seq", "create:rand", "stat:rand", "delete:rand"]
BONNIE_OF = dict(zip(PHASES, ["seq_create", "seq_stat", "seq_del", "ran_create", "ran_stat", "ran_del"]))
JUDGED = ["stat:seq", "delete:seq", "stat:rand", "delete:rand"]  # what the issue asks about
NOTES = {
    "stat:seq": "bonnie++: readdir() + stat() of each entry in directory order; worker: fstatat() in creation order",
    "stat:rand": "bonnie++: stat() of randomly picked files (some twice, some never); worker: each file once, "
                 "in a keyed random permutation",
    "delete:seq": "bonnie++: unlink() in readdir order; worker: unlinkat() in creation order",
    "delete:rand": "both: every file once, in random order",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=1000,
                    help="bonnie++ -n K: K*1024 files (default 1000; smaller and bonnie++ prints +++++ for "
                         "phases under 0.5 s, stat first)")
    ap.add_argument("--dirs", type=int, default=None, help="directories (default K, i.e. 1024 files each)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--targets", default="tmpfs,ext4")
    ap.add_argument("--threads", default="1",
                    help="worker thread counts to run, comma-separated (default 1: bonnie++ is one process)")
    bl.add_run_args(ap)
    args = ap.parse_args()
    dirs = args.k if args.dirs is None else args.dirs
    files = args.k * 1024

    if os.geteuid() != 0:
        sys.exit("bench: needs root (it mounts a tmpfs and a loop-mounted ext4)")

    threads = [int(t) for t in args.threads.split(",")]
    methods = ["bonnie"] + [f"worker-{t}t" for t in threads]
    all_samples, summary = {}, []
    with bl.scratch_dir(args.scratch_in) as scratch:
        bins = bl.snapshot(["boatload-worker"], scratch)
        print("\n".join(bl.host_header(bins)))
        print(f"# {files:,} empty files in {dirs} directories per run; {args.repeats} repetitions, alternating, "
              "fresh directory per run")
        print(f"#   bonnie       bonnie++ -d DIR -s 0 -n {args.k}:0:0:{dirs} -u root -q (CSV columns 26..36)")
        print(f"#   worker-Nt    boatload-worker meta --dir DIR --files {files} --dirs {dirs} --threads N "
              f"--phases {','.join(PHASES)}")

        def run(m: str, d: Path) -> bl.Sample:
            if m == "bonnie":
                r = bl.run_timed(bonnie_peer.argv(d, args.k, 0, dirs))
                f = bl.bonnie_rates(r.out, args.k, dirs)
                rates = {p: f[BONNIE_OF[p]] for p in PHASES}
                return bl.Sample(files, r.wall, others=r.others, extra={"rates": rates})
            t = int(m.split("-")[1][:-1])
            r = bl.run_timed([bins["boatload-worker"].path, "meta", "--dir", d, "--files", files, "--dirs", dirs,
                              "--threads", t, "--phases", ",".join(PHASES)])
            doc = json.loads(r.out)
            if doc.get("status") != "ok":
                raise bl.RunError(f"worker meta: status {doc.get('status')}: {doc.get('error')}")
            phases = doc["phases"]
            if len(phases) != len(PHASES):
                raise bl.RunError(f"worker meta: {len(phases)} phases, expected {len(PHASES)}")
            rates = {}
            for want, ph in zip(PHASES, phases):
                if ph["name"] != want.split(":")[0] or ph["ops"] != files:
                    raise bl.RunError(f"worker meta: phase {ph['name']} with {ph['ops']} ops where {want} of {files}")
                rates[want] = ph["ops_per_s"]
            return bl.Sample(files, r.wall, others=r.others, extra={"rates": rates, "worker": doc.get("worker")})

        for tname in args.targets.split(","):
            with bl.mounted(tname, scratch, max(1 << 20, 3 * files)) as tgt:
                before = bl.load()

                def run_one(m, r):
                    with bl.fresh_dir(tgt.path, m, sync=(tname != "tmpfs")) as d:
                        s = run(m, d)
                        left = bl.count_tree(d)
                        if left != (0, 0):
                            raise bl.RunError(f"{m}: left {left[0]} files and {left[1]} dirs behind")
                        return s

                res = bl.alternate(methods, args.repeats, run_one, args.quiet_wait, max_others=args.max_others, tries=args.tries, show=lambda s: " ".join(
                    f"{p}={bl.fmt_rate(x)}" for p, x in s.extra["rates"].items()))
                after = bl.load()
            all_samples[tname] = res
            summary += report(tname, res, methods, args)
            print(bl.busy_note(before, after))
            print(f"# {bl.busy_runs(res, args.max_others)}")

    print("\n## goals: worker / bonnie++ (median of per-repetition ratios)")
    print(bl.table(["target", "phase", "worker", "median", "range", "needs", "verdict"], summary, right={3, 4, 5}))
    bl.dump_samples(args.json, all_samples)
    return 0


def report(tname, res, methods, args) -> list[list]:
    rows, summary = [], []
    for p in PHASES:
        row = [p + ("" if p in JUDGED else " (info)")]
        b = [s.extra["rates"][p] if s else None for s in res["bonnie"]]
        for m in methods:
            xs = [s.extra["rates"][p] if s else None for s in res[m]]
            row += [bl.fmt_rate(bl.med(xs)), bl.spread(xs)]
        for m in methods[1:]:
            w = [s.extra["rates"][p] if s else None for s in res[m]]
            ratios = [x / y for x, y in zip(w, b) if x and y]
            row.append(f"{bl.med(ratios):.2f} ({bl.rng(ratios, '.2f')})" if ratios else "bonnie +++++")
            if p in JUDGED:
                g = bl.med(ratios) if ratios else None
                summary.append([tname, p, m, f"{g:.2f}" if ratios else "-",
                                bl.rng(ratios, ".2f") if ratios else "bonnie++ printed +++++", ">= 1.00",
                                bl.verdict(g, 1.00)])
        rows.append(row)
    heads = ["phase"]
    for m in methods:
        heads += [f"{m} files/s", "spread"]
    heads += [f"{m}/bonnie" for m in methods[1:]]
    print(f"\n## meta on {tname}: files/s, median of {args.repeats}")
    print(bl.table(heads, rows))
    for p, n in NOTES.items():
        print(f"#   {p}: {n}")
    if any(s and None in s.extra["rates"].values() for s in res["bonnie"]):
        print("# bonnie++ printed +++++ (phase under 0.5 s) for some phases: those are left out; raise --k")
    return summary


if __name__ == "__main__":
    sys.exit(main())
