"""Assemble the paper: typst compiles ``paper/paper.typ`` against ``results/``.

The Typst sources read every number from the results directory (the study
summaries and tables the notebooks write, the figures, ``provenance.json``),
so the build needs no templating: it writes the benchmarking-crimes audit
(``tables/audit.json``, :mod:`boatload.publish.audit`), tells Typst which studies have
results and where the results are, and fixes the creation time so that identical
inputs give a byte-identical PDF.

    python -m boatload.publish.paper --out results/paper/paper.pdf
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import typst

from boatload.analysis import error_rates
from boatload.publish.audit import write_audit
from boatload.provision.devmodel.presets import describe_all as describe_presets
from boatload.analysis.intervals import runs_for_interval
from boatload.base.paths import repo_root
from boatload.base.results import write_atomic_with
from boatload.analysis.statements import statements
from boatload.studies import registry
from boatload.analysis.verdict import MEANINGS, VERDICTS, Rule

__all__ = ["build_paper", "main", "paper_timestamp", "studies_with_results", "verdict_words"]

#: simulated claims per true ratio for the method section's error rates (about 2 s)
WORD_DRAWS = 1000


def studies_with_results(root: Path, results: Path) -> list[str]:
    """Studies, in the paper's order, that have a summary in ``results/tables`` and a section in ``paper/``."""
    return [
        s
        for s in registry()
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


def verdict_words(root: Path, results_prefix: str, studies: list[str]) -> dict:
    """Every verdict word with its rule and, for the words that decide, its
    worst wrong-decision rate in simulation (boatload.analysis.error_rates) under the
    rule of these results, at the fewest runs per side a claim here rests on."""
    tables = root / results_prefix.lstrip("/") / "tables"
    summaries = [json.loads((tables / f"{s}-summary.json").read_text()) for s in studies]
    settings = next((sm["verdict_settings"] for sm in summaries if sm.get("verdict_settings")), None)
    rule = Rule(**settings) if settings else Rule()
    runs = [min(v["runs_per_side"]) for sm in summaries for v in sm.get("verdicts") or []
            if v.get("runs_per_side") and v.get("ours_low") is not None]
    n = max(min(runs, default=runs_for_interval(rule.level)), runs_for_interval(rule.level))
    return {"runs_per_side": n, "draws": WORD_DRAWS, "allowed": round(1.0 - rule.level, 12),
            "words": [{"word": w, "meaning": MEANINGS[w], "worst_wrong": rate}
                      for w, rate in _worst_wrong(rule, n, WORD_DRAWS)]}


@functools.lru_cache(maxsize=8)
def _worst_wrong(rule: Rule, runs: int, draws: int) -> tuple[tuple[str, float | None], ...]:
    """Each word's worst wrong-decision rate at `runs` per side: a seeded simulation (90 % of a paper's
    build), so the same rule and runs give the same rates and a process building several papers makes it once."""
    worst = error_rates.worst(error_rates.sweep(rule, [runs], draws=draws))
    return tuple((w, worst[(runs, w)][0] if (runs, w) in worst else None) for w in VERDICTS)


def study_statements(root: Path, results_prefix: str, studies: list[str]) -> list[dict]:
    """Each study's statements with their verdicts (known-answer studies left out)."""
    tables = root / results_prefix.lstrip("/") / "tables"
    return [st for s in studies if not registry()[s].known_answers
            for st in statements(s, json.loads((tables / f"{s}-summary.json").read_text()).get("verdicts") or [])]


def _compile(root: Path, results_prefix: str, studies: list[str], when: dt.datetime, fleet: bool = False) -> bytes:
    return typst.compile(
        str(root / "paper" / "paper.typ"),
        root=str(root),
        # the studies with results, in order, and each one's title (the study records);
        # fleet: paper/fleet.typ reads tables/fleet-summary.json
        # known-answer studies (calibration) apart: their claims are not the studies' claims
        sys_inputs={"results": results_prefix,
                    "studies": ",".join(s for s in studies if not registry()[s].known_answers),
                    "checks": ",".join(s for s in studies if registry()[s].known_answers),
                    "titles": json.dumps({s: registry()[s].title for s in studies}),
                    "fleet": "1" if fleet else "",
                    # the models appendix: the device models' presets (data/devmodels.yaml)
                    "devmodels": json.dumps(describe_presets()),
                    # the method section's table of verdict words, with their simulated error rates
                    "verdict_words": json.dumps(verdict_words(root, results_prefix, studies)),
                    # one verdict per original statement (boatload.analysis.statements), the studies' only
                    "statements": json.dumps(study_statements(root, results_prefix, studies))},
        timestamp=when,
    )


def build_paper(root: Path, out: Path, results: Path, fleet: bool = False) -> Path:
    """Compile ``root/paper/paper.typ`` with ``results`` as its data and write
    the PDF to ``out`` atomically. Returns ``out``.

    Typst only reads files under its root. When ``results`` lies inside
    ``root`` the paper compiles in place (root = the repository); otherwise the
    Typst sources and the results are staged into a temporary root first, which
    changes nothing in the output.

    With `fleet` (and ``results/tables/fleet-summary.json`` naming two or
    more hosts) the paper has its fleet section (paper/fleet.typ).
    """
    root, results, out = Path(root).resolve(), Path(results).resolve(), Path(out)
    if not (results / "provenance.json").is_file():
        raise FileNotFoundError(f"{results / 'provenance.json'} is missing; run the pipeline first")
    studies = studies_with_results(root, results)
    when = paper_timestamp(results, studies)
    if fleet:
        from boatload.publish.fleet import fleet_summary

        fleet = fleet_summary(results) is not None
    # the benchmarking-crimes audit and the threats' numbers, from these results
    write_audit(results)

    if _inside(results, root):
        pdf = _compile(root, "/" + results.relative_to(root).as_posix(), studies, when, fleet)
    else:
        with tempfile.TemporaryDirectory(prefix="boatload-paper-") as tmp:
            stage = Path(tmp)
            shutil.copytree(root / "paper", stage / "paper")
            (stage / "results").mkdir()
            shutil.copy2(results / "provenance.json", stage / "results" / "provenance.json")
            for sub in ("tables", "figures"):
                if (results / sub).is_dir():
                    shutil.copytree(results / sub, stage / "results" / sub)
            pdf = _compile(stage, "/results", studies, when, fleet)

    write_atomic_with(out, lambda tmp: tmp.write_bytes(pdf))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m boatload.publish.paper", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: boatload.base.paths.repo_root)")
    parser.add_argument("--results", type=Path, default=None, help="results directory (default: ROOT/results)")
    parser.add_argument("--out", type=Path, default=None, help="PDF to write (default: RESULTS/paper/paper.pdf)")
    args = parser.parse_args(argv)
    root = (args.root or repo_root()).resolve()
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
