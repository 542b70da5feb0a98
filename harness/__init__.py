"""harness-memory: scoped memory for agent runtimes.

``harness.Engine`` runs an agent with memory; ``harness.memory`` is the MemoryStore and
``harness.recallset`` the per-run working memo. Importing does no IO and loads nothing but
this file: each name is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports
from harness._version import __version__

if TYPE_CHECKING:
    from harness.errors import HarnessError
    from harness.run.engine import Engine, EngineConfig, RunInput, RunOutcome, Verdict

__all__ = [
    "Engine",
    "EngineConfig",
    "HarnessError",
    "RunInput",
    "RunOutcome",
    "Verdict",
    "__version__",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Engine": "harness.run.engine",
        "EngineConfig": "harness.run.engine",
        "RunInput": "harness.run.engine",
        "RunOutcome": "harness.run.engine",
        "Verdict": "harness.run.engine",
        "HarnessError": "harness.errors",
    },
)
