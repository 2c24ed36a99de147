"""`boatload target up NAME` and `boatload target down NAME`: one configured
target provisioned by hand and left up for the user's own tools (fio,
elbencho, ls), then torn down again.

`up` provisions as a run does (everything in the ledger), records its pid in
`<scratch>/up/<name>.json` and exits without tearing down; `down` (and
`make clean-mounts`, which sees an exited process's resources) undoes what
that pid made, restoring what it changed (write cache, loop settings)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from boatload.provision.hostops import plain_dir
from boatload.provision.ledger import pid_alive, pid_start
from boatload.provision.targets import provision
from boatload.provision.targets.modelled import serve_after_exit
from boatload.base.targetspec import TargetError, TargetSpec


def record_path(scratch: Path, name: str) -> Path:
    return Path(scratch) / "up" / f"{name}.json"


def read_record(scratch: Path, name: str) -> dict | None:
    try:
        return json.loads(record_path(scratch, name).read_text())
    except (OSError, ValueError):
        return None


def ensure_down(name: str, scratch: Path) -> None:
    held = read_record(Path(scratch).resolve(), name)
    if held is not None:
        raise TargetError(f"target {name} is already up at {held.get('path')}; `boatload target down {name}` first")


def up(spec: TargetSpec, scratch: Path) -> None:
    """Provision `spec`, print its directory as the last line, and exit leaving it up (never returns on success)."""
    scratch = Path(scratch).resolve()
    ensure_down(spec.name, scratch)
    plain_dir(scratch / "up")
    serve_after_exit()  # a modelled device must outlive this process
    cm = provision(spec, scratch)
    t = cm.__enter__()  # on failure provision has torn down what it made
    try:
        record_path(scratch, spec.name).write_text(json.dumps(
            {"name": spec.name, "kind": spec.kind, "pid": os.getpid(), "pid_start": pid_start(os.getpid()),
             "path": str(t.path)}) + "\n")
    except BaseException:
        cm.__exit__(*sys.exc_info())
        raise
    print(f"boatload: target {spec.name} ({spec.kind} {spec.fs}) is up; `boatload target down {spec.name}` tears it down",
          file=sys.stderr)
    print(t.path, flush=True)
    sys.stderr.flush()
    os._exit(0)  # no teardown: the ledger keeps what this process made, for `down`


def down(name: str, scratch: Path, cleanup) -> list[str]:
    """Undo what `up` made for target `name`; the lines of what was done."""
    scratch = Path(scratch).resolve()
    held = read_record(scratch, name)
    if held is None:
        raise TargetError(f"target {name} is not up (no {record_path(scratch, name)})")
    if pid_alive(held["pid"], held.get("pid_start")):
        raise TargetError(f"target {name}: process {held['pid']} that brought it up is still running")
    done = cleanup(scratch, only_pid=held["pid"])
    record_path(scratch, name).unlink()
    return done
