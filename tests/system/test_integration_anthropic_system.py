"""Anthropic memory tool: the SDK's abstract memory tool backed by harness-memory, fed the SDK's
own command objects (and, end to end, its tool runner over a scripted HTTP transport).

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_integration_anthropic.py,
tests/db/integrations/test_integration_anthropic_db.py."""

from __future__ import annotations

import subprocess
import sys

# --- the example and the import guard ------------------------------------------------------------


def test_importing_without_the_extra_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['anthropic'] = None\n"
        "try:\n    import harness.integrations.anthropic_memory\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'harness-memory-pg[anthropic]'" in out.stdout
