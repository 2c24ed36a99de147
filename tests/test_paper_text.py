"""The paper's text as a reviewer reads it: no section repeats another's
sentence word for word, and the conditions table prints no share over 100 %
unless it says the share is summed over threads.

Both read the real compiled paper of two studies' fixtures (forest and
journal, tests/conftest.py), their results put side by side as a run of both
studies would leave them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from boatload.publish import paper
from boatload.publish.provenance import conditions
from notebook_checks import pdf_text

REPO = Path(__file__).resolve().parents[1]
# shorter sentences ("Original: not stated.") may fairly recur; a repeated one of this many words is a copy
MIN_WORDS = 8


def merge_results(into: Path, other: Path) -> None:
    """`other`'s tables and figures beside `into`'s, its targets and conditions added to the provenance."""
    for sub in ("tables", "figures"):
        shutil.copytree(other / sub, into / sub, dirs_exist_ok=True)
    prov = json.loads((into / "provenance.json").read_text())
    theirs = json.loads((other / "provenance.json").read_text())
    names = {t["name"] for t in prov["targets"]}
    prov["targets"] += [t for t in theirs["targets"] if t["name"] not in names]
    prov["conditions"] = {**theirs.get("conditions", {}), **prov.get("conditions", {})}
    (into / "provenance.json").write_text(json.dumps(prov, indent=2))


@pytest.fixture(scope="module")
def two_studies(forest_fixture_run, journal_fixture_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("two-studies") / "results"
    shutil.copytree(forest_fixture_run["results"], out)
    merge_results(out, journal_fixture_run["results"])
    return out


# a heading on a line of its own in `pdftotext -layout` ("4.3 Our setup"): it has no full stop to end
# it, so it would run into the first sentence of its section
HEADING = re.compile(r"^\s*\d+(\.\d+)*\s+[A-Z][^.]{0,70}$")


def sentences(layout_text: str) -> list[str]:
    """The sentences of `pdftotext -layout` text: none runs across a heading
    or a blank line (which end a paragraph or a table), white space folded, a
    sentence ending at a full stop before a capital."""
    blocks, block = [], []
    for line in layout_text.splitlines():
        if HEADING.match(line) or not line.strip():
            blocks.append(" ".join(block))
            block = []
        else:
            block.append(line)
    blocks.append(" ".join(block))
    return [s.strip() for b in blocks for s in re.split(r"(?<=[.!?])\s+(?=[A-Z“(*])", re.sub(r"\s+", " ", b))
            if s.strip()]


def repeated_sentences(pdf: Path) -> dict[str, int]:
    """Sentences of MIN_WORDS words or more that appear more than once between
    the introduction and the references."""
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True,
                          text=True).stdout
    body = text[text.index("1 Introduction"):text.index("\nReferences")]
    # prose ends with a full stop; a figure's legend or a table's row does not
    counts = Counter(s for s in sentences(body) if len(s.split()) >= MIN_WORDS and s[-1] in ".!?")
    return {s: n for s, n in counts.items() if n > 1}


def test_the_splitter_finds_a_copied_sentence():
    text = ("  ratio    1.57\n\n3.3 Our setup\nWe ran the ci configuration on vm (AMD EPYC, 2 CPUs). Each run\n"
            "creates files.\n  rate   4,937\n4.3 The original setup\nWe ran the ci configuration on vm (AMD EPYC,\n"
            "2 CPUs). Each run makes a file system.")
    counts = Counter(s for s in sentences(text) if len(s.split()) >= MIN_WORDS)
    assert counts["We ran the ci configuration on vm (AMD EPYC, 2 CPUs)."] == 2


def test_no_sentence_repeats_word_for_word(two_studies, tmp_path):
    pdf = paper.build_paper(REPO, tmp_path / "paper.pdf", two_studies)
    text = pdf_text(pdf)
    assert re.search(r"\d Forest: ", text) and re.search(r"\d Journal: ", text)  # both studies' sections, so a copy across them shows
    repeats = repeated_sentences(pdf)
    assert repeats == {}, "\n".join(f"{n}x: {s}" for s, n in repeats.items())


def _phase(seconds: float, threads: int, waited_s: float) -> dict:
    """One timed phase of an interference record, as boatload.measure.disturbance writes it."""
    return {"measured": True, "seconds": seconds, "threads": threads, "run_delay_s": waited_s, "ran_s": seconds,
            "competing_cpu_s": 0.3 * seconds, "cpu_s": {"orchestrator": 0.0, "monitor": 0.0}}


def _run(study: str, *phases: dict) -> dict:
    return {"study": study, "interference": {
        "phases": list(phases), "redone": [], "disturbed": False, "disturbance": None, "shield": None,
        "settings": {"max_run_delay": 0.05, "before_s": 0.3, "max_other_cpu": 0.05}}}


def test_conditions_table_has_no_share_over_100_percent(two_studies, tmp_path):
    """64 threads on 2 cores each wait half of every phase: summed over the
    threads that is 3,200 % of the phase. The table must print a share a
    reader can read (per thread: 50 %), or say it is summed over threads."""
    results = tmp_path / "results"
    shutil.copytree(two_studies, results)
    prov = json.loads((results / "provenance.json").read_text())
    docs = [_run("forest", _phase(2.0, 64, 64.0), _phase(1.0, 64, 32.0)),
            _run("journal", _phase(0.5, 1, 0.05), _phase(0.2, 1, 0.01))]
    prov["conditions"] = conditions(docs)
    assert prov["conditions"]["forest"]["waiting_share"] == pytest.approx(32.0)  # the sum over threads
    (results / "provenance.json").write_text(json.dumps(prov, indent=2))

    text = pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", results))
    start = re.search(r"Table \d+: Quiet measurements", text).start()  # its number depends on the tables before it
    table = text[start:text.index("Cold or warm")]
    shares = [float(x.replace(",", "")) for x in re.findall(r"(\d[\d,]*(?:\.\d+)?) ?%", table)]
    assert shares, table
    over = [x for x in shares if x > 100]
    assert not over or "summed over threads" in table, f"shares over 100 %: {over}\n{table}"
    assert "50.00 %" in table  # forest's threads: each waited half of its phases


def test_the_expected_wrong_decisions_count_a_claim_of_no_difference_at_its_own_tail(two_studies, tmp_path):
    """Each decided claim of an effect is wrong at most half the allowance (one tail of
    its interval), one of no difference at most the whole (one of its two one-sided
    tests: "not equivalent" was simulated wrong 4.8 % of the time at 6 runs a side)."""
    from boatload.analysis.verdict import DECIDED, Rule

    summaries = [json.loads(p.read_text()) for p in sorted((two_studies / "tables").glob("*-summary.json"))]
    decided = [v for s in summaries for v in s.get("verdicts") or [] if v["verdict"] in DECIDED]
    same = [v for v in decided if v["test"] == "no difference"]
    assert same and len(same) < len(decided)  # the fixtures decide both kinds
    allowed = 1.0 - Rule().level
    bound = (len(decided) - len(same)) * allowed / 2 + len(same) * allowed
    text = " ".join(pdf_text(paper.build_paper(REPO, tmp_path / "paper.pdf", two_studies)).split())
    assert (f"among the {len(decided)} decided claims of this run the expected number of wrong decisions is "
            f"at most {bound:.1f}") in text, text[text.find("expected number"):][:300]
    assert "one of no difference at most 5.0 %" in text
