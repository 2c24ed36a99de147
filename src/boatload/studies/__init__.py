"""The studies: every module of this package that declares `STUDY`, a
boatload.studies.record.Study record (name, title, question, config schema and
defaults, jobs, run, tidy columns and rows, figures).

A sixth study is its module here, its notebook (notebooks/<name>.ipynb), its
paper section (paper/<name>.typ) and its reference numbers
(data/reference/<name>.csv); everything else reads this registry.

The package is also the studies layer: besides the study modules it holds
what a study is (record: the `Study` record and the parts every study shares)
and the configuration, checked against the top-level schema and each study's
settings (config). Analysis, publishing and the workflow read the studies
through this registry and the records.

It may import: boatload.base, boatload.provision, boatload.measure.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from boatload.studies.record import Study


@cache
def registry() -> dict[str, Study]:
    """Every study, in the paper's order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        record = getattr(module, "STUDY", None)
        if record is None:
            continue  # not a study: a helper of several (adjacent), the record, the config
        if record.name != info.name:
            raise ValueError(f"study: {module.__name__} declares STUDY.name '{record.name}'; it must be '{info.name}'")
        found.append(record)
    return {s.name: s for s in sorted(found, key=lambda s: (s.order, s.name))}


def names() -> tuple[str, ...]:
    return tuple(registry())


def study(name: str) -> Study:
    try:
        return registry()[name]
    except KeyError:
        raise ValueError(f"study: unknown study '{name}' (known: {', '.join(names())})") from None
