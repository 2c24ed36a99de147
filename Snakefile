# boatload: every experiment, analysis and the paper, in one direction.
#   data/runs/<host>/<study>/<target>/<method>/rep<N>.json   raw, with provenance
#   data/runs/<host>/<study>.parquet                         tidy, one table per study
#   results/{notebooks,figures,tables}/                      papermill notebooks
#   results/paper/paper.pdf                                  Typst

import sys

from boatload.config import ConfigError, validate

configfile: "config/config.yaml"

try:
    validate(config)
except ConfigError as exc:
    sys.exit(f"boatload: {exc}")


include: "workflow/rules/common.smk"
include: "workflow/rules/forest.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/paper.smk"


rule all:
    input:
        "results/paper/paper.pdf",
    default_target: True
