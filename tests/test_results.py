"""Raw results are written atomically and a rerun never loses an earlier one."""

import json

from boatload.results import save_result, write_atomic


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
