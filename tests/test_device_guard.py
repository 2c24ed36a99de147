"""The guard in front of `kind: device`: one test per refusal, each on real
loop devices attached to images in the test's own directory, each refused
in one line naming the field before anything is written (the device's
first and last MiB unchanged byte for byte)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

from boatload.provision.targets import provision
from boatload.base.targetspec import TargetError, parse_target
from devicelib import edges, identity, loop_device, loop_devices, sh
from targetlib import leftovers, root, scratch  # noqa: F401 (scratch is a fixture)

pytestmark = root


def refused(spec, scratch, *devices) -> str:
    """Provision `spec`; it must be refused with nothing written to `devices`; the message."""
    before = [edges(d) for d in devices]
    with pytest.raises(TargetError) as e:
        with provision(spec, scratch):
            pass
    assert [edges(d) for d in devices] == before
    assert leftovers(scratch) == {}
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def device_spec(dev: str, fs: str = "ext4", **kw):
    return parse_target("disk", {"kind": "device", "fs": fs, "device": dev, **kw})


@contextmanager
def mounted_ext4(source: str, mp: Path):
    """A fresh ext4 on `source`, mounted on `mp` (made here) and frozen while the body runs. A fresh ext4
    mounted read-write writes its own metadata for seconds after the mount (its first MiB changed within
    3 s in 4 of 6 mounts, with lazy init off too): frozen it writes nothing, so the edges the test compares
    change only if boatload writes (a write to the block device itself is not held by the freeze)."""
    sh("mkfs.ext4", "-q", "-F", source)
    mp.mkdir()
    sh("mount", source, str(mp))
    try:
        sh("fsfreeze", "--freeze", str(mp))
        try:
            yield mp
        finally:
            sh("fsfreeze", "--unfreeze", str(mp))
    finally:
        sh("umount", str(mp))


@contextmanager
def stacked_loop(dev: str):
    """A loop device on the device itself (a holder, as a partition or device-mapper
    would be); detached after, if it is still on `dev`."""
    upper = sh("losetup", "--find", "--show", dev).strip()
    try:
        yield upper
    finally:
        if Path(f"/sys/block/{Path(upper).name}/loop/backing_file").read_text().strip() == dev:
            sh("losetup", "-d", upper)


def test_mounted_partition_is_refused(tmp_path, scratch):
    with loop_device(tmp_path, 64, partscan=True) as dev:
        part = f"{dev}p1"
        if not os.path.exists(part):  # e.g. a kernel built without partition table parsers
            pytest.skip(f"this kernel made no partition of {dev} from its DOS label")
        with mounted_ext4(part, tmp_path / "mp") as mp:
            msg = refused(device_spec(dev, wipe=identity(dev)), scratch, dev)
    assert msg.startswith("targets.disk.device: ")
    assert f"is mounted ({part} on {mp})" in msg


def test_mounted_device_is_refused(tmp_path, scratch):
    with loop_device(tmp_path, 64) as dev:
        with mounted_ext4(dev, tmp_path / "mp") as mp:
            msg = refused(device_spec(dev, wipe=identity(dev)), scratch, dev)
    assert msg == f"targets.disk.device: {dev} is mounted (on {mp}); boatload formats only a device nothing uses"


def test_a_mounted_file_system_stacked_on_it_is_refused(tmp_path, scratch):
    """What a partition would be where the kernel parses none: a loop device on the device, mounted."""
    with loop_device(tmp_path, 64) as dev:
        with stacked_loop(dev) as upper, mounted_ext4(upper, tmp_path / "mp") as mp:
            before = edges(dev)
            msg = refused(device_spec(dev, wipe=identity(dev)), scratch, dev)
            assert edges(dev) == before
    assert msg == f"targets.disk.device: {dev} is mounted ({upper} on {mp}); boatload formats only a device nothing uses"


def test_active_swap_is_refused(tmp_path, scratch):
    with loop_device(tmp_path, 64) as dev:
        sh("mkswap", dev)
        sh("swapon", dev)
        try:
            msg = refused(device_spec(dev, wipe=identity(dev)), scratch, dev)
        finally:
            sh("swapoff", dev)
    assert msg.startswith("targets.disk.device: ") and "is active swap" in msg


def test_a_holder_stacked_on_it_is_refused(tmp_path, scratch):
    """No device-mapper here: the holder is a loop device on the device itself."""
    with loop_device(tmp_path, 64) as dev:
        with stacked_loop(dev) as upper:
            msg = refused(device_spec(dev), scratch, dev)
    assert msg == f"targets.disk.device: {dev} has holders stacked on it ({Path(upper).name}); boatload formats only a device nothing uses"


def test_a_signature_without_wipe_is_refused(tmp_path, scratch):
    with loop_device(tmp_path, 64) as dev:
        sh("mkfs.ext4", "-q", "-F", dev)
        msg = refused(device_spec(dev), scratch, dev)
        assert msg.startswith("targets.disk.wipe: missing, and ")
        assert "ext4 at 0x438" in msg and msg.endswith(f'set targets.disk.wipe: "{identity(dev)}"')


def test_wipe_naming_another_devices_identity_is_refused(tmp_path, scratch):
    with loop_devices(tmp_path, 64, 64) as (dev, other):
        sh("mkfs.ext4", "-q", "-F", dev)
        msg = refused(device_spec(dev, wipe=identity(other)), scratch, dev, other)
        assert msg == (f"targets.disk.wipe: {identity(other)!r} is not the identity of {dev}, "
                       f"which is {identity(dev)!r}")


def test_a_device_too_small_is_refused(tmp_path, scratch):
    with loop_device(tmp_path, 100) as dev:
        msg = refused(device_spec(dev, fs="xfs"), scratch, dev)
    assert msg == f"targets.disk.device: {dev} is 100 MiB, smaller than the 300 MiB the file system needs"


def test_the_root_file_systems_device_is_refused(scratch):
    st = os.stat("/")
    name = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve().name
    dev = f"/dev/{name}"
    if not os.path.exists(dev):
        pytest.skip(f"/ is on {name}, which has no node in /dev")
    try:
        edges(dev)
        readable = (dev,)
    except PermissionError:  # a sandbox may forbid even reading the root disk: the refusal is what is left to check
        readable = ()
    msg = refused(device_spec(dev, wipe="anything"), scratch, *readable)
    assert msg.startswith(f"targets.disk.device: {dev} is mounted as the root file system /")


def test_a_plain_file_is_not_a_block_device(tmp_path, scratch):
    f = tmp_path / "file"
    f.write_bytes(b"x" * 4096)
    spec = parse_target("disk", {"kind": "device", "fs": "ext4", "device": "/dev/null"})
    msg = refused(spec, scratch)
    assert msg == "targets.disk.device: /dev/null is not a block device"


def test_the_preflight_lists_every_refusal_at_once(tmp_path):
    """Two device targets, each wrong in its own way, and a mount target that is no
    mount: every problem listed, each naming its field, nothing written."""
    import yaml

    from boatload.workflow import plan, preflight
    from boatload.studies.config import validate

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "ci.yaml").read_text())
    with loop_devices(tmp_path, 64, 100, 64) as (sig, small, other):
        sh("mkfs.ext4", "-q", "-F", sig)
        config["targets"] = {
            "sig": {"kind": "device", "fs": "ext4", "device": sig},
            "small": {"kind": "device", "fs": "xfs", "device": small, "log": {"device": other, "wipe": "not it"}},
            "nomount": {"kind": "mount", "path": str(tmp_path)},
        }
        config["studies"] = {"forest": {**config["studies"]["forest"], "targets": ["sig", "small", "nomount"],
                                        "scale_files": []}}
        config = validate(config)
        before = [edges(d) for d in (sig, small, other)]
        runs = plan.runs(config)
        report = preflight.check(config, runs, tmp_path / "scratch", tmp_path, euid=0)
        as_user = preflight.check(config, runs, tmp_path / "scratch", tmp_path, euid=1000)
        assert [edges(d) for d in (sig, small, other)] == before
    problems = report.problems
    assert any(p.startswith("targets.sig.wipe: missing, and ") for p in problems), problems
    assert f"targets.small.device: {small} is 100 MiB, smaller than the 300 MiB the file system needs" in problems
    assert any(p.startswith("targets.small.log.wipe: 'not it' is not the identity of ") for p in problems)
    assert f"targets.nomount.path: {tmp_path} is not a mount point (the root of a mounted file system)" in problems
    assert all("\n" not in p for p in problems)
    user = [p for p in as_user.problems if p.startswith("targets.s")]
    assert user == [f"targets.{n}.device: kind device needs root to format and mount {d} (running as uid 1000); "
                    "nothing was opened" for n, d in (("sig", sig), ("small", small))]


def test_the_devices_template_is_refused_naming_each_placeholder(tmp_path):
    """config/devices.yaml as shipped: valid, planned, and refused by the preflight
    until its placeholders are filled in, one line per field."""
    from boatload.workflow import plan, preflight
    from boatload.studies.config import load

    config = load(Path(__file__).resolve().parents[1] / "config" / "devices.yaml")
    runs = plan.runs(config)
    assert {r.study for r in runs} == {"forest", "degradation", "journal", "filecount", "tmpfs"}
    report = preflight.check(config, runs, tmp_path / "scratch", tmp_path, euid=0)
    placeholders = [p for p in report.problems if "placeholder" in p]
    devices = {k for k, v in config["targets"].items() if v["kind"] == "device"}
    for name in devices:
        assert f"targets.{name}.device: still the template's placeholder /dev/CHANGE-ME-data-disk; name your device " \
               "(see `boatload devices`)" in placeholders
        assert any(p.startswith(f"targets.{name}.wipe: still the template's placeholder") for p in placeholders)
    assert any(p.startswith("targets.disk-xfs-log-external.log.device: still the template's placeholder "
                            "/dev/CHANGE-ME-log-device") for p in placeholders)
    assert any(p.startswith("targets.disk-xfs-log-external.log.wipe: ") for p in placeholders)
