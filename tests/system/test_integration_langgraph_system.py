"""LangGraph integration: the MemoryStore as a LangGraph ``BaseStore``, the recall node in a real
``StateGraph`` with LangChain's fake chat models, and the post-verdict lesson.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_integration_langgraph.py,
tests/db/integrations/test_integration_langgraph_db.py."""

from __future__ import annotations

import subprocess
import sys

# --- the example ---------------------------------------------------------------------------------


def test_importing_without_the_extra_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['langgraph'] = None; sys.modules['langgraph.store'] = None\n"
        "try:\n    import harness.integrations.langgraph\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'harness-memory-pg[langgraph]'" in out.stdout
