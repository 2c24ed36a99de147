"""Raw results are written atomically and a rerun never loses an earlier one."""

import json

import pytest

from boatload.base.results import save_result, write_atomic, write_atomic_with


def test_save_keeps_every_result_in_the_archive(tmp_path):
    runs = tmp_path / "runs"
    out = runs / "forest" / "ext4" / "python" / "rep1.json"
    first = save_result({"n": 1}, out, runs)
    second = save_result({"n": 2}, out, runs)
    assert first != second
    assert json.loads(out.read_text()) == {"n": 2}
    assert json.loads(first.read_text()) == {"n": 1}
    assert json.loads(second.read_text()) == {"n": 2}
    assert first.parent == runs / "archive" / "forest" / "ext4" / "python"


def test_write_atomic_leaves_no_temporary_files(tmp_path):
    target = tmp_path / "a" / "b.json"
    write_atomic(target, "x")
    write_atomic(target, "y")
    assert target.read_text() == "y"
    assert [p.name for p in target.parent.iterdir()] == ["b.json"]


def test_write_atomic_bytes_and_mode(tmp_path):
    target = tmp_path / "paper.pdf"
    write_atomic(target, b"%PDF-\xff")
    assert target.read_bytes() == b"%PDF-\xff"
    assert target.stat().st_mode & 0o777 == 0o644  # readable as a plain open() leaves it, not mkstemp's 0600
    write_atomic(target, "÷\n")
    assert target.read_bytes() == "÷\n".encode()


def test_write_atomic_with_a_failing_writer_keeps_the_old_file(tmp_path):
    target = tmp_path / "t.csv"
    write_atomic(target, "old\n")

    def half(tmp):
        tmp.write_text("ne")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic_with(target, half)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]
