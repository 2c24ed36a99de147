"""The paper as a reviewer reads it: its sections in order, a bibliography,
the benchmarking-crimes audit, each study's setup naming only the targets it
ran, option strings that break only at spaces and commas, and no word past
the margin on any page (`pdftotext -bbox`, tests/pdf_layout.py).

Built from the forest fixture, whose provenance gains the configured targets
forest did not run on, with the long mount options of XFS with an external
log and of btrfs that once ran off the page."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from audit_checks import check_audit
from boatload.publish import paper
from notebook_checks import pdf_text
from pdf_layout import outside, words

REPO = Path(__file__).resolve().parents[1]

NOT_RUN = [
    {"name": "xfs-log-external", "kind": "loop", "fs": "xfs", "size_mb": 1024, "backing_fs": "ext4",
     "mkfs": ["mkfs.xfs", "-f", "-q", "-l", "logdev=/dev/loop1,size=128m", "/dev/loop0"],
     "mount_options": "rw,relatime,inode64,logbufs=8,logbsize=32k,logdev=/dev/loop1,noquota"},
    {"name": "btrfs-single-64k", "kind": "loop", "fs": "btrfs", "size_mb": 2048, "backing_fs": "ext4",
     "mkfs": ["mkfs.btrfs", "-f", "-q", "--metadata", "single", "--nodesize", "65536", "/dev/loop0"],
     "mount_options": "rw,relatime,space_cache=v2,subvolid=5,subvol=/,discard=async,commit=30"},
    {"name": "ext2", "kind": "loop", "fs": "ext2", "size_mb": 2048, "backing_fs": "ext4",
     "mkfs": ["mkfs.ext2", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", "/dev/loop0"],
     "mount_options": "rw,relatime"},
]


@pytest.fixture(scope="module")
def results(forest_fixture_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("layout") / "results"
    shutil.copytree(forest_fixture_run["results"], out)
    prov = json.loads((out / "provenance.json").read_text())
    prov["targets"] += NOT_RUN
    (out / "provenance.json").write_text(json.dumps(prov, indent=2))
    return out


@pytest.fixture(scope="module")
def pdf(results, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("layout-pdf")
    first = paper.build_paper(REPO, out / "a.pdf", results)
    second = paper.build_paper(REPO, out / "b.pdf", results)
    assert first.read_bytes() == second.read_bytes()  # still byte-identical, audit and all
    return first


def test_no_word_past_the_margin(pdf):
    bad = outside(pdf)
    assert bad == [], "\n".join(f"page {w.page}: {w.text!r} at x {w.x0:.1f}–{w.x1:.1f}, y {w.y0:.1f}–{w.y1:.1f}"
                                for w in bad[:20])
    assert len(words(pdf)[0]) > 1000


def test_sections_in_order(pdf):
    text = pdf_text(pdf)
    heads = ["Abstract", "1 Introduction", "2 Method", "3 Forest", "4 Threats to validity", "5 Conclusion",
             "References", "A Provenance", "B The worker beside its peers", "C Modelled hardware",
             "D Benchmarking-crimes audit"]
    at = [text.find(h) for h in heads]
    assert -1 not in at, dict(zip(heads, at))
    assert at == sorted(at), dict(zip(heads, at))


def test_references(pdf, results):
    text = pdf_text(pdf)
    refs = text[text.index("References"):text.index("A Provenance")]
    numbers = [int(n) for n in re.findall(r"\[(\d+)\]", refs)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 10
    body = text[:text.index("References")] + text[text.index("A Provenance"):]
    for n in numbers:  # every entry is cited in the text
        assert re.search(rf"\[(\d+(?:, )?)*\b{n}\b", body) or f"[{n}]" in body, n
    for title in ("tmpfs vs. ext3 performance on large file sets", "Making file systems with a billion files",
                  "Systems Benchmarking Crimes", "Bootstrap Methods", "Sustainable data analysis with Snakemake",
                  "fio", "Bonnie++", "Vdbench", "papermill", "Typst"):
        assert title in refs, title


def test_audit_appendix(pdf, results):
    audit = check_audit(results)
    text = pdf_text(pdf, plain_quotes=True)
    appendix = text[text.index("D Benchmarking-crimes audit"):]
    for crime in audit["crimes"]:
        assert crime["id"] in appendix
        assert " ".join(crime["how"].split())[:50] in appendix, crime["id"]


def test_forest_setup_lists_only_its_targets(pdf, results):
    text = pdf_text(pdf)
    setup = text[text.index("Our setup"):text.index("Results", text.index("Our setup"))]
    ran = {line.split(",")[0] for line in (results / "tables" / "forest.csv").read_text().splitlines()[1:]}
    for t in ran:
        assert f"{t} (" in setup, t
    for t in NOT_RUN:
        assert f"{t['name']} (" not in setup, t["name"]
    # the appendix still lists every target of the run
    appendix = text[text.index("A Provenance"):]
    for t in NOT_RUN:
        assert t["name"] in appendix


def test_options_break_only_at_spaces_and_commas(pdf):
    """Each mkfs argument and each mount option stays whole on its line."""
    ws, _ = words(pdf)
    texts = [w.text for w in ws]
    for t in NOT_RUN:
        for arg in t["mkfs"]:
            for piece in arg.split(","):
                assert any(piece in w for w in texts), piece
        for option in t["mount_options"].split(","):
            assert any(option in w for w in texts), option
    # no argument cut after its dash ("mkfs.ext2 -" / "F -q")
    assert "-" not in texts
    squeezed = re.sub(r"\s", "", pdf_text(pdf))
    for t in NOT_RUN:
        assert t["mount_options"] in squeezed


def test_journal_on_modelled_hardware_stays_in_the_margins(journal_fixture_run, tmp_path):
    """The journal section with its modelled targets (a data-device column, claims
    naming their hardware) sets every word inside the margins, and its targets
    table names each target's data device."""
    pdf = paper.build_paper(REPO, tmp_path / "paper.pdf", journal_fixture_run["results"])
    bad = outside(pdf)
    assert bad == [], "\n".join(f"page {w.page}: {w.text!r}" for w in bad[:20])
    text = pdf_text(pdf)
    targets = text[text.index("Our journal targets"):text.index("3.4 Results")]
    # the table's data-device column (not the prose after it, "this machine's disk", which
    # the page break can bring inside this stretch of text)
    assert targets.count("modelled raid-hdd") == 3 and len(re.findall(r"this machine(?![’']s)", targets)) == 6
    assert "external, on modelled ssd-2008" in targets
