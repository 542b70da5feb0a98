"""The runtime integrations (pydantic-ai, OpenAI Agents, LangGraph, Anthropic) against the test
database. Here ``astore`` is an AsyncMemoryStore driven by this test's ``runner`` (the root
``astore`` lives on ``aloop`` instead)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from harness.clock import FixedClock
from harness.memory import AsyncMemoryStore
from tests.support.hash_embedder import HashEmbedder
from tests.support.loop_thread import open_async_store


@pytest.fixture
def astore(db_url: str, clock: FixedClock, runner: asyncio.Runner) -> Iterator[AsyncMemoryStore]:
    """An AsyncMemoryStore with the deterministic hash embedder, on the session database."""
    store = runner.run(open_async_store(db_url, HashEmbedder(), clock))
    yield store
    runner.run(store.close())
