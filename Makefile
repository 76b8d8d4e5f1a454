# Modelplane developer tasks. Everything a fresh machine needs is installed from here.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    ?= .venv
PY      := $(VENV)/bin/python
BIN     := $(CURDIR)/bin
CRANK   := $(BIN)/crank
export PATH := $(BIN):$(CURDIR)/$(VENV)/bin:$(PATH)
export GOFLAGS := -mod=mod

EXAMPLE ?= examples/getting-started
PYTEST_ARGS ?=

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(PY): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(PY)

.PHONY: setup
setup: $(PY) tools ## Create the virtualenv, install the package and the Crossplane CLI.

$(CRANK): tools/crank/go.mod tools/crank/go.sum
	@mkdir -p $(BIN)
	cd tools/crank && GOBIN=$(BIN) go install tool
	@touch $(CRANK)

.PHONY: tools
tools: $(CRANK) ## Build the Crossplane CLI (crank) from the Go module proxy into ./bin.

.PHONY: demo
demo: setup ## Render the getting-started fleet offline and show what it composes.
	$(PY) -m modelplane.dev.render $(EXAMPLE)

.PHONY: render
render: $(PY) tools ## Render an example offline: make render EXAMPLE=<dir or file>.
	$(PY) -m modelplane.dev.render $(EXAMPLE)

.PHONY: test
test: setup ## Run the test suite.
	$(PY) -m pytest $(PYTEST_ARGS)

.PHONY: lint
lint: $(PY) ## ruff (lint and format check) and mypy.
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

.PHONY: fmt
fmt: $(PY) ## Apply ruff's formatting and safe fixes.
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

.PHONY: models
models: $(PY) ## Regenerate the typed models from the XRDs.
	$(PY) -m modelplane.dev.models

.PHONY: bench
bench: setup ## Run the benchmarks and print their figures.
	$(PY) -m benches

.PHONY: clean
clean: ## Remove the virtualenv, built tools and caches.
	rm -rf $(VENV) $(BIN) .pytest_cache .mypy_cache .ruff_cache
