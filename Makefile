# Quick start: `make demo` runs the demo, `make test` runs the whole test suite.
# `make demo` installs the project alone into .venv (what the demo needs); every other target
# adds the dev extras (tests, linters, the agent runtimes) on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BASE := $(VENV)/.installed-base
INSTALLED := $(VENV)/.installed

# Developer machines and CI keep a local copy of the embedding model beside the checkout;
# elsewhere set HARNESS_EMBED_MODEL_PATH yourself (or let fastembed download the model).
HARNESS_EMBED_MODEL_PATH ?= $(abspath $(wildcard ../shared/models/all-MiniLM-L6-v2-onnx))
export HARNESS_EMBED_MODEL_PATH

.PHONY: demo test test-citus test-under-load browser lint typecheck pytest pytest-fast pytest-db pytest-system bench bench-smoke mutate clean

# The project and its runtime dependencies only. A .venv made before the distribution was
# renamed (harness-memory -> harness-memory-pg) still holds the old name: drop it first.
$(BASE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip uninstall --quiet --yes harness-memory 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(INSTALLED): $(BASE)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(BASE)
	$(BIN)/harness-memory demo

# `browser` first: a machine without the browser stops at once, not after lint and mypy.
test: browser lint typecheck pytest

# The tests marked `citus` and `cluster` on a real Citus cluster (coordinator + 2 workers in a
# temporary folder, stopped always); builds Citus first when ../shared/citus has no cached build
# (6-8 minutes once per machine). `make test` never needs Citus.
test-citus: $(INSTALLED)
	.ci/test-citus

# The whole of `make test`, three times in a row beside two CPU hogs (bench/hogs.py): the
# suite must not depend on a quiet machine. Prints pass/fail and wall time of each run.
test-under-load: $(INSTALLED)
	$(BIN)/python -m bench.hogs --hogs 2 --runs 3 --json bench/.work/test-under-load.json -- $(MAKE) --no-print-directory test

# The console's browser test drives Debian's chromium through chromium-driver. Installed here
# when missing (as root, with apt-get); otherwise make stops at once, saying how.
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium and chromium-driver (apt-get) for the console's browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; \
	else \
	  echo "make: the browser test needs /usr/bin/chromium and /usr/bin/chromedriver: run 'sudo apt-get install -y chromium chromium-driver' (Debian, Ubuntu), then make test again" >&2; \
	  exit 2; \
	fi

# ruff's rules and formatting, then the architecture: the import contracts in .importlinter.
lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(INSTALLED)
	$(BIN)/mypy

# Every test: tests/unit, tests/db and tests/system (pyproject.toml's testpaths).
pytest: browser $(INSTALLED)
	$(BIN)/pytest

# Unit tests only: no PostgreSQL, no model, no other process; about a minute.
pytest-fast: $(INSTALLED)
	$(BIN)/pytest tests/unit

# Database tests: the embedded PostgreSQL in-process (some with the embedding model).
pytest-db: $(INSTALLED)
	$(BIN)/pytest tests/db

# System tests: subprocesses, servers, the browser, the wheel, real faults (minutes).
pytest-system: browser $(INSTALLED)
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
