# boatload, the front door without Nix. `make reproduce` and `make test` need
# nothing typed by hand first: they install uv if missing, sync the locked
# environment, and build the worker.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
CONFIG ?= config/config.yaml
STUDY ?= forest
VENV := $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH)
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")

.PHONY: reproduce test test-native test-python figure lab env worker clean-mounts clean dry-run

## reproduce: run every study and build results/paper/paper.pdf (root: real mounts; else plain directories)
reproduce: env worker
	@trap 'boatload cleanup' EXIT; snakemake --configfile $(CONFIG)

## dry-run: show what reproduce would run
dry-run: env
	snakemake --configfile $(CONFIG) --dry-run

## test: C tests (plain and sanitized), the pytest suite, and an end-to-end run on config/ci.yaml
test: env worker test-native test-python

test-native:
	$(MAKE) -C native test
	$(MAKE) -C native test-sanitize

test-python: env worker
	pytest

## figure: rerun one study's notebook and the paper from the data already measured (STUDY=forest),
## with the config those data were measured with (or CONFIG=...)
figure: env
	boatload figure $(STUDY) $(if $(filter command line,$(origin CONFIG)),--configfile $(CONFIG))

## lab: JupyterLab on the notebooks
lab: env
	jupyter lab notebooks/

env: $(VENV)/.synced

$(VENV)/.synced: pyproject.toml uv.lock
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || \
	  python3 -m pip install --quiet uv || python3 -m pip install --quiet --break-system-packages uv
	$(UV) sync --frozen
	@touch $@

worker:
	$(MAKE) -C native

## clean-mounts: unmount, detach and delete anything a killed run left behind
clean-mounts: env
	boatload cleanup --force

clean: clean-mounts
	rm -rf results .snakemake
	$(MAKE) -C native clean
