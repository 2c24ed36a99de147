"""What a study is: the record each module in boatload.studies declares as
`STUDY`, and the parts every study shares (its settings, the core of a job,
the common columns of its tidy table).

The workflow, the config schema, the CLI, the paper and the blog read the
records (boatload.studies.registry), so a study is declared once, in its module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from boatload.base import dtypes

from boatload.provision.devmodel.presets import hardware


@dataclass(frozen=True)
class ScaleGap:
    """One quantity of a study's size, ours against the original's, as the
    threats section's scale table gives it: each side a path of keys into the
    study's summary (a list found there counts by its largest value) or, for
    the original, a number."""

    quantity: str
    ours: tuple[str, ...]
    original: tuple[str, ...] | float
    unit: str = ""
    #: the original's value is in units this many times ours (GB against MiB: 1024)
    original_scale: float = 1.0


@dataclass(frozen=True)
class Original:
    """What the paper says of a study's original, held here so that the audit,
    the introduction and the threats section read it from the record."""

    #: the key of the original in paper/references.yml
    citation: str
    #: the machine it ran on, a phrase ("a {original[memory]} virtual machine"):
    #: {...} fields are filled from the study's summary, a list joined with "and"
    hardware: str
    #: the tidy table's absolute rate column and its unit
    rate: tuple[str, str]
    #: the size quantities of the scale gap
    scale: tuple[ScaleGap, ...] = ()


@dataclass(frozen=True)
class PeerTable:
    """A standard tool run beside the worker on the same points: the table the
    study's notebook writes (results/tables/<table>) with the worker's rate over
    the tool's per point in `column`; the audit summarises it."""

    #: the tool, as the audit names it ("fio")
    peer: str
    #: the file name under results/tables/
    table: str
    #: the column of worker-over-peer ratios
    column: str
    #: what the tool stands for, a phrase ("fio in the place of the original's vdbench")
    role: str
    #: how the peer's run differs from the worker's beside the same parameters, a phrase
    #: ("for bonnie++, a memory limit of its own of the same size")
    setting: str | None = None


@dataclass(frozen=True)
class Uncovered:
    """Published points of the original with no counterpart here, which the
    audit counts and the study's section names: their list in the summary and
    what one and several of them are."""

    #: a path of keys into the study's summary to the list
    where: tuple[str, ...]
    #: singular and plural, e.g. ("journal point the original did not finish", "... points ...")
    what: tuple[str, str]


