"""Assemble the paper: typst compiles ``paper/paper.typ`` against ``results/``.

The Typst sources read every number from the results directory (the study
summaries and tables the notebooks write, the figures, ``provenance.json``),
so the build needs no templating: it tells Typst which studies have results
and where the results are, and fixes the creation time so that identical
inputs give a byte-identical PDF.

    python -m boatload.paper --out results/paper/paper.pdf
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import typst

__all__ = ["STUDIES", "build_paper", "find_root", "main", "paper_timestamp", "studies_with_results"]

#: every study, in the order the paper presents them
STUDIES = ("degradation", "journal", "forest", "filecount", "tmpfs")


def find_root(start: Path | None = None) -> Path:
    """The repository: the nearest folder holding ``pyproject.toml`` above
    ``start`` (the working directory), else above this module."""
    starts = [start or Path.cwd(), Path(__file__)]
    for s in starts:
        s = s.resolve()
        for folder in (s, *s.parents):
            if (folder / "pyproject.toml").is_file() and (folder / "paper").is_dir():
                return folder
    raise FileNotFoundError("no repository (pyproject.toml with paper/) above the working directory")


def studies_with_results(root: Path, results: Path) -> list[str]:
    """Studies that have a summary in ``results/tables`` and a section in ``paper/``."""
    return [
        s
        for s in STUDIES
        if (results / "tables" / f"{s}-summary.json").is_file() and (root / "paper" / f"{s}.typ").is_file()
    ]


def paper_timestamp(results: Path, studies: list[str]) -> dt.datetime:
    """The paper's date: ``$SOURCE_DATE_EPOCH`` if set, else the start of the
    latest run in any included study (``last_run_at`` in its summary), else the
    Unix epoch. It depends on the inputs only, never on the clock."""
    env = os.environ.get("SOURCE_DATE_EPOCH")
    if env:
        return dt.datetime.fromtimestamp(int(env), dt.timezone.utc)
    latest: dt.datetime | None = None
    for study in studies:
        summary = json.loads((results / "tables" / f"{study}-summary.json").read_text())
        stamp = summary.get("last_run_at")
        if not stamp:
            continue
        when = dt.datetime.fromisoformat(stamp)
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        when = when.astimezone(dt.timezone.utc)
        latest = when if latest is None or when > latest else latest
    return latest or dt.datetime.fromtimestamp(0, dt.timezone.utc)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _write_atomic(out: Path, data: bytes) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _compile(root: Path, results_prefix: str, studies: list[str], when: dt.datetime) -> bytes:
    return typst.compile(
        str(root / "paper" / "paper.typ"),
        root=str(root),
        sys_inputs={"results": results_prefix, "studies": ",".join(studies)},
        timestamp=when,
    )


def build_paper(root: Path, out: Path, results: Path) -> Path:
    """Compile ``root/paper/paper.typ`` with ``results`` as its data and write
    the PDF to ``out`` atomically. Returns ``out``.

    Typst only reads files under its root. When ``results`` lies inside
    ``root`` the paper compiles in place (root = the repository); otherwise the
    Typst sources and the results are staged into a temporary root first, which
    changes nothing in the output.
    """
    root, results, out = Path(root).resolve(), Path(results).resolve(), Path(out)
    if not (results / "provenance.json").is_file():
        raise FileNotFoundError(f"{results / 'provenance.json'} is missing; run the pipeline first")
    studies = studies_with_results(root, results)
    when = paper_timestamp(results, studies)

    if _inside(results, root):
        pdf = _compile(root, "/" + results.relative_to(root).as_posix(), studies, when)
    else:
        with tempfile.TemporaryDirectory(prefix="boatload-paper-") as tmp:
            stage = Path(tmp)
            shutil.copytree(root / "paper", stage / "paper")
            (stage / "results").mkdir()
            shutil.copy2(results / "provenance.json", stage / "results" / "provenance.json")
            for sub in ("tables", "figures"):
                if (results / sub).is_dir():
                    shutil.copytree(results / sub, stage / "results" / sub)
            pdf = _compile(stage, "/results", studies, when)

    _write_atomic(out, pdf)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m boatload.paper", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: found from the working directory)")
    parser.add_argument("--results", type=Path, default=None, help="results directory (default: ROOT/results)")
    parser.add_argument("--out", type=Path, default=None, help="PDF to write (default: RESULTS/paper/paper.pdf)")
    args = parser.parse_args(argv)
    root = (args.root or find_root()).resolve()
    results = (args.results or root / "results").resolve()
    out = args.out or results / "paper" / "paper.pdf"
    try:
        path = build_paper(root, out, results)
    except typst.TypstError as err:
        print(f"typst: {err.message}\n{err.diagnostic}", file=sys.stderr)
        for hint in err.hints or []:
            print(f"hint: {hint}", file=sys.stderr)
        return 1
    except FileNotFoundError as err:
        print(err, file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
