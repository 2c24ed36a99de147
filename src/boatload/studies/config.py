"""Load and check a boatload configuration; errors name the offending field."""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import yaml

from boatload.base.errors import ConfigError
from boatload.base.paths import repo_root

__all__ = ["ConfigError", "load", "schema", "validate"]

SCHEMA_FILE = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


def _field(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def schema() -> dict:
    """The config's JSON schema: the file's top level, and `studies.<name>`
    from each study's record (boatload.studies), where its settings, their
    help and defaults live."""
    from boatload.studies import registry

    out = copy.deepcopy(_schema_file())
    out["properties"]["studies"]["properties"] = {name: s.settings for name, s in registry().items()}
    out["properties"]["settle"]["properties"]["per_study"]["propertyNames"] = {"enum": list(registry())}
    return out


@lru_cache(maxsize=1)
def _schema_file() -> dict:
    """The schema file parsed, once a process (a validation per config mutation parsed it each time)."""
    path = SCHEMA_FILE if SCHEMA_FILE.is_file() else repo_root() / "workflow" / "schemas" / "config.schema.yaml"
    return yaml.safe_load(path.read_text())


def _fill_scale_defaults(config: dict) -> None:
    """Each study's defaults for the config's scale under its entry, so that a
    config names only what it changes (`studies: {toy: {}}` runs toy as its
    module sets it for the scale)."""
    from boatload.studies import registry

    studies = config.get("studies")
    if not isinstance(studies, dict):
        return
    scale = config.get("scale")  # not yet validated: a malformed one fills nothing and the schema names it
    for name, entry in studies.items():
        study = registry().get(name)
        if study is not None and (entry is None or isinstance(entry, dict)):
            studies[name] = {**(study.defaults.get(scale, {}) if isinstance(scale, str) else {}), **(entry or {})}


def validate(config: dict) -> dict:
    """Check `config` against the schema and the cross-references the schema cannot express."""
    import jsonschema  # slow to import (about a second); only validation needs it

    _fill_scale_defaults(config)
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        where = _field(error.absolute_path)
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            prefix = f"{where}." if error.absolute_path else ""
            raise ConfigError(f"config: {prefix}{extra[0]}: unknown field (allowed: {', '.join(error.schema['properties'])})")
        if error.validator == "contains" and "const" in error.validator_value:
            raise ConfigError(f"config: {where}: must include {error.validator_value['const']!r}, not only "
                              f"{error.instance}")
        raise ConfigError(f"config: {where}: {error.message}")
    if not config["studies"]:
        known = ", ".join(schema()["properties"]["studies"]["properties"])
        raise ConfigError(f"config: studies: empty, so there is nothing to run (known studies: {known})")
    only = config.get("only_studies")
    for name in (only or "").split(",") if only else []:
        if name not in config["studies"]:
            raise ConfigError(f"config: only_studies: '{name}' is not one of this config's studies "
                              f"({', '.join(config['studies'])})")
    # Each target as provisioning will read it: kind and fs that go together,
    # sizes mkfs accepts, options that apply to the kind.
    from boatload.base.targetspec import TargetError, parse_target

    for name, spec in config["targets"].items():
        try:
            parse_target(name, spec)
        except TargetError as exc:
            raise ConfigError(f"config: {exc}") from None
    for study, settings in config["studies"].items():
        for i, name in enumerate(settings.get("targets", [])):
            if name not in config["targets"]:
                known = ", ".join(sorted(config["targets"]))
                raise ConfigError(f"config: studies.{study}.targets[{i}]: unknown target '{name}' (known: {known})")
        for name in (settings.get("per_target") or {}):
            if name not in settings.get("targets", []):
                raise ConfigError(f"config: studies.{study}.per_target.{name}: not one of the study's targets "
                                  f"({', '.join(settings.get('targets', []))})")
    return config


def load(path: Path) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"config: file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config: {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config: {path}: expected a mapping at the top level")
    return validate(data)


def figure_formats(config: dict) -> list[str]:
    """The files the notebooks write of each figure (config `figure_formats`, else the schema's default)."""
    return list(config.get("figure_formats") or schema()["properties"]["figure_formats"]["default"])
