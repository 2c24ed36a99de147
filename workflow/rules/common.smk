# Shared names: the host, where runs go, the worker every experiment is pinned to.

import json
import os
from glob import glob

from boatload.interference import DEFAULTS as INTERFERENCE_DEFAULTS
from boatload.studies import FIGURES, NAMES, study
from boatload.system import hostname

HOST = config.get("host") or hostname()
RUNS = f"data/runs/{HOST}"
CONFIGFILE = os.path.relpath(str((workflow.overwrite_configfiles or ["config/config.yaml"])[-1]))
# The studies this config asks for and this version of boatload can run.
STUDIES = [name for name in NAMES if name in config["studies"]]
# Studies whose notebook exists: each brings a table, a summary and figures to the paper.
ANALYSED = [name for name in STUDIES if os.path.exists(f"notebooks/{name}.ipynb")]

# What counts as a disturbed timed phase; every job carries it, so a raw run says what it was held to.
INTERFERENCE = {**INTERFERENCE_DEFAULTS, **config.get("interference", {})}

# Nix puts the worker in the store and says where; otherwise we build it here.
WORKER = os.environ.get("BOATLOAD_WORKER") or "native/build/boatload-worker"
# Every experiment depends on the worker build and on the locked environment,
# so a new worker or a new lock reruns the measurements that used the old one.
PINNED = {"worker": WORKER, "lock": "uv.lock"}

if WORKER == "native/build/boatload-worker":

    rule build_worker:
        input:
            sources=sorted(glob("native/src/*.[ch]")),
            makefile="native/Makefile",
        output:
            WORKER,
        shell:
            "make -C native"
