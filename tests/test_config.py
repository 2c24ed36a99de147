"""Every shipped config is valid; a wrong field stops with a line naming it."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from boatload.measure.interference import DEFAULTS as INTERFERENCE_DEFAULTS
from boatload.studies import config
from boatload.workflow import plan

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["config.yaml", "ci.yaml", "full.yaml"])
def test_shipped_configs_are_valid(name):
    config.load(ROOT / "config" / name)


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda c: c.update(repetitionz=3), "repetitionz: unknown field"),
        (lambda c: c["studies"]["forest"].update(shape=[100, "x"]), "studies.forest.shape[1]"),
        (lambda c: c["targets"]["ext4"].update(fs="ext9"), "targets.ext4.fs"),
        (lambda c: c["targets"]["ext4"].update(size_mb=-1), "targets.ext4.size_mb"),
        (lambda c: c["studies"]["forest"]["targets"].insert(0, "nope"), "studies.forest.targets[0]: unknown target 'nope'"),
        (lambda c: c["studies"]["forest"].update(methods=["worker-9t"]), "studies.forest.methods[0]"),
        (lambda c: c.pop("seed"), "seed"),
        (lambda c: c.update(interference={"max_run_delay": 0}), "interference.max_run_delay"),
        (lambda c: c.update(interference={"max_others_io": 1.5}), "interference.max_others_io"),
        (lambda c: c.update(interference={"wait_quiet_s": -1}), "interference.wait_quiet_s"),
        (lambda c: c.update(interference={"shield": "yes"}), "interference.shield"),
        (lambda c: c.update(interference={"before_s": 0.01}), "interference.before_s"),
        (lambda c: c.update(interference={"max_steal": 0}), "interference.max_steal"),
        (lambda c: c["studies"]["degradation"].update(interference={"max_steal": 2}),
         "studies.degradation.interference.max_steal"),
        (lambda c: c["studies"]["forest"].update(scale_files=[1000, 1500]),
         "studies.forest.scale_files[1]: 1500 is not a multiple of 1000"),
        (lambda c: c["studies"]["forest"].update(scale_files=[0]),
         "studies.forest.scale_files[0]: 0 is less than the minimum of 1000"),
        (lambda c: c["studies"]["forest"].update(scale_files=[2000, 2000]),
         "studies.forest.scale_files: [2000, 2000] has non-unique elements"),
        (lambda c: c.update(verdicts={"band_factor": 1}), "verdicts.band_factor: 1 is less than or equal to the minimum of 1"),
        (lambda c: c.update(verdicts={"equivalence_margin": "10 %"}), "verdicts.equivalence_margin"),
        (lambda c: c.update(verdicts={"band": 2}), "verdicts.band: unknown field"),
        (lambda c: c.update(figure_formats=["png"]), "figure_formats: must include 'svg', not only ['png']"),
        (lambda c: c.update(figure_formats=["svg", "gif"]), "figure_formats[1]: 'gif' is not one of"),
        (lambda c: c["studies"]["tmpfs"]["per_target"].update(xfs={"dirs": 10}),
         "studies.tmpfs.per_target.xfs: not one of the study's targets"),
        (lambda c: c["studies"]["tmpfs"]["per_target"]["ext3-hdd"].update(memory_limit_mb=8),
         "studies.tmpfs.per_target.ext3-hdd.memory_limit_mb: 8 is less than the minimum of 64"),
        (lambda c: c["studies"]["tmpfs"]["per_target"]["ext3-hdd"].update(targets=["ext3"]),
         "studies.tmpfs.per_target.ext3-hdd.targets: unknown field"),
    ],
)
def test_bad_field_is_named(mutate, field):
    data = copy.deepcopy(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
    mutate(data)
    with pytest.raises(config.ConfigError) as err:
        config.validate(data)
    assert field in str(err.value)
    assert "\n" not in str(err.value)


def test_snakemake_stops_on_a_bad_config_naming_the_field(tmp_path):
    data = yaml.safe_load((ROOT / "config" / "ci.yaml").read_text())
    data["targets"]["tmpfs"]["size_mb"] = "big"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--dry-run", "--configfile", str(bad)],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode != 0
    assert "targets.tmpfs.size_mb" in proc.stdout + proc.stderr


def test_per_target_settings_reach_that_targets_jobs_only():
    """The quick config's modelled disk (ext3 on it, tmpfs swapping to it) runs
    the tmpfs study at its own memory limit, without bonnie++; tmpfs and ext3
    keep the study's settings (bonnie++ in the first round: peer_repetitions)."""
    from boatload.studies import study

    data = config.load(ROOT / "config" / "config.yaml")
    jobs = study("tmpfs").jobs(data)
    by_target = {}
    for job in jobs:
        by_target.setdefault(job["target"]["name"], set()).add(
            (job["memory_limit_mb"], job["swap_mb"], job["dirs"], job["rep"] == 1, tuple(sorted(job["tools"]))))
    assert by_target["ext3-hdd"] == by_target["tmpfs-hdd"] == {(64, 256, 10, True, ("worker",)),
                                                               (64, 256, 10, False, ("worker",))}
    assert by_target["ext3"] == by_target["tmpfs"] == {(128, 1024, 500, True, ("bonnie", "worker")),
                                                       (128, 1024, 500, False, ("worker",))}
    degradation = {j["target"]["name"]: (j["extra_files"], j["memory_limit_mb"]) for j in study("degradation").jobs(data)}
    assert degradation["ext4-hdd"] == (2000, 64) and degradation["ext4"] == (50000, 128)


def test_a_studys_interference_overrides_the_configs_field_by_field():
    data = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    data["interference"] = {"max_steal": 0.3, "redo": 1}
    data["studies"]["degradation"]["interference"] = {"max_steal": 1.0}
    config.validate(data)
    assert plan.interference(data, "degradation") == {**INTERFERENCE_DEFAULTS, "max_steal": 1.0, "redo": 1}
    assert plan.interference(data, "journal") == {**INTERFERENCE_DEFAULTS, "max_steal": 0.3, "redo": 1}
