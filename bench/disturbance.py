"""The ci workflow on a machine that is not idle: how long it takes, how many
runs are measured again, how many stay disturbed, and how long the measured
threads waited for a CPU.

Each case runs `config/ci.yaml` from empty results in a temporary copy of the
workflow (the tracked files), with its own scratch directory:

  idle    nothing of ours beside it
  duty10  beside a process busy 10 ms of every 100 ms (an idle desktop with
          a browser open: about 10 % of one core)
  hog     beside a process that keeps one core fully busy

`--code after` is this checkout; `--code before` is the code of `--before`
(a git revision, default the commit before the disturbance rule changed),
exported with `git archive` and run with its own src/ on PYTHONPATH and the
same worker binary. The background process starts before the workflow (so
the preflight sees it) and is killed after. Other sessions' load on the
machine is not controlled here: the table says what the preflight saw.

    uv run python bench/disturbance.py [--cases idle,duty10,hog] [--code after,before] [--before REV] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = ("idle", "duty10", "hog")
BEFORE = "2c1ca47"
DUTY = ("import time\n"
        "while True:\n"
        "    end = time.monotonic() + 0.010\n"
        "    while time.monotonic() < end:\n"
        "        pass\n"
        "    time.sleep(0.090)\n")


def background(case: str, into: Path) -> subprocess.Popen | None:
    """The case's background process, in a session of its own, under a name of its own."""
    if case == "idle":
        return None
    if case == "duty10":
        exe = into / "duty10"
        exe.symlink_to(os.path.realpath(sys.executable))
        argv = [str(exe), "-c", DUTY]
    else:
        exe = into / "corehog"
        exe.symlink_to("/bin/sh")
        argv = [str(exe), "-c", "while :; do :; done"]
    return subprocess.Popen(argv, start_new_session=True)


