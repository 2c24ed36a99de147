# boatload: every experiment, analysis and the paper, in one direction.
# The rules live in workflow/rules/ (common.smk: names and helpers; measure,
# analysis, paper); the profile Snakemake loads by itself is profiles/default/.
#   data/runs/<host>/<study>/<target>/<point>/rep<N>.json    raw, with provenance
#   data/runs/<host>/<study>.parquet                         tidy, one table per study
#   results/{notebooks,figures,tables}/                      papermill notebooks
#   results/paper/paper.pdf                                  Typst

import sys
from pathlib import Path

from boatload.studies.config import ConfigError, validate
from boatload.base.paths import scratch_dir
from boatload.workflow.preflight import preflight
from boatload.workflow.reproduce import clear_stale_lock, locks_matter

# The quick scale unless --configfile names another. Only one config file is
# read: a second one would be deep-merged into the first and quietly inherit
# targets and options it does not name.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


try:
    validate(config)
except ConfigError as exc:
    sys.exit(f"boatload: {exc}")

# A second run of this clone is refused in one line naming the first, and a
# lock that no live Snakemake of this clone holds (a killed run) is removed,
# for a bare `snakemake` as for `make reproduce` (which checks the same first).
# Snakemake takes its lock after reading this file.
# (Not in a job of the SLURM executor: its Snakemake runs beside ours, by design.)
if workflow.is_main_process and locks_matter(sys.argv):
    clear_stale_lock(Path.cwd().resolve())


include: "workflow/rules/common.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/paper.smk"


# Before anything is mounted: the plan, and every problem of this machine
# with it at once (preflight.py); `make dry-run` prints the same.
# In the fleet this host only submits: its plan is printed, and each node
# needs what README's "The fleet on SLURM" lists.
if workflow.is_main_process:
    PLAN_LINES, PREFLIGHT = preflight(config, CONFIGFILE, RUN_LIST, Path(RUNS), scratch_dir(), Path("results"), PLAN_ERRORS)
    if FLEET:
        PLAN_LINES[1:] = [line for line in PLAN_LINES[1:] if not line.startswith("  ")]
        PLAN_LINES.append(f"  the fleet: {len(HOSTS)} nodes ({', '.join(HOSTS)}), each measuring every run in its node-local scratch")
        PREFLIGHT.problems[:] = list(PLAN_ERRORS)
    print("\n".join(PLAN_LINES), file=sys.stderr)
    if PREFLIGHT.problems:
        sys.exit(PREFLIGHT.refusal())


rule all:
    input:
        "results/paper/paper.pdf",
        expand("data/runs/{host}/{study}.parquet", host=HOSTS, study=STUDIES),
        expand("results/blog/{study}.html", study=ANALYSED),
    default_target: True
