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

.PHONY: demo test lint typecheck pytest pytest-fast bench bench-smoke mutate clean

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(INSTALLED)
	$(BIN)/harness-memory demo

test: lint typecheck pytest

lint: $(INSTALLED)
	$(BIN)/ruff check .

typecheck: $(INSTALLED)
	$(BIN)/mypy

pytest: $(INSTALLED)
	$(BIN)/pytest

# Pure tests only (no PostgreSQL, no model): seconds.
pytest-fast: $(INSTALLED)
	$(BIN)/pytest -m "not db and not model"

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
