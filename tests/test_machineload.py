"""Sampling the machine for busy processes: the preflight's line and the wait for quiet, beside a real hog."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from boatload.measure import interference, machineload
from boatload.workflow import preflight


class Hog:
    """A busy loop named cpuhog, outside this process's tree (as the load of
    another session is: ours is never counted), for `seconds` or until stopped."""

    def __init__(self, tmp_path: Path, seconds: float | None = None):
        exe = tmp_path / "cpuhog"
        if not exe.exists():
            exe.symlink_to("/bin/sh")
        pidfile = tmp_path / "hog.pid"
        pidfile.unlink(missing_ok=True)
        loop = "while :; do :; done"
        if seconds:
            loop = f"trap 'exit 0' ALRM; (sleep {seconds}; kill -ALRM $$) & {loop}"
        subprocess.run(["setsid", "-f", "sh", "-c", f'echo $$ > {pidfile}; exec {exe} -c "{loop}"'], check=True)
        while not pidfile.exists() or not pidfile.read_text().strip():
            time.sleep(0.01)
        self.pid = int(pidfile.read_text())

    def stop(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def hog(tmp_path):
    h = Hog(tmp_path)
    time.sleep(0.2)
    yield h
    h.stop()


def test_the_preflight_names_a_busy_process_and_its_share_in_one_line(hog):
    found = machineload.busy(1.0)
    mine = next(r for r in found if r["pid"] == hog.pid)
    assert mine["comm"] == "cpuhog" and mine["share"] >= 0.3  # a core, less what others' load took from it
    assert os.getpid() not in {r["pid"] for r in found}  # ours is not the machine's load
    line = preflight.machine_load({**interference.DEFAULTS, "preflight_sample_s": 1.0})
    assert "\n" not in line and line.startswith("machine busy:") and f"cpuhog (pid {hog.pid})" in line


def test_waiting_for_quiet_gives_up_at_its_limit_beside_a_hog_and_says_who(hog):
    started = time.monotonic()
    found = machineload.wait_quiet(1.5, 0.05, window_s=0.5)
    assert not found["quiet"] and 1.5 <= found["waited_s"] <= time.monotonic() - started + 0.01
    assert found["other_cores"] >= 0.3 and any(r["comm"] == "cpuhog" for r in found["busiest"])


def test_waiting_for_quiet_ends_when_the_hog_does(tmp_path):
    hog = Hog(tmp_path, seconds=1)
    try:
        found = machineload.wait_quiet(4.0, 0.05, window_s=0.5)
    finally:
        hog.stop()
    # the hog is gone from the last window; quiet unless other sessions of this machine kept it busy till the limit
    assert not any(r["comm"] == "cpuhog" for r in found["busiest"])
    assert found["quiet"] or found["waited_s"] >= 4.0


def test_no_sample_when_the_config_says_zero():
    assert "not sampled" in preflight.machine_load({**interference.DEFAULTS, "preflight_sample_s": 0})