def code_tree(code: str, rev: str, into: Path) -> Path:
    """The workflow to run: this checkout's tracked files as they are, or those of `rev`."""
    into.mkdir(parents=True)
    if code == "after":
        names = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
        for name in filter(None, names.decode().split("\0")):
            if (ROOT / name).is_file():
                (into / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, into / name)
        return into
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run(workdir: Path, code: str) -> tuple[float, str]:
    env = {**os.environ, "BOATLOAD_ROOT": str(workdir), "BOATLOAD_SCRATCH": str(workdir / "results" / "scratch"),
           "BOATLOAD_WORKER": str(ROOT / "native" / "build" / "boatload-worker"),
           # this checkout's device-model filter, for ci.yaml's modelled targets
           "BOATLOAD_DEVMODEL_DIR": str(ROOT / "native" / "build"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["PYTHONPATH"] = str(workdir / "src")  # the code of the case, not the environment's install
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--configfile", "config/ci.yaml", "--cores", "2"],
                          cwd=workdir, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench disturbance: snakemake failed in {workdir}:\n{proc.stderr[-3000:]}")
    return time.monotonic() - start, proc.stderr


def summarise(case: str, code: str, workdir: Path, wall: float, log: str) -> dict:
    docs = [json.loads(p.read_text()) for p in sorted((workdir / "data" / "runs").glob("*/*/**/rep*.json"))
            if "archive" not in p.parts]
    records = [d["interference"] for d in docs if d.get("interference")]
    where = sorted(((p["run_delay_share"], f"{d['study']}/{d['job']['target']['name']}/{d['job']['point']} "
                     f"{p['tool']} {p['phase']} ({p['threads']} threads, {p['seconds']:.2f} s)")
                    for d in docs for p in (d.get("interference") or {}).get("phases", [])
                    if p.get("measured", True) and p.get("run_delay_share") is not None and p["seconds"] >= 0.1),
                   reverse=True)[:5]
    phases = [p for r in records for p in r["phases"] if p.get("measured", True)]
    timed = [p for p in phases if "run_delay_s" in p]
    seconds = sum(p["seconds"] for p in timed)
    busy = re.search(r"machine (busy|quiet): [^\n]*", log)
    return {
        "case": case, "code": code, "wall_s": round(wall, 1), "runs": len(docs),
        "redone_runs": sum(1 for r in records if r["redone"]),
        "redone_attempts": sum(len(r["redone"]) for r in records),
        "still_disturbed": sum(1 for r in records if r["disturbed"]),
        "constant": sum(1 for r in records if r.get("disturbance") == "constant"),
        "waiting_share": sum(p["run_delay_s"] for p in timed) / seconds if seconds else None,
        "others_share": sum(p.get("waited_for_others_s", 0.0) for p in timed) / seconds if seconds else None,
        "disturbed_by_study": {name: sum(1 for d in docs if d["study"] == name and d["interference"]["disturbed"])
                               for name in sorted({d["study"] for d in docs if d.get("interference")})},
        "waiting_max": max((p["run_delay_share"] for p in timed if p["seconds"] >= 0.1), default=None),
        # the worst phase's time lost on others' account (the rule's measure; None before it was recorded)
        "lost_max": max((p["lost_share"] for p in timed if "lost_share" in p), default=None),
        "shielded": sum(1 for r in records if (r.get("shield") or {}).get("cgroup")),
        "preflight": busy.group(0)[:160] if busy else None,
        "most_waiting": [f"{100 * share:.0f}% {what}" for share, what in where],
    }


def run_case(case: str, code: str, args) -> dict:
    base = Path(tempfile.mkdtemp(prefix="boatload-disturbance-"))
    workdir = code_tree(code, args.before, base / "work")
    hog = background(case, base)
    try:
        time.sleep(0.5)
        print(f"bench disturbance: {case} {code} in {workdir}", flush=True)
        wall, log = run(workdir, code)
        return summarise(case, code, workdir, wall, log)
    finally:
        if hog is not None:
            os.killpg(hog.pid, signal.SIGKILL)
            hog.wait()
        subprocess.run([str(Path(sys.executable).with_name("boatload")), "cleanup", "--scratch",
                        str(workdir / "results" / "scratch")], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES), help=f"which cases ({', '.join(CASES)})")
    ap.add_argument("--code", default="after,before", help="after (this checkout), before (--before)")
    ap.add_argument("--before", default=BEFORE, help="the git revision of `before`")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args(argv)
    rows = []
    for case in args.cases.split(","):
        if case not in CASES:
            sys.exit(f"bench disturbance: --cases: unknown case '{case}' (known: {', '.join(CASES)})")
        for code in args.code.split(","):
            if code not in ("after", "before"):
                sys.exit(f"bench disturbance: --code: unknown code '{code}' (known: after, before)")
            rows.append(run_case(case, code, args))
    print()
    print(f"{'case':7} {'code':6} {'wall s':>7} {'runs':>5} {'redone':>6} {'attempts':>8} {'disturbed':>9} "
          f"{'constant':>8} {'waiting':>8} {'others':>7} {'most':>7} {'lost':>6} {'shielded':>8}")
    for r in rows:
        print(f"{r['case']:7} {r['code']:6} {r['wall_s']:>7.1f} {r['runs']:>5} {r['redone_runs']:>6} "
              f"{r['redone_attempts']:>8} {r['still_disturbed']:>9} {r['constant']:>8} {pct(r['waiting_share']):>8} "
              f"{pct(r['others_share']):>7} {pct(r['waiting_max']):>7} {pct(r.get('lost_max')):>6} {r['shielded']:>8}")
    for r in rows:
        print(f"  {r['case']} {r['code']} preflight: {r['preflight'] or '-'}")
        print(f"  {r['case']} {r['code']} still disturbed per study: {r['disturbed_by_study']}")
    print("redone: runs measured again; attempts: disturbed attempts kept on record; disturbed: runs still disturbed "
          "when kept; constant: of those, kept under a constant load; waiting: the measured threads' run delay over "
          "all timed phases, share of their time; others: the part of it on other processes' account; most: in the worst phase of 0.1 s or more; "
          "lost: the most time any timed phase lost on others' account (the threads' waiting over the cores they kept busy; the rule's measure, which also asks others' CPU >= 3 ticks)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
