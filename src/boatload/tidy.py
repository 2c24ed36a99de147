"""Raw run documents (JSON) to one tidy table per study (Parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from boatload import studies


def tidy(study_name: str, raw: list[Path], out: Path) -> pl.DataFrame:
    study = studies.study(study_name)
    rows = [row for p in sorted(map(str, raw)) for row in study.rows(json.loads(Path(p).read_text()))]
    frame = pl.DataFrame(rows, schema=study.SCHEMA, orient="row").sort(study.SORT)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    frame.write_parquet(tmp)
    tmp.replace(out)
    return frame
