"""What every study notebook does around its analysis: find its files, write its results.

Each notebook's first code cell is

    paths = notebook.setup(STUDY, data=data, reference=reference, out_dir=out_dir)

with `data`, `reference` and `out_dir` from its papermill ``parameters`` cell.
Relative paths are resolved against the repository (:func:`boatload.base.paths.repo_root`:
$BOATLOAD_ROOT, else the nearest folder holding ``pyproject.toml`` above the
working directory, which is the clone under Snakemake and notebooks/ under
JupyterLab). The notebook then writes its tables with :func:`write_table` and
its summary with :func:`write_summary`, each atomically, so a reader (the
paper, the blog, Snakemake) never sees half a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from boatload.base.paths import repo_root
from boatload.base.results import write_atomic, write_atomic_with
from boatload.base.system import hostname

__all__ = ["HOST", "Paths", "find_data", "resolve", "setup", "write_summary", "write_table"]

#: the placeholder in a notebook's `data` parameter: this machine's name (as the
#: runner records it, boatload.base.system.hostname), else the only host with a table
HOST = "HOST"


@dataclass(frozen=True)
class Paths:
    """Where one study notebook reads and writes, every path absolute."""

    study: str
    root: Path  # the repository
    data: Path  # the tidy run table, data/runs/<host>/<study>.parquet
    reference: Path  # the original's numbers, data/reference/<study>.csv
    out: Path  # the results directory: tables/ and figures/ below it

    @property
    def tables(self) -> Path:
        return self.out / "tables"

    @property
    def figures(self) -> Path:
        return self.out / "figures"

    def table(self, part: str | None = None) -> Path:
        """tables/<study>.csv, or tables/<study>-<part>.csv."""
        return self.tables / (f"{self.study}-{part}.csv" if part else f"{self.study}.csv")

    @property
    def summary(self) -> Path:
        """tables/<study>-summary.json: every number the paper's text quotes."""
        return self.tables / f"{self.study}-summary.json"


def resolve(path: str | Path, root: Path | None = None) -> Path:
    """`path` with ``~`` expanded; a relative one below `root` (the repository)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (root or repo_root()) / p


def _with_host(spec: str | Path, host: str) -> Path:
    # only a whole path component is the placeholder
    return Path(*(host if part == HOST else part for part in Path(spec).parts))


def find_data(study: str, spec: str | Path, root: Path | None = None) -> Path:
    """The run table `spec` names. A ``HOST`` component is this machine's name
    if that table exists, else any host's when exactly one has a table there;
    otherwise FileNotFoundError asking for ``-p data``. A spec without ``HOST``
    is returned resolved, whether or not it exists."""
    root = root or repo_root()
    path = resolve(_with_host(spec, hostname()), root)
    if HOST not in Path(spec).parts or path.exists():
        return path
    # glob below the part before the first HOST, so its characters match as they are
    given = Path(spec).expanduser()
    full = resolve(given, root)
    first = len(full.parts) - len(given.parts) + given.parts.index(HOST)
    found = sorted(Path(*full.parts[:first]).glob(str(_with_host(Path(*full.parts[first:]), "*"))))
    if len(found) == 1:
        return found[0]

    def shown(p: Path) -> str:
        return str(p.relative_to(root)) if p.is_relative_to(root) else str(p)

    raise FileNotFoundError(
        f"{path} does not exist; pass -p data {_with_host(spec, '<host>')} "
        f"(found {len(found)} {study} tables: {[shown(f) for f in found]})"
    )


def setup(study: str, *, data: str | Path, reference: str | Path, out_dir: str | Path) -> Paths:
    """A notebook's paths from its parameters: the run table (:func:`find_data`),
    the reference and the results directory, with tables/ and figures/ made.
    Prints them, one per line, so an executed notebook shows what it read."""
    root = repo_root()
    paths = Paths(study, root, find_data(study, data, root), resolve(reference, root), resolve(out_dir, root))
    paths.tables.mkdir(parents=True, exist_ok=True)
    paths.figures.mkdir(parents=True, exist_ok=True)
    print(f"root {paths.root}\ndata {paths.data}\nreference {paths.reference}\nout {paths.out}")
    return paths


def write_table(frame, path: str | Path) -> Path:
    """Write a polars DataFrame as CSV to `path`, atomically; returns `path`."""
    path = Path(path)
    write_atomic_with(path, frame.write_csv)
    return path


def write_summary(summary: dict, path: str | Path) -> Path:
    """Write a notebook's summary as JSON (indented, no NaN or infinity: the
    paper reads it as strict JSON) to `path`, atomically; returns `path`."""
    path = Path(path)
    write_atomic(path, json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return path
