"""`boatload reproduce` as `make reproduce` runs it: with the config's
`budget_minutes` the budgeted run of :func:`boatload.workflow.settle.budgeted` (the
first rounds, then looks at the open claims while the budget lasts, then the
paper), else, or with anything else asked of Snakemake (targets, a dry run, a
profile), the workflow of :func:`boatload.workflow.reproduce.main` as it is."""

from __future__ import annotations

from pathlib import Path

from boatload.workflow import reproduce, settle
from boatload.studies.config import ConfigError, load


def main(configfile: str, extra: list[str], dry_run: bool = False, profile: str | None = None,
         studies: list[str] | None = None) -> int:
    try:
        budgeted = bool(load(Path(configfile)).get("budget_minutes"))
    except ConfigError as exc:
        raise SystemExit(f"boatload: {exc}") from None
    if budgeted and not dry_run and not extra and not profile:
        return settle.budgeted(configfile, studies)
    return reproduce.main(configfile, extra, dry_run=dry_run, profile=profile, studies=studies)