@dataclass(frozen=True)
class Study:
    name: str
    #: the study's place in the paper and every listing (smaller first)
    order: int
    #: a heading's worth, e.g. "File count"
    title: str
    #: the original's question, one sentence (the blog's subtitle, the report caption)
    question: str
    #: JSON schema (an object) of `studies.<name>` in the config: help and defaults live here
    settings: dict
    #: config -> every run at the config's scale (each from `base_job`)
    jobs: Callable[[dict], list[dict]]
    #: job -> the raw result document (provision, measure, tear down: boatload.measure.runner.run_job)
    run: Callable[[dict], dict]
    #: raw document -> one line for the log
    summary: Callable[[dict], str]
    #: the study's own tidy columns (boatload.base.dtypes), between HEAD_COLUMNS and TAIL_COLUMNS
    columns: dict
    #: raw document -> rows of the tidy table (each from `base_row`)
    rows: Callable[[dict], list[dict]]
    #: the tidy table's sort order
    sort: tuple[str, ...]
    #: job -> the external commands it runs (the preflight checks them)
    tools: Callable[[dict], set[str]] = field(default=lambda job: set())
    #: job -> a rough duration in seconds, for the plan and the progress line
    estimate_s: Callable[[dict], float] = field(default=lambda job: 1.0)
    #: job -> bytes it keeps in the scratch directory besides its target (archives)
    scratch_bytes: Callable[[dict], int] = field(default=lambda job: 0)
    #: the figures its notebook writes, results/figures/<name>-<figure>.{svg,png,pdf,vl.json}
    figures: tuple[str, ...] = ()
    #: without root: measure a plain directory in the target's place (True), or record the runs as skipped
    measures_without_root: bool = False
    #: cold or warm, ours and the original's, as the paper states it
    cache: dict | None = None
    #: settings per scale (ci, quick, full) that the config's entry may override
    defaults: dict = field(default_factory=dict)
    #: the original as the paper describes it (citation, hardware, rate, scale gap)
    original: Original | None = None
    #: (a summary's claim, the study's jobs) -> the (target, point) pairs whose runs
    #: the claim's two sides rest on (the points `reproduce --settle` measures again)
    claim_points: Callable[[dict, list], set] = field(default=lambda claim, jobs: named_points(claim, jobs))
    #: its claims' answers are known (the calibration study): counted apart from the studies' claims
    known_answers: bool = False
    #: a standard tool's table beside the worker's (the audit's peer summary)
    peers: PeerTable | None = None
    #: a path of keys into the summary to the cgroup memory limit it ran under, MiB
    #: (a list there counts by its largest value)
    memory_limit: tuple[str, ...] | None = None
    #: the original's memory, a phrase filled from the summary like Original.hardware ("{original[memory]}")
    original_memory: str | None = None
    #: published rows that have no counterpart here (the original's variants not rerun)
    unmapped_rows: Uncovered | None = None
    #: published points missing from the original itself (runs it did not finish)
    missing_points: Uncovered | None = None
    #: the unit of a result without a rate (the summary's `not_measured`), singular and plural
    not_measured_unit: tuple[str, str] = ("result", "results")
    #: a sentence on what one repetition is, where it is not one run (the audit's B4)
    repetition_note: str | None = None
    #: the original's own baseline that every ratio divides by, a phrase ("one file") (the audit's D1)
    baseline: str | None = None

    @property
    def table_schema(self) -> dict:
        """Every column of the tidy table (without the run's interference columns, boatload.analysis.tidy)."""
        every = {**HEAD_COLUMNS, **self.columns, **TAIL_COLUMNS}
        return {name: dtypes.to_polars(dtype) for name, dtype in every.items()}

    @property
    def caption(self) -> str:
        """The report's caption of the study's table and figures (reStructuredText)."""
        figures = ", ".join(f"``{self.name}-{f}``" for f in self.figures)
        return (f"**{self.title}**: {self.question} Figures: {figures or 'none'}; "
                f"``{self.name}.csv`` holds the measured values.")


def named_points(claim: dict, jobs: list[dict]) -> set[tuple[str, str]]:
    """The (target, point) pairs a claim names: targets among its `target`
    (sides joined by " / "), `numerator` and `denominator`; of those targets'
    points, the ones it names too, else all of them (a study with one point a target)."""
    names = {part.strip() for key in ("target", "numerator", "denominator")
             if isinstance(claim.get(key), str) for part in claim[key].split(" / ")}
    behind = {(job["target"]["name"], job["point"]) for job in jobs if job["target"]["name"] in names}
    return {(t, p) for t, p in behind if p in names} or behind


# Every tidy table starts with these columns and ends with those.
HEAD_COLUMNS = {"host": dtypes.String, "study": dtypes.String, "target": dtypes.String, "filesystem": dtypes.String,
                "hardware": dtypes.String}
TAIL_COLUMNS = {"status": dtypes.String, "reason": dtypes.String, "worker_version": dtypes.String,
                "kernel": dtypes.String, "started_at": dtypes.String}


def settings_schema(description: str, required: list[str], **fields: dict) -> dict:
    """The JSON schema of a study's settings: `targets` (config target names,
    required), `repetitions` and `interference` (overriding the top level's, field
    by field) as every study has them, then the study's own fields, each with its
    help and default."""
    return {
        "description": description,
        "type": "object",
        "additionalProperties": False,
        "required": ["targets", *required],
        "properties": {"targets": {"$ref": "#/$defs/target_list"}, "repetitions": {"$ref": "#/$defs/repetitions"},
                       "drop_caches": {"$ref": "#/$defs/drop_caches"},
                       "interference": {"$ref": "#/$defs/interference"}, **fields,
                       "per_target": {
                           "description": "the study's own fields set again for one of its targets (a target name: "
                                          "{field: value}), e.g. a smaller working set on a modelled disk, "
                                          "whose seeks make every file cost milliseconds",
                           "type": "object",
                           "additionalProperties": {"type": "object", "additionalProperties": False,
                                                    "properties": fields},
                       }},
    }


