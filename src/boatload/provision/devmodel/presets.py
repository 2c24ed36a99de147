"""Presets of the originals' hardware (data/devmodels.yaml) and a target's
`model:`, checked field by field.

    model: hdd-7200
    model: {preset: raid-hdd, disks: 8, chunk_kb: 128}

Every error is one line naming the config field (`targets.NAME.model.FIELD`).
"""

from __future__ import annotations

from functools import lru_cache

import yaml

from boatload.provision.devmodel import native
from boatload.base.paths import repo_root
from boatload.base.targetspec import TargetError

KINDS = ("hdd", "raid", "ssd")
DISK_FIELDS = (
    "rpm", "cylinders", "seek_track_ms", "seek_avg_ms", "seek_full_ms", "rate_outer_mbps",
    "rate_inner_mbps", "zones", "cache_mb", "cache_hit_us",
)
FIELDS = {
    "hdd": DISK_FIELDS,
    "raid": (*DISK_FIELDS, "disks", "chunk_kb"),
    "ssd": ("read_latency_us", "read_mbps", "write_latency_us", "write_mbps", "flush_us"),
}
INTEGER_FIELDS = ("zones", "disks")


class ModelError(TargetError):
    """A model's configuration is wrong; the message names the field."""


@lru_cache(maxsize=1)
def presets() -> dict[str, dict]:
    """Each preset's parameters (kind and fields; a `base` preset's fields
    taken in), without descriptions and sources."""
    raw = yaml.safe_load((repo_root() / "data" / "devmodels.yaml").read_text())["presets"]
    out: dict[str, dict] = {}
    for name, p in raw.items():
        base = raw[p["base"]] if "base" in p else {}
        merged = {**base, **p}
        out[name] = {"kind": merged["kind"], **{f: merged[f] for f in FIELDS[merged["kind"]]}}
    return out


def describe(name: str) -> dict:
    """A preset as the data file gives it: description, parameters, sources."""
    return describe_all()[name]


def describe_all() -> dict[str, dict]:
    """Every preset as the data file gives it (the paper's models appendix)."""
    return yaml.safe_load((repo_root() / "data" / "devmodels.yaml").read_text())["presets"]


def resolve(model, where: str) -> dict:
    """The model parameters (C names) of a target's `model:` value; `where`
    is its config path, e.g. "targets.raid.model"."""
    if isinstance(model, str):
        model = {"preset": model}
    if not isinstance(model, dict):
        raise ModelError(f"{where}: expected a preset name or a mapping with 'preset', got {type(model).__name__}")
    name = model.get("preset")
    if name not in presets():
        raise ModelError(f"{where}.preset: expected one of {', '.join(presets())}, got {name!r}")
    params = dict(presets()[name])
    for key, value in model.items():
        if key == "preset":
            continue
        if key not in FIELDS[params["kind"]]:
            raise ModelError(
                f"{where}.{key}: not a parameter of a {params['kind']} model "
                f"(one of {', '.join(FIELDS[params['kind']])})"
            )
        integer = key in INTEGER_FIELDS
        if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
            raise ModelError(f"{where}.{key}: expected {'an integer' if integer else 'a number'}, got {value!r}")
        params[key] = value
    return params


def hardware(target: dict) -> str:
    """The data device of a target, for result rows: "this machine", or the
    model's preset (an overridden preset gets a *)."""
    return _model_name(target.get("model"))


def log_hardware(target: dict) -> str | None:
    """The external log's device: its model, "this machine" (an image in
    /dev/shm), or None for an internal log."""
    log = target.get("log")
    return _model_name(log.get("model")) if log else None


#: the hardware of a target without a model: the disk behind its loop device, or memory
THIS_MACHINE = "this machine"


def _model_name(model) -> str:
    if model is None:
        return THIS_MACHINE
    return model if isinstance(model, str) else f"{model.get('preset')}*"


def served(params: dict, stack_us: float, reads_timed: bool = True) -> dict:
    """The model as the stack serves it, for the filter: unchanged, but for an SSD whose reads no
    measurement sees (`reads_timed` False: presets.check), its read no cheaper than the stack."""
    if reads_timed or params["kind"] != "ssd":
        return params
    return {**params, "read_latency_us": max(params["read_latency_us"], stack_us)}


def check(params: dict, where: str, size: int, stack_us: float = 0.0, reads_timed: bool = True) -> None:
    """The model's own checks (params.c), including that no request is
    more than 15 % cheaper than the stack's own cost `stack_us`; one line naming the field.
    `reads_timed` False (a file system's external log: written in every timed phase,
    read only at mount) leaves an SSD's reads out of the stack check: they are served
    at the stack's floor where the model is faster, and no measurement sees them."""
    try:
        native.calc({**served(params, stack_us, reads_timed), "stack_us": round(stack_us, 1)}, size, "check")
    except ValueError as e:
        field = str(e).split(" ", 1)[0]
        if field == "stack_us" or field not in FIELDS[params["kind"]]:
            raise ModelError(f"{where}: {e}") from None
        raise ModelError(f"{where}.{e}") from None
