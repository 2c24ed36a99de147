"""Does the degradation study's reference cancel the host's moment? (#38)

The degradation study's claims compare a repetition's buffered read (O_DIRECT write) of its big file at
N or 2N extra small files with the same repetition's on the empty file system. With `read_reference`
(`write_reference`) each read (write) goes in turns with a file on a second fresh file system on the
same disk (worker `seqio --pair-file`), and the claims compare the big file's rate over the
reference's. This prints, per target and operation of a quick run's raw results, the spread over the
repetitions (sample SD of the log) of each stage's ratio to stage 0, from the rates alone and from the
rates over the reference (where the runs have one).

    python bench/read_reference.py CHECKOUT [CHECKOUT ...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def stage_numbers(doc: dict, op: str, column: str) -> dict[int, float]:
    """{stage: the repetition's median of `column` over its runs of `op`} from the study's own table rows."""
    from boatload.studies.degradation import rows

    by_stage: dict[int, list[float]] = {}
    for r in rows(doc):
        if r["status"] == "ok" and r["op"] == op and r[column] is not None:
            by_stage.setdefault(r["stage"], []).append(r[column])
    return {stage: statistics.median(v) for stage, v in by_stage.items()}


def spread(values: list[float]) -> str:
    return f"{statistics.stdev(values):.2%}" if len(values) >= 3 else "-"


def checkout(path: Path) -> None:
    for target in sorted({p.parent.parent.name for p in path.glob("data/runs/*/degradation/*/stages/rep*.json")}):
        docs = [json.loads(p.read_text()) for p in sorted(path.glob(f"data/runs/*/degradation/{target}/stages/rep*.json"))]
        for op in ("read", "write_odirect"):
            line = [f"{path.name} {target} {op}: {len(docs)} repetitions"]
            for column, label in (("mb_per_s", "rates alone"), ("vs_reference", "over the reference")):
                per_rep = [stage_numbers(d, op, column) for d in docs]
                parts = []
                for stage in (1, 2):
                    logs = [math.log(s[stage] / s[0]) for s in per_rep if stage in s and 0 in s]
                    parts.append(f"stage {stage} ÷ 0 {spread(logs)}")
                line.append(f"{label}: " + ", ".join(parts))
            print("; ".join(line))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="+", help="quick runs' clones to read (data/runs/*/degradation)")
    for path in map(Path, ap.parse_args().checkouts):
        checkout(path)


if __name__ == "__main__":
    main()
