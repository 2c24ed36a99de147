"""The kill storm (scripts/kill_storm.py): signals at random moments leave
nothing behind, and a run after them completes. CI runs a few rounds on two
studies; BOATLOAD_FULL=1 runs more rounds on the whole ci config. Forest also
runs on a device target (a loop device the storm attaches to an image of its
own: mkfs, mount, worker, umount), which must be left unmounted with its
write cache as found, and on a modelled target (nbdkit, nbdfuse, a loop
device on its FUSE file), whose daemons and stack must be gone."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import FULL, PAIRED_INTERFERENCE, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.e2e,
              pytest.mark.skipif(os.geteuid() != 0, reason="the runs mount file systems: needs root")]


def test_kill_storm_leaves_nothing_and_the_next_run_completes(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())
    # Beside another test (tests/conftest.py's PAIRED_FILES): a run it disturbs is kept and marked, not
    # measured again (on a quiet machine nothing is redone either way; the e2e test checks that).
    config["interference"] = dict(PAIRED_INTERFERENCE)
    if not FULL:
        # Loop images, a memory cgroup and a swap file in well under a minute a run.
        studies = config["studies"]
        studies["forest"]["methods"] = ["worker-1t", "python", "tar"]
        studies["forest"]["targets"] = ["tmpfs"]  # and the device and modelled targets the storm adds
        studies["forest"]["scale_files"] = []  # the e2e test runs the scale curve
        config["studies"] = {name: studies[name] for name in ("forest", "tmpfs")}
    configfile = tmp_path / "storm.yaml"
    configfile.write_text(yaml.safe_dump(config))
    report = tmp_path / "storm.json"
    kills, window = (12, ["2", "42"]) if FULL else (3, ["3", "15"])
    # Seed 2 gives INT, TERM, KILL in the first three rounds.
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "kill_storm.py"), "--kills", str(kills), "--seed", "2",
         "--window", *window, "--config", str(configfile), "--json", str(report), "--device-target",
         "--modelled-target"],
        capture_output=True, text=True, timeout=3600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    summary = json.loads(report.read_text())
    assert summary["failed_rounds"] == 0 and summary["final_complete"]
    rounds = summary["rounds"]
    assert len(rounds) == kills
    assert {r["signal"] for r in rounds} == {"INT", "TERM", "KILL"}
    assert {r["via"] for r in rounds} == {"make", "snakemake"}
    # Signals that landed mid-run, not after it ended.
    assert sum(not r["ended_before_signal"] for r in rounds) >= (kills + 1) // 2
    for r in rounds:
        assert r["left"] == [] or (r["signal"] == "KILL" and r["left_after_clean_mounts"] == [])
