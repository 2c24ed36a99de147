"""The arguments papermill gives every study notebook from the config: the
verdict rule's settings (config `verdicts`) and the figure files to write
(config `figure_formats`). The workflow's notebook rules and settle's looks
both pass them, so a look's analysis follows the same rule as the workflow's."""

from __future__ import annotations

import json

from boatload.studies.config import figure_formats


def notebook_arguments(config: dict, formats: list[str] | None = None) -> list[str]:
    """papermill's `-p` per verdict setting, then `-y` setting `formats` (None: the config's figure_formats)."""
    verdicts = [a for k, v in sorted((config.get("verdicts") or {}).items()) for a in ("-p", k, str(v))]
    return [*verdicts, "-y", f"formats: {json.dumps(list(formats or figure_formats(config)))}"]
