"""harness-memory: scoped memory for agent runtimes.

``harness.Engine`` runs an agent with memory; ``harness.memory`` is the MemoryStore and
``harness.recallset`` the per-run working memo. Importing does no IO.
"""

from __future__ import annotations

from harness._version import __version__
from harness.engine import Engine, EngineConfig, RunInput, RunOutcome, Verdict
from harness.errors import HarnessError

__all__ = [
    "Engine",
    "EngineConfig",
    "HarnessError",
    "RunInput",
    "RunOutcome",
    "Verdict",
    "__version__",
]
