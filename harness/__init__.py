"""harness-memory: scoped memory for agent runtimes.

``harness.memory`` is the MemoryStore, ``harness.recallset`` the per-run working memo.
"""

from __future__ import annotations

from harness.errors import HarnessError

__all__ = ["HarnessError"]
