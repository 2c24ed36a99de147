"""The two sides of `boatload compare`: where a result set's runs are, and
what differs between two sets' provenance.

A set is named by a `data/runs/<host>` directory (its tidy tables
`<study>.parquet` and raw runs `<study>/<target>/<point>/rep<N>.json`), a
results directory (its `provenance.json` names the host; the runs are in
`data/runs/<host>` of the checkout it is in), or a host name (a directory
of the runs root, as each host of a fleet run has).

The provenance compared is read from the raw runs themselves, so both kinds
of set give the same facts: the machine (kernel, CPU, memory, OS, Python
lock), the worker build, each target's mkfs, mount options, device facts
and model, each tool's version, and each study's settings (the job fields
but the repetition's own). A difference in the measuring method (the worker,
a tool, boatload itself, a study's settings) is a threat to the comparison.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from boatload.studies import registry

__all__ = ["ResultSet", "SetError", "diff_facts", "facts", "open_set"]

#: job fields that differ between the runs of one point, not between settings
JOB_OWN = ("rep", "seed", "point", "target", "tools", "study")
#: machine fields compared
MACHINE = ("host", "kernel", "os", "cpu_model", "cpus", "memory_bytes", "virtualization", "python", "lock_sha256",
           "boatload")
#: fact sections whose differences are in the measuring method itself
METHOD_SECTIONS = ("worker", "tools", "study")
METHOD_KEYS = {("machine", "boatload"), ("machine", "lock_sha256")}


class SetError(ValueError):
    """A result set that cannot be read; the message names the argument."""


@dataclass
class ResultSet:
    name: str  # as the user gave it
    runs_dir: Path
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    docs: list[dict] = field(default_factory=list)


def _runs_dir(where: str, runs_root: Path, arg: str) -> Path:
    path = Path(where)
    if path.is_dir() and any(path.glob("*.parquet")):
        return path
    if path.is_dir() and (path / "provenance.json").is_file():
        try:
            host = json.loads((path / "provenance.json").read_text())["host"]
        except (OSError, ValueError, KeyError):
            raise SetError(f"{arg}: {where}/provenance.json names no host") from None
        for parent in [path.resolve(), *path.resolve().parents]:
            candidate = parent / "data" / "runs" / host
            if any(candidate.glob("*.parquet")):
                return candidate
        raise SetError(f"{arg}: {where} is the results of host {host}, but no data/runs/{host} with tidy "
                       f"tables is beside it")
    candidate = Path(runs_root) / where
    if os.sep not in where and any(candidate.glob("*.parquet")):
        return candidate
    raise SetError(f"{arg}: {where} is neither a runs directory (data/runs/<host> with <study>.parquet), a results "
                   f"directory (with provenance.json) nor a host under {runs_root}")


def open_set(where: str, runs_root: Path = Path("data/runs"), arg: str = "A") -> ResultSet:
    """The tidy tables and raw runs of one set (`arg` names it in errors)."""
    runs_dir = _runs_dir(str(where), Path(runs_root), arg)
    out = ResultSet(str(where), runs_dir)
    for name in registry():
        table = runs_dir / f"{name}.parquet"
        if table.is_file():
            out.tables[name] = pl.read_parquet(table)
            for raw in sorted((runs_dir / name).glob("*/*/rep*.json")):
                try:
                    out.docs.append(json.loads(raw.read_text()))
                except (OSError, ValueError):
                    continue  # a half-written run is no provenance
    if not out.tables:
        raise SetError(f"{arg}: {runs_dir} has no tidy table of a known study")
    return out


# --- provenance facts ----------------------------------------------------------


def _text(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value)) if all(not isinstance(v, (dict, list)) for v in value) else json.dumps(value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _tool_versions(doc: dict) -> dict[str, str]:
    """Each tool's version as the run recorded it (e.g. fio's `fio version`)."""
    out = {}
    for tool, res in ((doc.get("result") or {}).get("tools") or {}).items():
        if not isinstance(res, dict):
            continue
        for key in ("version", "tool_version"):
            if res.get(key):
                out[tool] = str(res[key])
        fio = res.get("fio_result")
        if isinstance(fio, dict) and fio.get("fio version"):
            out[tool] = fio["fio version"]
    return out


def _target_facts(doc: dict) -> dict[str, object]:
    p = doc.get("target_provenance") or {}
    mkfs = p.get("mkfs_command") or []
    # the device node differs from run to run; the options are what was chosen
    mkfs = [os.path.basename(a) if i == 0 else a for i, a in enumerate(mkfs) if not str(a).startswith("/dev/")]
    model = p.get("model") or {}
    return {
        "file system": p.get("kernel_fs") or p.get("fs"), "size MB": p.get("size_mb"), "mkfs": mkfs,
        "mkfs version": p.get("mkfs_version"), "mount options": p.get("mount_options"),
        "backing file system": p.get("backing_fs_mount") or p.get("backing_fs"),
        "loop write cache": p.get("loop_write_cache"), "device": p.get("device"),
        "log device": p.get("log_device_facts"), "model": model.get("parameters"),
        "log model": (p.get("log_model") or {}).get("parameters"),
    }


def facts(docs: list[dict]) -> dict[tuple[str, str], str]:
    """(section, key) -> the value (distinct values joined by " | " when the runs differ)."""
    seen: dict[tuple[str, str], list[str]] = {}

    def put(section: str, key: str, value) -> None:
        text = _text(value)
        values = seen.setdefault((section, key), [])
        if text not in values:
            values.append(text)

    for doc in docs:
        machine = doc.get("machine") or {}
        for k in MACHINE:
            put("machine", k, machine.get(k))
        worker = doc.get("worker") or {}
        put("worker", "version", worker.get("version"))
        put("worker", "sha256", worker.get("sha256"))
        for tool, version in _tool_versions(doc).items():
            put("tools", tool, version)
        target = ((doc.get("job") or {}).get("target") or {}).get("name")
        if target:
            for k, v in _target_facts(doc).items():
                # a model or a device one fact a field, so the diff names the field that changed
                for name, value in (((f"{k} {f}", x) for f, x in v.items()) if isinstance(v, dict) else [(k, v)]):
                    if value not in (None, [], {}):
                        put(f"target {target}", name, value)
        job = doc.get("job") or {}
        for k, v in job.items():
            if k not in JOB_OWN:
                put(f"study {doc.get('study')}", k, v)
        if job.get("tools"):
            put(f"study {doc.get('study')}", "tools", sorted(job["tools"]))
    return {k: " | ".join(sorted(v)) for k, v in sorted(seen.items())}


def is_method(section: str, key: str) -> bool:
    """A fact of the measuring method, whose difference threatens the comparison."""
    return section.split(" ")[0] in METHOD_SECTIONS or (section, key) in METHOD_KEYS


def diff_facts(a: dict[tuple[str, str], str], b: dict[tuple[str, str], str]) -> dict:
    """{"differs": [...], "same": [...]}: each {section, key, a, b, threat}; a fact one set lacks differs."""
    differs, same = [], []
    for section, key in sorted(set(a) | set(b)):
        va, vb = a.get((section, key)), b.get((section, key))
        entry = {"section": section, "key": key, "a": va, "b": vb}
        if va == vb:
            same.append(entry)
        else:
            differs.append({**entry, "threat": is_method(section, key)})
    return {"differs": differs, "same": same}
