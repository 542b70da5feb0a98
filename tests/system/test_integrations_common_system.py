"""MemoryRun, the runtime-neutral part of every integration: recall once, RecallSet tool calls
that never raise, writes only after the verdict, for the right scope and tenant.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_integrations_common.py, tests/db/integrations/test_integrations_common_db.py."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("module", "runtime", "extra"),
    [
        ("harness.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("harness.integrations.openai_agents", "agents", "openai-agents"),
    ],
)
def test_without_the_extra_the_import_error_names_the_extra(
    module: str, runtime: str, extra: str
) -> None:
    import subprocess
    import sys

    code = (
        f"import sys; sys.modules[{runtime!r}] = None\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert f"pip install 'harness-memory-pg[{extra}]'" in done.stdout
