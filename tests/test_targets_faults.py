"""Targets when things go wrong: teardown on every exit path (exceptions,
signals, SIGKILL), cleanup of leftovers, the safety rules (never format what
we did not create), and running without root.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from boatload.provision.targets import loop as loop_kind
from boatload.provision.ledger import Ledger
from boatload.provision.cleanup import cleanup
from boatload.provision.targets import provision
from boatload.base.targetspec import TargetError
from asnobody import NOBODY, SRC, run_as_nobody
from targetlib import (  # noqa: F401 (scratch is a fixture)
    SIGNAL_WAIT, leftovers, log_image_dir, mounts_under, root, scratch, spec_for, wait_clean, write_cache,
)


@root
@pytest.mark.parametrize("fs", ["tmpfs", "ext4"])
def test_exception_inside_block_tears_down(fs, scratch):
    with pytest.raises(ZeroDivisionError):
        with provision(spec_for(fs), scratch) as t:
            (t.path / "f").write_text("x")
            1 / 0
    assert leftovers(scratch) == {}


@root
def test_failing_mkfs_and_mount_tear_down(scratch):
    with pytest.raises(TargetError, match=r"targets\.ext4\.mkfs_options"):
        with provision(spec_for("ext4", mkfs_options=["--no-such-flag"]), scratch):
            pass
    assert leftovers(scratch) == {}
    with pytest.raises(TargetError, match=r"targets\.ext4\.mount_options"):
        with provision(spec_for("ext4", mount_options=["no_such_option"]), scratch):
            pass
    assert leftovers(scratch) == {}


@root
def test_busy_mount_is_detached_lazily(scratch, capsys):
    with provision(spec_for("ext4"), scratch) as t:
        held = open(t.path / "held", "w")
    try:
        assert "lazily" in capsys.readouterr().err
        assert mounts_under(scratch) == {}
    finally:
        held.close()
    assert wait_clean(scratch) == {}  # the loop device clears itself once released


CHILD = SIGNAL_WAIT + textwrap.dedent(
    """
    import signal, sys
    from pathlib import Path
    from boatload.provision.targets import provision
    from boatload.base.targetspec import parse_target
    # as a fresh terminal process has them, even if started under nohup or in a background job
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    spec = parse_target("ext4", {"fs": "ext4", "size_mb": 64})
    with provision(spec, Path(sys.argv[1])) as t:
        print("READY", t.path, flush=True)
        wait(60)
    """
)


def start_child(scratch: Path, code: str = CHILD, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(scratch)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kw,
    )
    line = p.stdout.readline()
    if not line.startswith("READY"):
        p.kill()
        raise AssertionError(f"child did not provision: {line!r} {p.stderr.read()}")
    return p


@root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_to_child_tears_down(sig, scratch):
    p = start_child(scratch)
    assert str(scratch / "mnt") in next(iter(mounts_under(scratch)))
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode != 0
    assert ("KeyboardInterrupt" if sig == signal.SIGINT else "Terminated") in err
    assert leftovers(scratch) == {}
    assert cleanup(scratch) == []


@root
def test_sigkill_leftovers_are_cleaned_up(scratch):
    p = start_child(scratch)
    p.kill()
    p.wait(timeout=30)
    left = leftovers(scratch)
    assert left["mounts"] and left["loops"] and left["images"]
    lines = cleanup(scratch)
    assert any(line.startswith("unmounted") for line in lines)
    assert any(line.startswith("detached loop device") for line in lines)
    assert any(line.startswith("deleted image") for line in lines)
    assert any(line.startswith("removed mount point") for line in lines)
    assert leftovers(scratch) == {}
    assert cleanup(scratch) == []
    assert all(r.released for r in Ledger(scratch).resources().values())


@root
@pytest.mark.parametrize("ledger", ["kept", "damaged"])
def test_sigkill_leftover_log_and_write_cache_are_cleaned_up(ledger, scratch):
    code = CHILD.replace(
        '{"fs": "ext4", "size_mb": 64}', '{"fs": "ext4", "size_mb": 64, "log": {"size_mb": 16}, "write_cache": "write through"}'
    )
    p = start_child(scratch, code)
    p.kill()
    p.wait(timeout=30)
    left = leftovers(scratch)
    assert left["shm"] and len(left["loops"]) == 2, left
    devs = {r.facts["device"]: r.facts.get("write_cache_before") for r in Ledger(scratch).resources().values()
            if r.kind == "loop"}
    assert len(devs) == 2 and all(write_cache(d) == "write through" for d in devs)
    if ledger == "damaged":
        (scratch / "ledger.jsonl").write_text("garbage\n{not json\n")
    lines = cleanup(scratch)
    assert sum(line.startswith("detached loop device") for line in lines) == 2, lines
    assert sum(line.startswith("deleted image") for line in lines) == 2, lines
    assert any(line == f"removed {log_image_dir(scratch)}" for line in lines), lines
    restored = [line for line in lines if line.startswith("set the write cache")]
    assert len(restored) == 2, lines  # to what the ledger says was there, else the driver's "write back"
    for dev, before in devs.items():
        if not Path(f"/sys/block/{Path(dev).name}/loop/backing_file").exists():  # nobody took it since
            assert write_cache(dev) == (before if ledger == "kept" and before else "write back")
    assert leftovers(scratch) == {}
    assert cleanup(scratch) == []
    assert all(r.released for r in Ledger(scratch).resources().values())


@root
def test_cleanup_finds_leftovers_without_the_ledger(scratch):
    p = start_child(scratch)
    p.kill()
    p.wait(timeout=30)
    (scratch / "ledger.jsonl").write_text("garbage\n{not json\n")
    lines = cleanup(scratch)
    assert len(lines) == 4, lines  # unmount, detach, delete image, rmdir
    assert leftovers(scratch) == {}
    assert cleanup(scratch) == []


@root
def test_cleanup_leaves_live_runs_alone(scratch):
    with provision(spec_for("tmpfs"), scratch) as t:
        assert cleanup(scratch) == []
        assert str(t.path) in mounts_under(scratch)
    assert leftovers(scratch) == {}


@root
def test_existing_file_at_image_path_is_never_formatted(scratch, monkeypatch):
    token = f"{os.getpid()}-fixed"
    monkeypatch.setattr(loop_kind, "token", lambda: token)
    victim = scratch / "images" / f"ext4-{token}.img"
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"precious" * 1000)
    with pytest.raises(TargetError, match="already exists"):
        with provision(spec_for("ext4"), scratch):
            pass
    assert victim.read_bytes() == b"precious" * 1000
    victim.unlink()
    assert leftovers(scratch) == {}


@root
def test_image_swapped_before_mkfs_is_not_formatted(scratch, monkeypatch):
    """Someone replaces the image between creation and formatting: refuse."""
    real_run = loop_kind.run
    victim = {}

    def run(argv, *a, **k):
        if "--find" in argv:
            img = Path(argv[-1])
            img.unlink()
            img.write_bytes(b"precious" * 1000)
            victim["path"] = img
        return real_run(argv, *a, **k)

    monkeypatch.setattr(loop_kind, "run", run)
    with pytest.raises(TargetError, match="refusing to format"):
        with provision(spec_for("ext4"), scratch):
            pass
    assert victim["path"].read_bytes() == b"precious" * 1000  # neither formatted nor deleted
    victim["path"].unlink()
    assert leftovers(scratch) == {}


# -- without root (run as nobody) ------------------------------------------------


@pytest.fixture
def nobody_scratch():
    base = Path(tempfile.mkdtemp(prefix="boatload-test-"))
    os.chmod(base, 0o755)
    os.chown(base, NOBODY, NOBODY)
    yield base / "scratch"
    shutil.rmtree(base)


@root
def test_non_root_tmpfs_needs_root(nobody_scratch):
    code = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from boatload.provision.targets import provision
        from boatload.base.targetspec import NeedsRoot, parse_target
        for name, m in (("tmpfs", {"kind": "tmpfs"}), ("ext4", {"fs": "ext4"})):
            try:
                with provision(parse_target(name, m), Path(sys.argv[1])):
                    print("provisioned?!")
            except NeedsRoot as e:
                print(e)
        """
    )
    r = run_as_nobody(code, str(nobody_scratch))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "tmpfs target 'tmpfs' needs root to mount (running as uid 65534)"
    assert lines[1].startswith("loop target 'ext4' (ext4) needs root") and "uid 65534" in lines[1]
    assert not nobody_scratch.exists()  # nothing touched


@root
def test_non_root_dir_works(nobody_scratch):
    code = textwrap.dedent(
        """
        import os, sys
        from pathlib import Path
        from boatload.provision.cleanup import cleanup
        from boatload.provision.targets import provision
        from boatload.base.targetspec import parse_target
        with provision(parse_target("home", {"kind": "dir"}), Path(sys.argv[1])) as t:
            (t.path / "f").write_text("x")
            print(t.path, os.stat(t.path).st_uid)
        print(t.path.exists(), cleanup(Path(sys.argv[1])))
        """
    )
    r = run_as_nobody(code, str(nobody_scratch))
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert first.endswith(f" {NOBODY}") and "/dirs/home-" in first
    assert second == "False []"
    assert leftovers(nobody_scratch) == {}
