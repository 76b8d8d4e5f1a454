# Modelplane developer tasks. Everything a fresh machine needs is installed from here.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    ?= .venv
PY      := $(VENV)/bin/python
BIN     := $(CURDIR)/bin
CRANK   := $(BIN)/crank
export PATH := $(BIN):$(CURDIR)/$(VENV)/bin:$(PATH)

EXAMPLE ?= examples/getting-started
PYTEST_ARGS ?=

# Heavy builds (Go binaries) are cached outside the checkout, keyed by version.
CACHE_DIR ?= $(HOME)/.cache/modelplane
export CACHE_DIR

# Each area keeps its own targets in mk/<area>.mk.
include $(sort $(wildcard mk/*.mk))

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

ORACLE  := $(BIN)/dra-oracle

# Setup steps print one line each (tools/setup/step.sh); each tool's output goes to
# build/logs/<step>.log, shown when the step fails. V=1 streams it as well.
STEP := bash tools/setup/step.sh
export STEP_LOG_DIR := $(CURDIR)/build/logs
export V
# One id per make invocation (kept by sub-makes): a step that ran in it is not "cached".
ifndef STEP_RUN
STEP_RUN := $(shell date +%s%N)
endif
export STEP_RUN

# A stamp, not the interpreter: .venv/bin/python is a link to the system's.
INSTALLED := $(VENV)/.installed

$(INSTALLED): pyproject.toml
	@$(STEP) venv "virtualenv ($(VENV))" -- python3 -m venv $(VENV)
	@$(STEP) pip "package + dev tools (pip)" -- bash -c \
		"$(PY) -m pip install --upgrade pip && $(PY) -m pip install -e '.[dev]'"
	@touch $@

# Reports the virtualenv step when make found it up to date (prerequisite of setup, demo).
.PHONY: installed
installed: $(INSTALLED)
	@$(STEP) --cached pip "virtualenv + package ($(VENV))"

.PHONY: setup
setup: installed tools crossplane oracle schemas chromium ## Install the package, build the Crossplane CLI and the CEL oracle, fetch schemas, install Chromium.

$(CRANK): tools/crank/go.mod tools/crank/go.sum
	@mkdir -p $(BIN)
	@$(STEP) crank "Crossplane CLI (crank)" -- bash -c "cd tools/crank && GOBIN=$(BIN) go install tool"
	@touch $(CRANK)

.PHONY: tools
tools: $(CRANK) ## Build the Crossplane CLI (crank) from the Go module proxy into ./bin.
	@$(STEP) --cached crank "Crossplane CLI (crank)"

$(ORACLE): tests/oracle/go.mod tests/oracle/go.sum tests/oracle/main.go
	@$(STEP) oracle "DRA CEL oracle (Go)" -- bash tests/oracle/build.sh

.PHONY: oracle
oracle: $(ORACLE) ## Build the Go CEL oracle (Kubernetes' own DRA selector code) into ./bin.
	@$(STEP) --cached oracle "DRA CEL oracle (Go)"

.PHONY: schemas
schemas: ## Fetch the pinned CRDs and OpenAPI that composed objects are validated against.
	@$(STEP) schemas "pinned schemas (CRDs, OpenAPI)" \
		--cached-if "cat tools/schemas/*.txt | cmp -s - build/schemas/modules.txt" \
		-- bash tools/schemas/fetch.sh

# `make demo` reconciles the getting-started tour until it settles and prints its tree
# (modelplane.dev.demo); every object goes to DEMO_YAML. `make render` is the one-shot
# offline render of an example.
DEMO_YAML := build/demo/converged.yaml
FORMAT ?= yaml

.PHONY: demo
demo: installed tools ## Reconcile the getting-started tour until it settles (fake providers) and show the tree.
	@$(PY) -m modelplane.dev.demo --yaml-file $(DEMO_YAML)
	$(simulate_example)

.PHONY: render
render: installed tools ## Render an example once, offline: make render EXAMPLE=<dir or file> [FORMAT=tree].
	@$(PY) -m modelplane.dev.render --$(FORMAT) $(EXAMPLE)

# The suite runs on PYTEST_XDIST workers (pytest-xdist), an idle worker taking tests from a
# busy one (worksteal): the loop tests of one file take minutes each, and a file kept whole
# on one worker left the other idle (measured: 1,006 s against 1,188 s with loadfile, on 2
# cores); a module's fixtures are then built once per worker that runs its tests.
# PYTEST_XDIST=0 runs it in this one process.
PYTEST_XDIST ?= 2
XDIST_ARGS = $(if $(filter 0,$(PYTEST_XDIST)),-p no:xdist,-n $(PYTEST_XDIST) --dist worksteal)

.PHONY: test
test: setup ## Run the test suite (PYTEST_XDIST=0: without workers).
	$(PY) -m pytest --ignore=tests/package $(XDIST_ARGS) $(PYTEST_ARGS)  # tests/package: make package-test

.PHONY: lint
lint: $(INSTALLED) ## ruff (lint and format check), mypy, and the import contracts (import-linter).
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	PYTHONPATH=functions:. $(VENV)/bin/lint-imports --no-cache  # the import map (pyproject.toml)

.PHONY: fmt
fmt: $(INSTALLED) ## Apply ruff's formatting and safe fixes.
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

.PHONY: models
models: $(INSTALLED) ## Regenerate the typed models from the XRDs.
	$(PY) -m modelplane.dev.models

.PHONY: check-charts
check-charts: $(INSTALLED) ## Check every pinned chart version against its chart index (needs egress).
	$(PY) -m modelplane.dev.chart_index

.PHONY: bench
bench: setup benchclient ## Run the benchmarks and print their figures (served ones from the Go client).
	$(PY) -m benches

.PHONY: clean
clean: ## Remove the virtualenv, built tools and caches.
	rm -rf $(VENV) $(BIN) .pytest_cache .mypy_cache .ruff_cache
