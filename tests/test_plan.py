"""boatload.workflow.plan: the runs of a config, their order, and what each needs."""

import random
import subprocess
import sys
from collections import Counter

import pytest
import yaml

from boatload.workflow import plan
from boatload.base import tools
from boatload.studies.config import ConfigError, validate
from boatload.studies import forest, study
from conftest import ROOT

CONFIGS = ["ci", "config", "full"]


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name", CONFIGS)
def test_every_job_once_in_the_seeded_order(name):
    config = load(name)
    runs = plan.runs(config)
    jobs = [(s, j["target"]["name"], j["point"], j["rep"]) for s in plan.studies(config) for j in study(s).jobs(config)]
    assert Counter(r.key for r in runs) == Counter(jobs) and len(set(jobs)) == len(jobs)
    # round by round (the reps), each round shuffled with the seed and its number
    expected = []
    for rep in sorted({j[3] for j in jobs}):
        this_round = sorted(j for j in jobs if j[3] == rep)
        random.Random(f"{config['seed']}/round {rep}").shuffle(this_round)
        expected += this_round
    assert [r.key for r in runs] == expected
    assert [r.rep for r in runs] == sorted(r.rep for r in runs)
    # Another seed, another order; the same seed, the same order.
    assert [r.key for r in plan.runs({**config, "seed": config["seed"] + 1})] != expected
    assert [r.key for r in plan.runs(config)] == expected


@pytest.mark.parametrize("name", CONFIGS)
def test_every_run_names_known_tools_and_a_positive_estimate(name):
    for run in plan.runs(load(name)):
        needs = plan.needs(run)
        assert needs.tools <= set(tools.BY_COMMAND), (run.key, needs.tools - set(tools.BY_COMMAND))
        assert plan.estimate_s(run) > 0
        if run.job["target"]["kind"] == "loop":
            assert needs.loop and needs.scratch_bytes >= run.job["target"]["size_mb"] << 20
            assert f"mkfs.{run.job['target']['fs']}" in needs.tools


def test_what_the_quick_runs_need():
    runs = {r.key: plan.needs(r) for r in plan.runs(load("config"))}
    tmpfs_beyond = runs[("tmpfs", "ext3", "ws1.6", 1)]
    # The ext3 image and the swap file, both under the scratch directory.
    assert tmpfs_beyond.scratch_bytes == (2048 + 1024) << 20
    assert {"mkswap", "swapon", "swapoff", "bonnie++", "mkfs.ext3"} <= tmpfs_beyond.tools
    assert tmpfs_beyond.scratch_fields == ["targets.ext3.size_mb", "studies.tmpfs.swap_mb"]
    external = runs[("journal", "xfs-log-external", "meta", 1)]
    assert external.shm_bytes == 128 << 20 and "xfs_info" in external.tools
    assert runs[("forest", "ext4", "touch-each", 1)].tools == {"losetup", "mount", "umount", "mkfs.ext4", "touch"}
    assert runs[("forest", "ext4", "tar", 1)].scratch_bytes == (2048 << 20) + 1024 * 1000
    # the quick forest: every method on ext4, the worker alone elsewhere (per_target)
    forest = {(k[1], k[2]) for k in runs if k[0] == "forest" and not k[2].startswith("scale-")}
    assert {m for t, m in forest if t == "ext4"} == {"worker-1t", "worker-2t", "python", "touch-many", "touch-each",
                                                     "tar", "unzip"}
    assert {m for t, m in forest if t != "ext4"} == {"worker-1t", "worker-2t"}
    assert "fio" in runs[("filecount", "xfs", "k10-direct", 1)].tools
    assert runs[("degradation", "ext4", "stages", 1)].memory_limit_mb == 128


