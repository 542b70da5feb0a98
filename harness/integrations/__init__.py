"""Glue between harness-memory and the agent runtimes people already use.

One module per runtime, each behind its own extra and imported explicitly, e.g.
``from harness.integrations.pydantic_ai import memory_toolset`` after
``pip install 'harness-memory-pg[pydantic-ai]'``. Every integration follows the engine's three
rules: recall once before the first model call, into the system prompt / instructions; the
run's RecallSet as the model's tools; long-term writes only after the final verdict.
Importing this package does no IO and imports no runtime.
"""

from __future__ import annotations

__all__: list[str] = []
