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
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

ORACLE  := $(BIN)/dra-oracle

# A stamp, not the interpreter: .venv/bin/python is a link to the system's.
INSTALLED := $(VENV)/.installed

$(INSTALLED): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

.PHONY: setup
setup: $(INSTALLED) tools crossplane oracle schemas ## Install the package, build the Crossplane CLI and the CEL oracle, fetch schemas.

$(CRANK): tools/crank/go.mod tools/crank/go.sum
	@mkdir -p $(BIN)
	cd tools/crank && GOBIN=$(BIN) go install tool
	@touch $(CRANK)

.PHONY: tools
tools: $(CRANK) ## Build the Crossplane CLI (crank) from the Go module proxy into ./bin.

$(ORACLE): tests/oracle/go.mod tests/oracle/go.sum tests/oracle/main.go
	bash tests/oracle/build.sh

.PHONY: oracle
oracle: $(ORACLE) ## Build the Go CEL oracle (Kubernetes' own DRA selector code) into ./bin.

.PHONY: schemas
schemas: ## Fetch the pinned CRDs and OpenAPI that composed objects are validated against.
	bash tools/schemas/fetch.sh

.PHONY: demo
demo: $(INSTALLED) tools ## Render the getting-started fleet offline and show what it composes.
	$(PY) -m modelplane.dev.render $(EXAMPLE)

.PHONY: render
render: $(INSTALLED) tools ## Render an example offline: make render EXAMPLE=<dir or file>.
	$(PY) -m modelplane.dev.render $(EXAMPLE)

.PHONY: test
test: setup ## Run the test suite.
	$(PY) -m pytest $(PYTEST_ARGS)

.PHONY: lint
lint: $(INSTALLED) ## ruff (lint and format check) and mypy.
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

.PHONY: fmt
fmt: $(INSTALLED) ## Apply ruff's formatting and safe fixes.
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

.PHONY: models
models: $(INSTALLED) ## Regenerate the typed models from the XRDs.
	$(PY) -m modelplane.dev.models

.PHONY: bench
bench: setup ## Run the benchmarks and print their figures.
	$(PY) -m benches

.PHONY: clean
clean: ## Remove the virtualenv, built tools and caches.
	rm -rf $(VENV) $(BIN) .pytest_cache .mypy_cache .ruff_cache