def test_the_forest_scale_curve_runs_the_worker_at_each_size_on_every_target():
    config = load("ci")
    forest = config["studies"]["forest"]
    assert forest["scale_files"] == [1000, 4000]
    runs = [r for r in plan.runs(config) if r.study == "forest"]
    scale = [r for r in runs if r.point.startswith("scale-")]
    assert {r.key for r in scale} == {("forest", t, f"scale-{n}", rep) for t in forest["targets"]
                                      for n in (1000, 4000) for rep in range(1, config["repetitions"] + 1)}
    for r in scale:
        n = int(r.point.removeprefix("scale-"))
        assert (r.job["method"], r.job["shape"], r.job["series"]) == ("worker-2t", [n // 1000, 1000], "scale")
        assert "time_cap_s" not in r.job  # the worker is never capped
        assert r.raw("runs") == f"runs/forest/{r.target}/scale-{n}/rep{r.rep}.json"
    # the method runs are as before: one per target x method x rep, no series field
    methods = [r for r in runs if not r.point.startswith("scale-")]
    assert len(methods) == len(forest["targets"]) * len(forest["methods"]) * config["repetitions"]
    assert all("series" not in r.job for r in methods)
    # a size whose forest is the methods' own ([1, 1000] here) is measured by the two-thread program's
    # method runs, on the targets that measure it
    forest["shape"] = [1, 1000]
    forest["per_target"] = {forest["targets"][0]: {"methods": ["worker-1t"]}}
    scale = {(r.target, r.point) for r in plan.runs(config) if r.point.startswith("scale-")}
    assert scale == {(t, f"scale-{n}") for t in forest["targets"] for n in (1000, 4000)} - {
        (t, "scale-1000") for t in forest["targets"][1:]}
    # without the setting, no scale runs
    del forest["scale_files"]
    assert not [r for r in plan.runs(config) if r.point.startswith("scale-")]


def test_the_scale_curve_is_measured_in_its_first_rounds_only():
    """The quick forest's scale curve (a rough projection, no interval) in round 1 of 4; the claims' points
    in all 4; a later look's rounds (settle's repetitions) add none to the curve."""
    config = load("config")
    forest = config["studies"]["forest"]
    assert forest["scale_repetitions"] == 1 < plan.repetitions_of(config, "forest") == 4
    runs = [r for r in plan.runs(config) if r.study == "forest"]
    assert {r.rep for r in runs if r.point.startswith("scale-")} == {1}
    # (tar and unzip in 8 rounds: the next test)
    assert {r.rep for r in runs if not r.point.startswith(("scale-", "tar", "unzip"))} == {1, 2, 3, 4}
    # the largest size's forest is the method runs' own ([100, 1000]): the two-thread program's method runs
    # are that point on every target, no scale run beside them
    assert forest["shape"] == [100, 1000] and max(forest["scale_files"]) == 100_000
    assert {(r.target, r.point) for r in runs if r.point.startswith("scale-")} == {
        (t, f"scale-{n}") for t in forest["targets"] for n in forest["scale_files"] if n != 100_000}
    assert {r.target for r in runs if r.point == "worker-2t"} == set(forest["targets"])
    later = plan.runs(plan._with_repetitions(config, "forest", 8))
    assert {r.rep for r in later if r.study == "forest" and r.point.startswith("scale-")} == {1}


def test_the_forests_points_no_claim_compares_are_measured_in_its_first_rounds_only():
    """The quick forest's claims compare the original's methods on ext4 and the native program on
    ext4, ext2 and XFS: those points in every round, the rest in the first (a look adds none);
    tar and unzip, whose claim sits between 1 and the band, in 8 rounds from the start."""
    config = load("config")
    claimed = {("ext4", m) for m in ("worker-1t", "python", "touch-many", "touch-each", "tar", "unzip")} | {
        ("ext2", "worker-1t"), ("xfs", "worker-1t")}
    assert config["studies"]["forest"]["method_repetitions"] == {"tar": 8, "unzip": 8}
    for reps in (4, 12):  # the first rounds, and the forest's last look
        runs = [r for r in plan.runs(plan._with_repetitions(config, "forest", reps))
                if r.study == "forest" and not r.point.startswith("scale-")]
        rounds = {}
        for r in runs:
            rounds.setdefault((r.target, r.point), set()).add(r.rep)
        more = {("ext4", "tar"), ("ext4", "unzip")} if reps < 8 else set()
        assert {p for p, got in rounds.items() if got == set(range(1, reps + 1))} == claimed - more
        assert all(rounds[p] == set(range(1, 9)) for p in more)
        assert all(got == {1} for p, got in rounds.items() if p not in claimed)
        assert ("ext4", "worker-2t") in rounds and ("btrfs", "worker-1t") in rounds
    # a look's rounds for the pair begin after its own 8, never a second run of one round
    looked = plan.runs(config, added={("forest", "ext4", "tar"): 12, ("forest", "ext4", "unzip"): 12})
    keys = [r.key for r in looked if r.study == "forest"]
    assert len(keys) == len(set(keys))
    assert sorted(r.rep for r in looked if (r.study, r.target, r.point) == ("forest", "ext4", "tar")) == list(
        range(1, 13))
    # without an ext4 the claims' home is the first target that is not a tmpfs: all of its methods count
    targets = {"tmpfs": {"fs": "tmpfs"}, "x": {"fs": "xfs"}, "b": {"fs": "btrfs"}}
    assert forest.claimed_points({"targets": targets}, ["tmpfs", "b", "x"]) == {
        ("b", m) for m in forest.CLAIM_METHODS} | {("x", m) for m in forest.CLAIM_METHODS} | {("x", "worker-1t")}
    # a mount of the user's names no file system until it is mounted: it could be the home ext4
    targets["m"] = {"kind": "mount", "path": "/somewhere"}
    assert forest.claimed_points({"targets": targets}, ["tmpfs", "b", "x", "m"]) == {
        ("m", m) for m in forest.CLAIM_METHODS} | {("x", "worker-1t")}


def test_filecounts_curve_is_measured_in_its_first_rounds_and_its_claims_points_in_all():
    """The curve's 10 files in round 1, the claim's 1 and 2 in every round; their O_DIRECT points in 8
    from the start, but on the tmpfs, whose O_DIRECT points are recorded as skipped."""
    config = load("config")
    filecount = config["studies"]["filecount"]
    assert filecount["curve_repetitions"] == 1 and 10 in filecount["files"]
    assert filecount["mode_repetitions"] == {"direct": 8} and "tmpfs" in filecount["targets"]
    for reps in (4, 12):  # the first rounds, and a later look's
        runs = [r for r in plan.runs(plan._with_repetitions(config, "filecount", reps)) if r.study == "filecount"]
        rounds = {}
        for r in runs:
            rounds.setdefault((r.target, r.job["files"], r.job["mode"]), set()).add(r.rep)
        for (target, files, mode), got in rounds.items():
            most = 1 if files == 10 else max(reps, 8) if mode == "direct" and target != "tmpfs" else reps
            assert got == set(range(1, most + 1)), (target, files, mode, reps)
        assert len(rounds) == 3 * 3 * 2
    # a look's rounds for an O_DIRECT point begin after its own 8, never a second run of one round
    looked = plan.runs(config, added={("filecount", "xfs", "k02-direct"): 12})
    keys = [r.key for r in looked if r.study == "filecount"]
    assert len(keys) == len(set(keys))
    assert sorted(r.rep for r in looked if r.key[:3] == ("filecount", "xfs", "k02-direct")) == list(range(1, 13))


def test_the_peers_run_beside_the_worker_in_their_first_rounds_only_also_after_a_look():
    config = load("config")
    for name, peer in (("filecount", "fio"), ("tmpfs", "bonnie")):
        assert config["studies"][name]["peer_repetitions"] == 1 and peer in config["studies"][name]["peers"]
        for reps in (4, 8):  # the first rounds, and a later look's
            runs = [r for r in plan.runs(plan._with_repetitions(config, name, reps)) if r.study == name]
            assert {r.rep for r in runs if len(r.job["tools"]) > 1} == {1}, (name, reps)
            # every point's round 1 has its peer where its target has peers at all (not the modelled disks')
            peered = {t for t in config["studies"][name]["targets"]
                      if (config["studies"][name].get("per_target") or {}).get(t, {}).get("peers") != []}
            assert {(r.target, r.point) for r in runs if r.rep == 1 and len(r.job["tools"]) > 1} == {
                (r.target, r.point) for r in runs if r.target in peered}
            # the estimate counts the peer where it runs only
            one = next(r for r in runs if r.rep == 1 and len(r.job["tools"]) > 1)
            alone = next(r for r in runs if r.rep == 2 and r.target == one.target and r.point == one.point)
            assert study(name).estimate_s(one.job) > study(name).estimate_s(alone.job)
    # without the setting every round has its peers (the full scale's)
    full = load("full")
    assert "peer_repetitions" not in full["studies"]["filecount"]
    runs = [r for r in plan.runs(full) if r.study == "filecount"]
    assert {r.rep for r in runs if len(r.job["tools"]) > 1} == {r.rep for r in runs}


@pytest.mark.parametrize("name", CONFIGS)
def test_forest_estimates_cover_the_scale_runs(name):
    """The worker makes every file (no time cap): its estimate grows with the
    forest, also past the cap, so the 1e7-file runs of the full config count."""
    runs = [r for r in plan.runs(load(name)) if r.study == "forest" and r.point.startswith("scale-")]
    assert runs
    for run in runs:
        files = run.job["shape"][0] * run.job["shape"][1]
        assert study("forest").estimate_s(run.job) >= files / 200_000
    if name == "full":
        biggest = max(runs, key=lambda r: r.job["shape"][0])
        assert biggest.job["shape"] == [10_000, 1000]
        assert study("forest").estimate_s(biggest.job) > 50


def test_a_study_that_cannot_make_runs_is_named_not_raised():
    config = load("ci")
    config["targets"]["ext3"]["size_mb"] = 16
    errors = []
    runs = plan.runs(config, errors)
    assert len(errors) == 1 and errors[0].startswith("targets.ext3.size_mb: ")
    assert "tmpfs" not in {r.study for r in runs} and "forest" in {r.study for r in runs}


def test_not_root_needs_no_mounts_and_says_what_is_skipped(tmp_path):
    from boatload.workflow import preflight

    config = load("ci")
    runs = plan.runs(config)
    report = preflight.check(config, runs, tmp_path / "scratch", tmp_path, euid=1000)
    assert report.problems == []
    facts = "\n".join(report.machine)
    assert "not root" in facts
    assert "forest, filecount will measure a plain directory" in facts or "filecount, forest will measure" in facts
    assert "degradation, journal, tmpfs will be recorded as skipped" in facts
    # As root the same runs need loop devices, a memory cgroup and swap: the report says which it found.
    as_root = preflight.check(config, runs, tmp_path / "scratch", tmp_path, euid=0)
    assert any(f.startswith("loop devices") for f in as_root.machine) or any("loop devices" in p for p in as_root.problems)


def test_only_studies_runs_just_those_and_names_a_stranger():
    config = validate(load("ci"))
    config["only_studies"] = "tmpfs,forest"
    chosen = plan.runs(config)
    assert plan.studies(config) == ["forest", "tmpfs"]  # the paper's order
    assert {r.study for r in chosen} == {"forest", "tmpfs"}
    everything = validate(load("ci"))
    assert len(chosen) == sum(1 for r in plan.runs(everything) if r.study in ("forest", "tmpfs"))
    config["only_studies"] = "forest,toy"
    with pytest.raises(ConfigError, match=r"^config: only_studies: 'toy' is not one of this config's studies"):
        validate(config)


def test_make_dry_run_with_studies_plans_only_those(workdir):
    out = subprocess.run([sys.executable, "-m", "boatload.workflow.cli", "reproduce", "--configfile", "config/ci.yaml",
                          "--studies", "forest tmpfs", "--dry-run"],
                         cwd=workdir, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    config = validate(load("ci"))
    config["only_studies"] = "forest,tmpfs"
    measure = [line.split() for line in out.stdout.splitlines() if line.split()[:1] == ["measure"]]
    assert measure and all(m == ["measure", str(len(plan.runs(config)))] for m in measure), out.stdout
    assert not any(line.split()[:1] in (["notebook_journal"], ["notebook_degradation"])
                   for line in out.stdout.splitlines())
