# Quick start: `make demo` runs the demo, `make test` runs the whole test suite.
# Each target creates .venv and installs the project with its dev extras on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

# Developer machines and CI keep a local copy of the embedding model beside the checkout;
# elsewhere set HARNESS_EMBED_MODEL_PATH yourself (or let fastembed download the model).
HARNESS_EMBED_MODEL_PATH ?= $(abspath $(wildcard ../shared/models/all-MiniLM-L6-v2-onnx))
export HARNESS_EMBED_MODEL_PATH

.PHONY: demo test lint typecheck pytest pytest-fast pytest-db pytest-system bench bench-smoke mutate clean

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(INSTALLED)
	$(BIN)/harness-memory demo

test: lint typecheck pytest

# ruff's rules and formatting, then the architecture: the import contracts in .importlinter.
lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(INSTALLED)
	$(BIN)/mypy

# Every test: tests/unit, tests/db and tests/system (pyproject.toml's testpaths).
pytest: $(INSTALLED)
	$(BIN)/pytest

# Unit tests only: no PostgreSQL, no model, no other process; under a minute.
pytest-fast: $(INSTALLED)
	$(BIN)/pytest tests/unit

# Database tests: the embedded PostgreSQL in-process (some with the embedding model).
pytest-db: $(INSTALLED)
	$(BIN)/pytest tests/db

# System tests: subprocesses, servers, the browser, the wheel, real faults (minutes).
pytest-system: $(INSTALLED)
	$(BIN)/pytest tests/system

# Mutation testing of the core (minutes to an hour): bench/results/mutation.json, docs/mutation.md.
mutate: $(INSTALLED)
	$(BIN)/python -m pip install --quiet -e '.[dev,mutate]'
	$(BIN)/python -m bench.mutation

bench: $(INSTALLED)
	$(BIN)/python -m bench.run

bench-smoke: $(INSTALLED)
	$(BIN)/python -m bench.run --smoke

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache mutants
