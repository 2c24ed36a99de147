"""The baseline creation methods make exactly the forest they are asked for."""

import tarfile
import zipfile

import pytest

from boatload.measure import creators

SHAPE = [3, 40]


@pytest.mark.parametrize("method", ["python", "touch-many", "touch-each", "tar", "unzip"])
def test_method_makes_the_requested_forest(method, tmp_path):
    root = tmp_path / "forest"
    root.mkdir()
    timed = creators.create(method, root, SHAPE, time_cap_s=60, cache=tmp_path / "cache")
    assert timed.returncode == 0, timed.stderr
    assert not timed.capped
    assert timed.seconds > 0
    assert creators.count_files(root) == (3 * 40, 3)
    # The same names as the leaf/file naming scheme, in every leaf.
    for leaf in creators.leaf_dirs(SHAPE):
        assert sorted(p.name for p in (root / leaf).iterdir()) == creators.file_names(40)
        assert all((root / leaf / name).stat().st_size == 0 for name in creators.file_names(40))


def test_nested_shape_leaves():
    assert creators.leaf_dirs([2, 3, 10]) == ["d0/d0", "d0/d1", "d0/d2", "d1/d0", "d1/d1", "d1/d2"]
    assert creators.leaf_dirs([5]) == ["."]
    assert creators.file_names(101)[:2] == ["f000", "f001"]


def test_time_cap_stops_a_slow_method_part_way(tmp_path):
    root = tmp_path / "forest"
    root.mkdir()
    timed = creators.create("touch-each", root, [50, 1000], time_cap_s=0.5, cache=tmp_path / "cache")
    assert timed.capped
    files, _ = creators.count_files(root)
    assert 0 < files < 50_000
    assert 0.5 <= timed.seconds < 5


def test_archives_are_built_once(tmp_path):
    first = creators.leaf_archive("tar", 10, tmp_path)
    mtime = first.stat().st_mtime_ns
    assert creators.leaf_archive("tar", 10, tmp_path).stat().st_mtime_ns == mtime
    zipped = creators.leaf_archive("zip", 10, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leaf-10.tar", "leaf-10.zip"]  # no temporary left
    with tarfile.open(first) as tar, zipfile.ZipFile(zipped) as archive:
        assert tar.getnames() == archive.namelist() == list(creators.file_names(10))


def test_unknown_method_is_named(tmp_path):
    with pytest.raises(ValueError, match="method: unknown creation method 'cp'"):
        creators.create("cp", tmp_path, SHAPE, 1, tmp_path)