def defaults_of(schema: dict) -> dict:
    """The `default` of every property of a settings schema."""
    return {k: v["default"] for k, v in schema.get("properties", {}).items() if "default" in v}


def settings(config: dict, study: Study) -> dict:
    """A study's settings as it runs them: the schema's defaults, then the
    study's defaults for the config's scale, then the config's entry; with
    `repetitions` resolved against the top level."""
    entry = config["studies"][study.name] or {}
    merged = {**defaults_of(study.settings), **study.defaults.get(config.get("scale"), {}), **entry}
    merged.setdefault("repetitions", config["repetitions"])
    return merged


def first_rounds_field(what: str) -> dict:
    """The schema of a setting that measures `what` (points no claim rests on) in the first rounds only."""
    return {"type": "integer", "minimum": 1,
            "description": f"rounds {what} is measured in, the first ones (default: the study's repetitions); "
                           "no claim rests on it, so it needs fewer runs than a claim's points"}


def first_rounds(settings: dict, field: str) -> range:
    """The rounds of points no claim rests on: the first `settings[field]` of the study's
    repetitions (all of them without the setting); a later look's rounds add none."""
    return range(1, min(settings.get(field) or settings["repetitions"], settings["repetitions"]) + 1)


#: the schema of `peer_repetitions`: a peer checks the worker, no claim rests on its runs
PEER_REPETITIONS = first_rounds_field("the peer tools beside the worker")


def with_peers(tools: list[str], settings: dict, rep: int) -> list[str]:
    """`tools` (the worker, then its peers) in the rounds the peers run in (the first
    `peer_repetitions`: first_rounds), the worker alone in the others."""
    return list(tools) if rep in first_rounds(settings, "peer_repetitions") else list(tools[:1])


def more_rounds(settings: dict, rounds: int | None) -> range:
    """The rounds of points a study measures in `rounds` when more than its repetitions (points
    whose claims sit near a line of the verdict rule, in short runs): all of the study's otherwise."""
    return range(1, max(settings["repetitions"], rounds or 0) + 1)


def for_target(settings: dict, target: str) -> dict:
    """A study's settings for the jobs of one target: with its `per_target` entry over them."""
    return {**settings, **(settings.get("per_target") or {}).get(target, {})}


def target_spec(config: dict, name: str) -> dict:
    """A target as jobs carry it: its config entry with its name."""
    return {"name": name, **config["targets"][name]}


def base_job(config: dict, study: str, target: str, point: str, rep: int, **fields) -> dict:
    """The core every job has: study, scale, target (spec with name), point
    (a path-safe id within the target), rep, and a seed that differs per
    repetition; `fields` are the study's own."""
    job = {
        "study": study,
        "scale": config["scale"],
        "target": target_spec(config, target),
        "point": point,
        "rep": rep,
        **fields,
        "seed": config["seed"] + rep,
    }
    # only when asked for: a job's fields are its identity, and runs without it stay as measured
    if (config["studies"].get(study) or {}).get("drop_caches"):
        job["drop_caches"] = True
    return job


def base_row(doc: dict, status: str, reason: str | None) -> dict:
    """The columns every tidy row has (HEAD_COLUMNS and TAIL_COLUMNS) for a raw
    run document; `status` and `reason` are the row's own. A run on a stand-in
    directory (a target it could not make) is not a measurement of that target:
    its rows are skipped, with the substitution as the reason."""
    job, made = doc["job"], doc.get("target") or {}
    substituted = made.get("substituted")
    return {
        "host": doc["machine"]["host"],
        "study": doc["study"],
        "target": job["target"]["name"],
        "filesystem": made.get("fs") or job["target"].get("fs"),
        # "this machine", or the device model the target ran on (data/devmodels.yaml)
        "hardware": hardware(job["target"]),
        "status": "skipped" if substituted else status,
        "reason": substituted or reason,
        "worker_version": doc["worker"]["version"],
        "kernel": doc["machine"]["kernel"],
        "started_at": doc["started_at"],
    }
