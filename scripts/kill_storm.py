#!/usr/bin/env python3
"""Kill storm: run the workflow again and again and signal it at a random
moment, then check that it left nothing behind.

Each round starts a run (`make reproduce` or a bare `snakemake`, in turn)
from empty results in a clone of this repository, waits a random time and
sends SIGINT, SIGTERM or SIGKILL to its whole process group. After INT or
TERM nothing of the clone may be left: no mount, loop device, cgroup, swap
file or /dev/shm log image. After KILL, one `make clean-mounts` must leave
nothing. At the end an undisturbed `make reproduce` must complete with the
paper.

    .venv/bin/python scripts/kill_storm.py --kills 50 --seed 7

The clone is a `git clone` of the committed HEAD with its own environment
and worker build; nothing in this checkout is touched. With --device-target
the forest study also runs on a `kind: device` target: a loop device the
storm attaches to a sparse image of its own (standing in for a user's disk),
whose write cache must be as found and which nothing may keep mounted after
each round; the storm detaches it at the end. With --modelled-target forest
also runs on a modelled loop target (nbdkit through the device model,
nbdfuse, a direct-I/O loop device): no nbdkit or nbdfuse process, FUSE
mount, loop device or stack directory of the clone may be left.
Exit status 1 if any round left something, hung, or the final run failed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "KILL": signal.SIGKILL}
# How long a run may take to stop after INT or TERM before the round counts as hung.
STOP_TIMEOUT_S = 120


def make_clone(where: Path) -> Path:
    """A clone of the committed HEAD with its own environment (uv's cache makes that quick)
    and worker: a shared .venv would be re-pointed at the clone's sources by its uv sync."""
    clone = where / "clone"
    subprocess.run(["git", "clone", "--quiet", "--local", str(ROOT), str(clone)], check=True)
    subprocess.run(["make", "--silent", "env", "worker"], cwd=clone, check=True, stdout=subprocess.DEVNULL)
    return clone


class Device:
    """The storm's own block device: a loop device on a sparse image in its directory."""

    def __init__(self, where: Path, size_mb: int = 256):
        self.image = where / "disk.img"
        with open(self.image, "xb") as f:
            f.truncate(size_mb << 20)
        self.path = subprocess.run(["losetup", "--find", "--show", str(self.image)], check=True,
                                   capture_output=True, text=True).stdout.strip()
        self.write_cache = self.sys("queue/write_cache")

    def sys(self, rel: str) -> str | None:
        try:
            return (Path("/sys/block") / Path(self.path).name / rel).read_text().strip()
        except OSError:
            return None

    def leftovers(self) -> list[str]:
        found = [f"device mount {line.split()[4]}" for line in Path("/proc/self/mountinfo").read_text().splitlines()
                 if line.split(" - ")[1].split()[1] == self.path]
        if self.sys("queue/write_cache") != self.write_cache:
            found.append(f"device write cache {self.sys('queue/write_cache')!r}, found {self.write_cache!r}")
        return found

    def detach(self) -> None:
        if (self.sys("loop/backing_file") or "").removesuffix(" (deleted)") == str(self.image):
            subprocess.run(["losetup", "-d", self.path], check=True)
        self.image.unlink()


DEVICE: Device | None = None


def with_device_target(config_path: Path, device: Device) -> None:
    """Add the device as target `mydisk` (write cache changed for the run, so its restoring
    is checked) to the config and to the forest study's targets."""
    import yaml

    from boatload.provision import blockdev

    config = yaml.safe_load(config_path.read_text())
    config["targets"]["mydisk"] = {"kind": "device", "fs": "ext4", "device": device.path,
                                   "wipe": blockdev.identity(blockdev.lookup(device.path)),
                                   "write_cache": "write through" if device.write_cache == "write back" else "write back"}
    config["studies"]["forest"]["targets"] = [*config["studies"]["forest"]["targets"], "mydisk"]
    config_path.write_text(yaml.safe_dump(config))


def with_modelled_target(config_path: Path) -> None:
    """Add `olddisk`, ext4 on the hdd-7200 device model, to the forest study's targets."""
    import yaml

    config = yaml.safe_load(config_path.read_text())
    config["targets"]["olddisk"] = {"kind": "loop", "fs": "ext4", "size_mb": 64, "model": "hdd-7200",
                                    "mkfs_options": ["-E", "lazy_itable_init=0,lazy_journal_init=0"]}
    config["studies"]["forest"]["targets"] = [*config["studies"]["forest"]["targets"], "olddisk"]
    config_path.write_text(yaml.safe_dump(config))


def stack_leftovers(scratch: Path) -> list[str]:
    """A modelled target's stack: its daemons (their command lines name the scratch
    directory) and directories in <scratch>/nbd (FUSE mounts and loop devices on
    them are mounts and loops under the scratch directory, found with the others)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        program = Path(cmd.split(b"\0")[0].decode(errors="replace")).name
        if program in ("nbdkit", "nbdfuse") and str(scratch).encode() in cmd and state != "Z":
            found.append(f"process {pid} {program}")
    nbd = scratch / "nbd"
    found += [f"stack {p}" for p in nbd.iterdir()] if nbd.is_dir() else []
    return found


def leftovers(clone: Path) -> list[str]:
    """Everything of the clone's runs still on the machine."""
    scratch = (clone / "results" / "scratch").resolve()
    shm = Path("/dev/shm") / f"boatload-{hashlib.sha256(os.fsencode(str(scratch))).hexdigest()[:16]}"
    found = [f"mount {line.split()[4]}" for line in Path("/proc/self/mountinfo").read_text().splitlines()
             if str(scratch) in line.split()[4]]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.splitlines()
    found += [f"loop {line}" for line in loops if str(scratch) in line or str(shm) in line]
    found += [f"swap {line.split()[0]}" for line in Path("/proc/swaps").read_text().splitlines()[1:]
              if str(scratch) in line]
    found += [f"cgroup {p}" for p in ledger_cgroups(scratch) if Path(p).is_dir()]
    found += [f"log images {p}" for p in shm.glob("*")] if shm.is_dir() else []
    found += [f"swap file {p}" for p in (scratch / "swap").glob("swap-*")] if (scratch / "swap").is_dir() else []
    found += stack_leftovers(scratch)
    return found + (DEVICE.leftovers() if DEVICE else [])


def ledger_cgroups(scratch: Path) -> list[str]:
    """The memory cgroups the clone's runs made: its ledger records each before it exists
    (other runs on the machine have cgroups of their own)."""
    ledger = scratch / "ledger.jsonl"
    if not ledger.is_file():
        return []
    paths = []
    for line in ledger.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("op") == "create" and entry.get("kind") == "cgroup" and isinstance(entry.get("path"), str):
            paths.append(entry["path"])
    return sorted(set(paths))


def fresh_results(clone: Path) -> None:
    for name in ("data/runs", "results"):
        path = clone / name
        if path.exists() and not leftovers(clone):
            shutil.rmtree(path)


def start(clone: Path, via: str, config: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PATH": f"{clone / '.venv' / 'bin'}:{os.environ['PATH']}"}
    env.pop("BOATLOAD_ROOT", None), env.pop("BOATLOAD_SCRATCH", None)
    argv = (["make", "reproduce", f"CONFIG={config}"] if via == "make"
            else [str(clone / ".venv" / "bin" / "snakemake"), "--configfile", config])
    return subprocess.Popen(argv, cwd=clone, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def last_job(log: Path) -> str:
    """What the run was doing: the last rule Snakemake started."""
    rules = [line.split()[-1].rstrip(":") for line in log.read_text(errors="replace").splitlines()
             if line.startswith(("rule ", "localrule "))]
    return rules[-1] if rules else "(before the first job)"


def one_round(clone: Path, n: int, via: str, sig: str, delay: float, config: str, logs: Path) -> dict:
    fresh_results(clone)
    log = logs / f"round-{n:03d}-{via}-{sig}.log"
    proc = start(clone, via, config, log)
    t0 = time.monotonic()
    try:
        proc.wait(timeout=delay)
        ended_first = True
    except subprocess.TimeoutExpired:
        ended_first = False
        os.killpg(proc.pid, SIGNALS[sig])
    hung = False
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    stopped_s = time.monotonic() - t0 - delay
    record = {"round": n, "via": via, "signal": sig, "at_s": round(delay, 2), "doing": last_job(log),
              "ended_before_signal": ended_first, "exit": proc.returncode, "stop_s": round(stopped_s, 2),
              "hung": hung}
    # The group may still hold processes that outlive their leader (jobs of a killed Snakemake).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _group_alive(proc.pid):
        time.sleep(0.1)
    record["left"] = leftovers(clone)
    if sig == "KILL" or hung:
        clean = subprocess.run(["make", "clean-mounts"], cwd=clone, capture_output=True, text=True,
                               env={**os.environ, "PATH": f"{clone / '.venv' / 'bin'}:{os.environ['PATH']}"})
        record["clean_mounts_exit"] = clean.returncode
        record["left_after_clean_mounts"] = leftovers(clone)
    return record


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def failed(record: dict) -> bool:
    if record["hung"]:
        return True
    if record["signal"] == "KILL":
        return bool(record["left_after_clean_mounts"]) or record["clean_mounts_exit"] != 0
    return bool(record["left"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kills", type=int, default=10, help="rounds with a signal (default %(default)s)")
    p.add_argument("--seed", type=int, default=1, help="seeds the signals, the moments and the order (default %(default)s)")
    p.add_argument("--config", default="config/ci.yaml", help="the workflow's config (default %(default)s)")
    p.add_argument("--via", choices=["make", "snakemake", "both"], default="both",
                   help="make reproduce, bare snakemake, or each in turn (default %(default)s)")
    p.add_argument("--window", type=float, nargs=2, default=[2.0, 42.0], metavar=("FROM", "TO"),
                   help="seconds after the start the signal lands, uniformly (default %(default)s)")
    p.add_argument("--signals", default="INT,TERM,KILL", help="which signals, comma-separated (default %(default)s)")
    p.add_argument("--json", help="write every round's record here")
    p.add_argument("--keep", action="store_true", help="keep the clone and the logs")
    p.add_argument("--device-target", action="store_true",
                   help="also run forest on a device target: a loop device of the storm's own")
    p.add_argument("--modelled-target", action="store_true",
                   help="also run forest on a modelled loop target (hdd-7200: nbdkit, nbdfuse, a loop device)")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("kill_storm: needs root (the runs mount file systems)")
    signals = args.signals.split(",")
    if unknown := set(signals) - set(SIGNALS):
        raise SystemExit(f"kill_storm: --signals: unknown {', '.join(sorted(unknown))} (known: INT, TERM, KILL)")
    rng = random.Random(args.seed)
    where = Path(tempfile.mkdtemp(prefix="boatload-storm-", dir="/var/tmp"))
    clone = make_clone(where)
    if not (clone / args.config).is_file():  # a config of one's own, outside the repository
        if not Path(args.config).is_file():
            raise SystemExit(f"kill_storm: --config: no such file {args.config}")
        shutil.copy(args.config, clone / "config" / "storm.yaml")
        args.config = "config/storm.yaml"
    global DEVICE
    if args.device_target:
        DEVICE = Device(where)
        shutil.copy(clone / args.config, clone / "config" / "storm-device.yaml")
        args.config = "config/storm-device.yaml"
        with_device_target(clone / args.config, DEVICE)
    if args.modelled_target:
        shutil.copy(clone / args.config, clone / "config" / "storm-modelled.yaml")
        args.config = "config/storm-modelled.yaml"
        with_modelled_target(clone / args.config)
    try:
        ok = storm(args, rng, signals, where, clone)
    finally:
        if DEVICE:
            DEVICE.detach()  # before the directory holding its image goes
    if args.keep or not ok:
        print(f"clone and logs kept in {where}", file=sys.stderr)
    else:
        shutil.rmtree(where)
    return 0 if ok else 1


def storm(args, rng, signals, where: Path, clone: Path) -> bool:
    """The rounds and the final run; True if no round left anything and the final run completed."""
    logs = where / "logs"
    logs.mkdir()
    records = []
    for n in range(1, args.kills + 1):
        via = args.via if args.via != "both" else ("make" if n % 2 else "snakemake")
        record = one_round(clone, n, via, rng.choice(signals), rng.uniform(*args.window), args.config, logs)
        records.append(record)
        verdict = "FAIL" if failed(record) else "ok"
        left = record.get("left_after_clean_mounts", record["left"])
        print(f"{n:3d} {via:9s} {record['signal']:4s} at {record['at_s']:5.1f} s in {record['doing']:<22s} "
              f"stopped in {record['stop_s']:5.1f} s, left {len(record['left'])}"
              + (f", after clean-mounts {len(left)}" if "left_after_clean_mounts" in record else "")
              + f"  {verdict}" + (f"  {left}" if verdict == "FAIL" else ""), flush=True)
    fresh_results(clone)
    final_log = logs / "final.log"
    final = start(clone, "make", args.config, final_log)
    final.wait()
    pdf = clone / "results" / "paper" / "paper.pdf"
    complete = final.returncode == 0 and pdf.is_file() and pdf.read_bytes().startswith(b"%PDF")
    print(f"final undisturbed run: exit {final.returncode}, paper {'made' if complete else 'missing'}, "
          f"left {len(leftovers(clone))}")
    bad = [r for r in records if failed(r)]
    summary = {"seed": args.seed, "kills": args.kills, "config": args.config, "via": args.via,
               "window": args.window, "failed_rounds": len(bad), "final_complete": complete, "rounds": records}
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    counts = {s: sum(r["signal"] == s for r in records) for s in signals}
    print(f"{args.kills} rounds ({', '.join(f'{k} {v}' for k, v in counts.items())}), seed {args.seed}: "
          f"{len(bad)} left something or hung; final run {'complete' if complete else 'FAILED'}")
    return not bad and complete


if __name__ == "__main__":
    sys.exit(main())
