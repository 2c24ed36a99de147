"""Where things live: the repository, the worker binary, the scratch directory."""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """The clone we work in: $BOATLOAD_ROOT; else the nearest folder holding
    ``pyproject.toml`` at or above the working directory (the clone under make
    and Snakemake, notebooks/ under JupyterLab); else the one above this package
    (a clone's src/boatload, run from anywhere); else the working directory."""
    env = os.environ.get("BOATLOAD_ROOT")
    if env:
        return Path(env).resolve()
    for start in (Path.cwd().resolve(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            if (folder / "pyproject.toml").is_file():
                return folder
    return Path.cwd().resolve()


def worker_binary() -> Path:
    """The measuring worker: $BOATLOAD_WORKER (set by Nix), else the local build."""
    env = os.environ.get("BOATLOAD_WORKER")
    return Path(env) if env else repo_root() / "native" / "build" / "boatload-worker"


def scratch_dir() -> Path:
    """Images, mount points and the ledger of what we created: $BOATLOAD_SCRATCH,
    else results/scratch in the clone (git-ignored)."""
    env = os.environ.get("BOATLOAD_SCRATCH")
    return Path(env).resolve() if env else repo_root() / "results" / "scratch"
