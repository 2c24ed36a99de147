"""Load and check a boatload configuration; errors name the offending field."""

from __future__ import annotations

from pathlib import Path

import yaml

from boatload.paths import repo_root

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A configuration mistake, told in one line that names the field."""


def _field(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _schema() -> dict:
    schema_path = SCHEMA if SCHEMA.is_file() else repo_root() / "workflow" / "schemas" / "config.schema.yaml"
    return yaml.safe_load(schema_path.read_text())


def validate(config: dict) -> dict:
    """Check `config` against the schema and the cross-references the schema cannot express."""
    import jsonschema  # slow to import (about a second); only validation needs it

    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        where = _field(error.absolute_path)
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            prefix = f"{where}." if error.absolute_path else ""
            raise ConfigError(f"config: {prefix}{extra[0]}: unknown field (allowed: {', '.join(error.schema['properties'])})")
        raise ConfigError(f"config: {where}: {error.message}")
    if not config["studies"]:
        known = ", ".join(_schema()["properties"]["studies"]["properties"])
        raise ConfigError(f"config: studies: empty, so there is nothing to run (known studies: {known})")
    # Each target as provisioning will read it: kind and fs that go together,
    # sizes mkfs accepts, options that apply to the kind.
    from boatload.targets import TargetError, parse_target

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
