# boatload, the front door without Nix. `make reproduce` and `make test` need
# nothing typed by hand first: they install missing system tools (as root on
# Debian or Ubuntu; elsewhere they say what to install), install uv if
# missing, sync the locked environment, and build the worker.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
CONFIG ?= config/config.yaml
STUDY ?= forest
# PROFILE=slurm: the fleet, every node of the config's `cluster` through SLURM (profiles/slurm)
PROFILE ?=
# STUDIES="forest tmpfs": only these of the config's studies (default: all of them)
STUDIES ?=
VENV := $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH)
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
# What scripts/bootstrap.sh installs: the studies' tools, plus the tests' for `make test`.
BOOTSTRAP_FOR := reproduce

.PHONY: settle reproduce test test-native test-python figure lab env worker clean-mounts clean dry-run bootstrap

## reproduce: run every study and build results/paper/paper.pdf (root: real mounts; else plain directories)
reproduce: env worker
	boatload reproduce --configfile $(CONFIG) $(if $(PROFILE),--profile $(PROFILE)) $(if $(STUDIES),--studies "$(STUDIES)")

## settle: after reproduce, more runs of the points behind undecided claims until each is decided
## or MINUTES are spent (a sequential design: config `settle`; the paper states it)
MINUTES ?= 10
settle: env worker
	boatload reproduce --configfile $(CONFIG) --settle $(MINUTES) $(if $(STUDIES),--studies "$(STUDIES)")

## dry-run: the preflight and the plan of reproduce (studies, runs, time, disk) and its jobs; runs nothing
dry-run: env
	boatload reproduce --configfile $(CONFIG) $(if $(PROFILE),--profile $(PROFILE)) $(if $(STUDIES),--studies "$(STUDIES)") --dry-run

## test: C tests (plain and sanitized), the pytest suite, and an end-to-end run on config/ci.yaml
test: BOOTSTRAP_FOR := test
test: env worker test-native test-python

# the native builds on every core (nothing is measured while they run)
NATIVE_JOBS := $(shell nproc 2>/dev/null || echo 1)
test-native:
	$(MAKE) -C native -j$(NATIVE_JOBS) test
	$(MAKE) -C native -j$(NATIVE_JOBS) test-sanitize
	$(MAKE) -C native -j$(NATIVE_JOBS) fuzz-smoke

# First, on three workers, the tests that time nothing and need no quiet machine: those that measure
# nothing (tests/conftest.py's PARALLEL_FILES) and those that measure runs with their redo off
# (PAIRED_FILES); tests sharing one thing of the machine's in an xdist group. Three on two cores: the
# fleet, the kill storm and the fresh machine spend much of their time waiting (bench/README.md, "One
# session on three workers"). Then the timing and quiet-machine ones alone, one at a time (ALONE_FILES).
test-python: env worker
	pytest -m "parallel or paired" -n 3 --dist loadgroup
	pytest -m alone

## figure: rerun one study's notebook and the paper from the data already measured (STUDY=forest),
## with the config those data were measured with (or CONFIG=...)
figure: env
	boatload figure $(STUDY) $(if $(filter command line,$(origin CONFIG)),--configfile $(CONFIG))

## lab: JupyterLab on the notebooks
## (on 127.0.0.1:$(LAB_PORT) with a fresh token; it prints the URL to open)
LAB_PORT ?= 8888
lab: env
	@token=$$(python3 -c 'import secrets; print(secrets.token_hex(16))'); \
	echo "boatload: JupyterLab at http://127.0.0.1:$(LAB_PORT)/lab/tree/forest.ipynb?token=$$token"; \
	echo "boatload: open it in a browser, then Run > Run All Cells (Ctrl-C here stops the server)"; \
	exec jupyter lab --no-browser --ip=127.0.0.1 --port=$(LAB_PORT) --port-retries=0 \
		--ServerApp.root_dir=notebooks --IdentityProvider.token=$$token \
		$$(if [ "$$(id -u)" = 0 ]; then echo --allow-root; fi)

bootstrap:
	@sh scripts/bootstrap.sh $(BOOTSTRAP_FOR)

env: $(VENV)/.synced $(VENV)/.compiled

$(VENV)/.synced: pyproject.toml uv.lock | bootstrap
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || \
	  python3 -m pip install --quiet uv 2>/dev/null || python3 -m pip install --quiet --break-system-packages uv
	# --compile-bytecode: the .pyc files now, not at each first import (and never,
	# where PYTHONDONTWRITEBYTECODE is set: then every Snakemake took 4 s more)
	$(UV) sync --frozen --compile-bytecode
	@touch $@

# boatload's own modules compiled too (uv compiles the locked packages, not the project it installs
# editable): where PYTHONDONTWRITEBYTECODE is set, every `boatload run` process compiled them again.
# Again for each module changed since; an edit without `make env` is compiled in memory, as before.
$(VENV)/.compiled: $(VENV)/.synced $(shell find src -name '*.py' 2>/dev/null)
	python -m compileall -q src
	@touch $@

worker: | bootstrap
	$(MAKE) -C native

## clean-mounts: unmount, detach and delete anything a killed run left behind
## (PROFILE=slurm: on every node of CONFIG's cluster, through srun)
clean-mounts: env
	boatload cleanup --force $(if $(PROFILE),--profile $(PROFILE) --configfile $(CONFIG))

clean: clean-mounts
	rm -rf results .snakemake
	$(MAKE) -C native clean
