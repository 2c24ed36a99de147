"""The five studies. Each module has:

- `jobs(config) -> list[dict]`: every run at the config's scale, each with its
  `target` (spec with name), `point` (a path-safe id within the target) and `rep`;
- `measure(provisioned, job) -> dict`: one run on a provisioned target;
- `run(job) -> dict`: the raw result document (via boatload.runner.run_job);
- `summary(doc) -> str`: one line for the log;
- `SCHEMA`, `SORT` and `rows(doc) -> list[dict]`: its tidy table.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

# In the order of the paper; a study is available once its module exists.
ORDER = ("degradation", "journal", "forest", "filecount", "tmpfs")
# The figures each study's notebook writes (results/figures/<study>-<name>.*):
# the workflow declares them as outputs and files them in the report.
FIGURES = {
    "degradation": ["throughput", "ratios"],
    "journal": ["phases", "ratios"],
    "forest": ["rates"],
    "filecount": ["iops", "ratios"],
    "tmpfs": ["rates", "ratios"],
}
NAMES = tuple(name for name in ORDER if importlib.util.find_spec(f"boatload.studies.{name}") is not None)


def study(name: str) -> ModuleType:
    if name not in NAMES:
        raise ValueError(f"study: unknown study '{name}' (known: {', '.join(NAMES)})")
    return importlib.import_module(f"boatload.studies.{name}")
