"""The measurement plan: every run a config asks for, in the seeded order,
which are still to measure, and what each needs from the machine.

The workflow (workflow/rules/measure.smk), the preflight and the progress
line of `boatload reproduce` all read it, so they agree on what a run is.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from boatload.base.errors import ConfigError
from boatload.measure.interference import DEFAULTS as INTERFERENCE_DEFAULTS
from boatload.studies import names, study
from boatload.provision import capacity
from boatload.provision.capacity import spec_of

MiB = 1 << 20


@dataclass(frozen=True)
class Run:
    study: str
    target: str
    point: str
    rep: int
    job: dict = field(compare=False, hash=False, repr=False)

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.study, self.target, self.point, self.rep)

    def raw(self, runs_dir: str) -> str:
        return raw_run(runs_dir, *self.key)


def raw_run(runs_dir: str, name: str, target: str, point: str, rep: int) -> str:
    """Where a run's raw result lives: <runs_dir>/<study>/<target>/<point>/rep<N>.json."""
    return f"{runs_dir}/{name}/{target}/{point}/rep{rep}.json"


def studies(config: dict) -> list[str]:
    """The studies this config asks for (all of `studies`, or those `only_studies`
    names) and this version of boatload can run, in the paper's order."""
    only = config.get("only_studies")
    chosen = set(only.split(",")) if only else set(config["studies"])
    return [name for name in names() if name in config["studies"] and name in chosen]


def runs(config: dict, errors: list[str] | None = None, added: dict[tuple[str, str, str], int] | None = None) -> list[Run]:
    """Every run of the config in rounds: round r holds every point's rep r,
    in an order shuffled for that round with the config's seed (no target or
    study is always measured first: warm caches, a filling disk, a heating
    CPU), and the rounds follow one another. The two sides of a claim measured
    in one round are a pair (boatload.analysis.intervals.round_ratio_interval): drift
    over the whole run moves both alike.

    `added` (boatload.analysis.settle_record.added_reps): (study, target, point) -> the
    repetitions that point has in all once `boatload reproduce --settle` added
    some; their rep numbers continue after the config's, and the study's own
    jobs make them (a job may depend on its rep).

    A study whose settings cannot make jobs raises ConfigError, or, given a
    list `errors`, adds its one-line reason there and contributes no runs (so
    the preflight can list every problem at once)."""
    out = []
    for name in studies(config):
        more = {key[1:]: reps for key, reps in (added or {}).items() if key[0] == name}
        try:
            jobs = study(name).jobs(config)
            if more:
                # the rounds the study makes already (its repetitions, and more for some points) are not made again
                made = {(job["target"]["name"], job["point"], job["rep"]) for job in jobs}
                jobs += [job for job in study(name).jobs(_with_repetitions(config, name, max(more.values())))
                         if job["rep"] <= more.get((job["target"]["name"], job["point"]), 0)
                         and (job["target"]["name"], job["point"], job["rep"]) not in made]
        except ConfigError as exc:
            if errors is None:
                raise
            errors.append(str(exc).removeprefix("config: "))
            continue
        out += [Run(name, job["target"]["name"], job["point"], job["rep"], job) for job in jobs]
    return in_rounds(out, config["seed"])


def in_rounds(all_runs: list[Run], seed: int) -> list[Run]:
    """`all_runs` round by round (rep 1's, then rep 2's, ...), each round shuffled
    with its own generator from `seed` and the round, so adding rounds later
    (boatload.workflow.settle) leaves the order of the earlier ones as it was."""
    out = []
    for rep in sorted({r.rep for r in all_runs}):
        this_round = sorted((r for r in all_runs if r.rep == rep), key=lambda r: r.key)
        random.Random(f"{seed}/round {rep}").shuffle(this_round)
        out += this_round
    return out


def repetitions_of(config: dict, name: str) -> int:
    return int((config["studies"][name] or {}).get("repetitions", config["repetitions"]))


def _with_repetitions(config: dict, name: str, reps: int) -> dict:
    studies_ = dict(config["studies"])
    studies_[name] = {**(studies_[name] or {}), "repetitions": reps}
    return {**config, "studies": studies_}


def pending(all_runs: list[Run], runs_dir: str) -> list[Run]:
    """The runs whose raw result does not exist yet, in run order."""
    return [r for r in all_runs if not os.path.exists(r.raw(runs_dir))]


@dataclass
class Needs:
    """What one run takes from the machine while it runs."""

    scratch_bytes: int = 0  # images, swap file and archives under the scratch directory
    shm_bytes: int = 0  # external log images in /dev/shm
    memory_limit_mb: int | None = None
    loop: bool = False
    mount: bool = False
    swap: bool = False
    tools: set[str] = field(default_factory=set)
    # the config fields the sizes come from, for messages
    scratch_fields: list[str] = field(default_factory=list)


def needs(run: Run) -> Needs:
    """Resources and tools of one run, from its target and its job."""
    job = run.job
    out = Needs()
    spec = spec_of(job["target"])
    kind, fs = spec.kind, spec.fs
    if kind == "loop":
        out.loop = out.mount = True
        out.scratch_bytes += spec.size_mb * MiB
        out.scratch_fields.append(f"targets.{run.target}.size_mb")
        out.tools |= {f"mkfs.{fs}", "losetup", "mount", "umount"}
        if spec.log_size_mb:
            out.shm_bytes += spec.log_size_mb * MiB
    elif kind == "device":
        out.mount = True
        out.tools |= {f"mkfs.{fs}", "wipefs", "mount", "umount"}
    elif kind == "tmpfs":
        out.mount = True
        out.tools |= {"mount", "umount"}
    if job.get("memory_limit_mb") is not None:
        out.memory_limit_mb = int(job["memory_limit_mb"])
    if job.get("swap_mb"):
        out.swap = True
        out.scratch_bytes += int(job["swap_mb"]) * MiB
        out.scratch_fields.append(f"studies.{run.study}.swap_mb")
        out.tools |= {"mkswap", "swapon", "swapoff"}
    record = study(run.study)
    out.tools |= record.tools(job)
    out.scratch_bytes += record.scratch_bytes(job)
    return out


# Rough cost of making and removing a target, for the time estimate only:
# mkfs writes inode tables and journals up front (lazy_itable_init=0).
ESTIMATE_PROVISION_S = {"loop": 1.0, "device": 1.0, "tmpfs": 0.1, "mount": 0.0, "dir": 0.0}
ESTIMATE_MKFS_MB_PER_S = 2000


def estimate_s(run: Run) -> float:
    """A rough duration of one run: its target's provisioning and its study's model of the measurement."""
    spec = spec_of(run.job["target"])
    provision = ESTIMATE_PROVISION_S.get(spec.kind, 0.0)
    if spec.kind == "loop":
        provision += spec.size_mb / ESTIMATE_MKFS_MB_PER_S
    elif spec.kind == "device":
        provision += (capacity.size_bytes(spec) or 0) / MiB / ESTIMATE_MKFS_MB_PER_S
    return provision + float(study(run.study).estimate_s(run.job))


def interference(config: dict, study_name: str) -> dict:
    """What counts as a disturbed timed phase for a study's runs: the defaults, the config's
    `interference:`, then the study's own `interference:`, field by field."""
    own = (config.get("studies", {}).get(study_name) or {}).get("interference") or {}
    return {**INTERFERENCE_DEFAULTS, **(config.get("interference") or {}), **own}
