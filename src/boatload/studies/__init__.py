"""The five studies. Each module has:

- `measure(provisioned, job) -> dict`: one run on a provisioned target;
- `run(job) -> dict`: the raw result document (via boatload.runner.run_job);
- `SCHEMA` and `rows(doc) -> list[dict]`: its tidy table.
"""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES = ("forest",)


def study(name: str) -> ModuleType:
    if name not in NAMES:
        raise ValueError(f"study: unknown study '{name}' (known: {', '.join(NAMES)})")
    return importlib.import_module(f"boatload.studies.{name}")
