"""Raw run documents (JSON) to one tidy table per study (Parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

FOREST_SCHEMA = {
    "host": pl.String,
    "study": pl.String,
    "target": pl.String,
    "filesystem": pl.String,
    "method": pl.String,
    "method_label": pl.String,
    "rep": pl.Int64,
    "files": pl.Int64,
    "files_planned": pl.Int64,
    "seconds": pl.Float64,
    "files_per_s": pl.Float64,
    "extrapolated": pl.Boolean,
    "space_kb": pl.Int64,
    "inodes_used": pl.Int64,
    "status": pl.String,
    "reason": pl.String,
    "cpu_user_s": pl.Float64,
    "cpu_sys_s": pl.Float64,
    "worker_version": pl.String,
    "kernel": pl.String,
    "started_at": pl.String,
}


def forest_row(doc: dict) -> dict:
    result, target = doc["result"], doc["target"]
    substituted = target.get("substituted")
    return {
        "host": doc["machine"]["host"],
        "study": doc["study"],
        "target": doc["job"]["target"]["name"],
        "filesystem": target["fs"],
        "method": doc["job"]["method"],
        "method_label": doc["method_label"],
        "rep": doc["job"]["rep"],
        "files": result["files"],
        "files_planned": result["files_planned"],
        "seconds": result["seconds"],
        "files_per_s": result["files_per_s"],
        "extrapolated": result["extrapolated"],
        "space_kb": result["space_kb"],
        "inodes_used": result["inodes_used"],
        # A run on a stand-in directory is not a measurement of the target it stands for.
        "status": "skipped" if substituted else result["status"],
        "reason": substituted or result["reason"],
        "cpu_user_s": result["cpu_user_s"],
        "cpu_sys_s": result["cpu_sys_s"],
        "worker_version": doc["worker"]["version"],
        "kernel": doc["machine"]["kernel"],
        "started_at": doc["started_at"],
    }


ROWS = {"forest": (forest_row, FOREST_SCHEMA)}


def tidy(study: str, raw: list[Path], out: Path) -> pl.DataFrame:
    to_row, schema = ROWS[study]
    rows = [to_row(json.loads(Path(p).read_text())) for p in sorted(map(str, raw))]
    frame = pl.DataFrame(rows, schema=schema, orient="row").sort("target", "method", "rep")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    frame.write_parquet(tmp)
    tmp.replace(out)
    return frame
