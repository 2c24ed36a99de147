"""Raw run documents (JSON) to one tidy table per study (Parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from boatload import studies
from boatload.base.results import write_atomic_with

# Columns every study's rows get from the run's interference record
# (boatload.measure.interference): what else the machine did during its timed phases.
RUN_COLUMNS = {
    "redone": pl.Int64,               # disturbed attempts that were measured again
    "disturbed": pl.Boolean,          # the kept attempt was disturbed too (no redo left, or a constant load)
    "disturbance": pl.String,         # of the kept attempt: null, "passing" or "constant"
    "run_delay_max": pl.Float64,      # most the measured threads waited for a CPU in one phase, share of the phase
    "run_delay_s": pl.Float64,        # seconds the measured threads waited for a CPU, summed over the timed phases
    "competing_cpu_max": pl.Float64,  # most CPU of competing processes in one phase, share of one core
    "other_cpu_max": pl.Float64,      # most CPU of everything but the measurement (/proc/stat), share of one core
    "steal_max": pl.Float64,          # most of the machine's CPU time the hypervisor gave other guests in one phase
    "run_queue_mean": pl.Float64,     # runnable tasks, mean over the run's phases
    "others_io_mb": pl.Float64,       # storage I/O other processes caused during the phases
    "cache": pl.String,               # per timed phase: cold (fresh file system) or warm
}


def _share(cpu_s: float, seconds: float) -> float | None:
    return cpu_s / seconds if seconds > 0 else None


def run_columns(doc: dict) -> dict:
    """The RUN_COLUMNS of one raw run (all None for a run without a record)."""
    record = doc.get("interference")
    phases = (record or {}).get("phases") or []
    if not phases:
        return {"redone": len((record or {}).get("redone") or []) if record else None,
                **{k: None for k in RUN_COLUMNS if k != "redone"}}
    queue = [p["run_queue"]["mean"] for p in phases if p["run_queue"]["mean"] is not None]
    measured = [p for p in phases if p.get("measured", True) and "run_delay_s" in p]
    return {
        "redone": len(record["redone"]),
        "disturbed": record["disturbed"],
        "disturbance": record.get("disturbance"),
        "run_delay_max": max((p["run_delay_share"] or 0.0 for p in measured), default=None),
        "run_delay_s": sum(p["run_delay_s"] for p in measured) if measured else None,
        "competing_cpu_max": max(_share(p["competing_cpu_s"], p["seconds"]) or 0.0 for p in phases),
        "other_cpu_max": max(_share(p["other_cpu_s"], p["seconds"]) or 0.0 for p in phases),
        # records made before steal was recorded have none
        "steal_max": max((p.get("steal_share") or 0.0 for p in measured), default=None),
        "run_queue_mean": sum(queue) / len(queue) if queue else None,
        "others_io_mb": sum(p["others_io_mb"]["read"] + p["others_io_mb"]["write"] for p in phases),
        "cache": ", ".join(f"{p['tool']} {p['phase']} {p['cache']['state']}" for p in phases),
    }


def schema(study_name: str) -> dict:
    return {**studies.study(study_name).table_schema, **RUN_COLUMNS}


def tidy(study_name: str, raw: list[Path], out: Path) -> pl.DataFrame:
    study = studies.study(study_name)
    rows = []
    for path in sorted(map(str, raw)):
        doc = json.loads(Path(path).read_text())
        common = run_columns(doc)
        rows.extend({**row, **common} for row in study.rows(doc))
    frame = pl.DataFrame(rows, schema=schema(study_name), orient="row").sort(list(study.sort))
    write_atomic_with(out, frame.write_parquet)
    return frame


def interference_note(frame: pl.DataFrame) -> str:
    """One line for a notebook: how many runs were disturbed and redone (RUN_COLUMNS)."""
    if "redone" not in frame.columns or frame["redone"].null_count() == frame.height:
        return f"{frame.height} runs; none has an interference record (measured before boatload kept one)"
    recorded = frame.filter(pl.col("redone").is_not_null())
    redone = recorded.filter(pl.col("redone") > 0)
    worst = recorded["competing_cpu_max"].max()
    # tables made before the run delay was recorded have neither column
    waited = recorded["run_delay_max"].max() if "run_delay_max" in recorded.columns else None
    constant = recorded.filter(pl.col("disturbance") == "constant").height if "disturbance" in recorded.columns else 0
    return (f"{frame.height} runs, {recorded.height} with an interference record: {redone.height} measured again "
            f"after a passing load disturbed a timed phase ({int(recorded['redone'].sum())} disturbed attempts "
            f"kept on record), {int(recorded['disturbed'].fill_null(False).sum())} still disturbed ({constant} by a "
            f"constant load, kept as measured); the longest the measured threads waited for a CPU in one phase: "
            f"{100 * (waited or 0):.2f} % of it; the most CPU competing processes used in one phase: "
            f"{100 * (worst or 0):.2f} % of one core")


def by_round(row: dict, column: str = "rates", rounds: str = "rounds") -> dict[int, float]:
    """{round: rate} of a point's row in a notebook's per-point table: its list
    of rates (`column`) beside the list of the rounds (reps, `rounds`) they were
    measured in, so a claim's verdict can pair its two sides' runs by round
    (boatload.analysis.verdict, boatload.analysis.intervals.round_ratio_interval)."""
    values, keys = row[column], row[rounds]
    if len(values) != len(keys) or len(set(keys)) != len(keys):
        raise ValueError(f"{column}: one rate per round expected, got {len(values)} rates of rounds {list(keys)}")
    return dict(zip(keys, values))
