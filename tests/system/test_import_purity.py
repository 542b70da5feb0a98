"""Importing the pure layers loads no database or model code, and the command line starts
fast: each checked in a fresh interpreter (this process has loaded everything already)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest

HEAVY = ("sqlalchemy", "psycopg", "alembic", "pgvector", "onnxruntime", "fastembed")


def _loaded_after(statement: str) -> list[str]:
    code = (
        f"import sys, json; {statement}; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return list(json.loads(done.stdout))


@pytest.mark.parametrize(
    "statement",
    [
        "import harness",
        "import harness.recallset",
        "from harness.recallset import RecallSet, Mark",
        "import harness.memory",
        "import harness.memory.domain.types, harness.memory.domain.recall",
        "import harness.memory.domain.ranking, harness.memory.domain.caller",
        "import harness.memory.guard",
        "from harness.memory import Scope, Kind, MemoryCandidate, RecallRequest",
        "import harness.cli",
    ],
)
def test_a_pure_import_loads_no_database_or_model_code(statement: str) -> None:
    loaded = _loaded_after(statement)
    assert "harness" in loaded
    assert not set(HEAVY) & set(loaded), statement


def test_the_store_itself_does_load_them() -> None:
    # the check above can fail: naming the store loads SQLAlchemy and the driver
    assert {"sqlalchemy", "psycopg"} <= set(_loaded_after("from harness.memory import MemoryStore"))


def test_version_takes_under_a_second_of_cpu() -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.stdout.startswith("harness-memory-pg ")
    assert cpu < 1.0, f"{cpu:.2f} s of CPU"
