"""Every script in ``examples/`` runs offline against the test PostgreSQL and tells the two-run
story: run 1 is rejected with concrete feedback, run 2's first model request carries the lesson.

The contract each example keeps: exit 0, print ``LESSON: <feedback>`` for run 1's rejection and
``RUN2_FIRST_REQUEST: <json string>`` with the system prompt / instructions of run 2's first
model request.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_examples.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_examples import EXAMPLES


def _line(stdout: str, prefix: str) -> str:
    found = [ln[len(prefix) :].strip() for ln in stdout.splitlines() if ln.startswith(prefix)]
    assert len(found) == 1, f"expected one {prefix!r} line in:\n{stdout}"
    return found[0]


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_tells_the_two_run_story(script: Path, private_db_url: str, tmp_path: Path) -> None:
    # A database of its own: the example's store records the real embedding model, which
    # must not meet vectors other tests built with the hash embedder.
    env = {
        **os.environ,
        "HARNESS_DATABASE_URL": private_db_url,
        "HARNESS_HOME": str(tmp_path / "home"),
        "OPENAI_API_KEY": "",
        "ANTHROPIC_API_KEY": "",
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout}\n{done.stderr}"
    lesson = _line(done.stdout, "LESSON:")
    first_request = json.loads(_line(done.stdout, "RUN2_FIRST_REQUEST:"))
    assert len(lesson.split()) >= 4  # concrete feedback, not a stock phrase
    assert isinstance(first_request, str)
    assert lesson in first_request
    if script.name == "anthropic_memory_two_runs.py":
        # a file the model wrote mid-run is staged, and a rejected run drops it
        assert _line(done.stdout, "MID-RUN FILE WRITTEN LONG-TERM:") == "no"
