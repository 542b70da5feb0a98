"""Shared pieces of the runtime-integration tests: an asyncio store per test, row counts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from harness.clock import FixedClock
from harness.memory import AsyncMemoryStore, Kind, MemoryCandidate, Scope
from tests.conftest import HashEmbedder
from tests.loop_thread import open_async_store

LESSON_FEEDBACK = "The summary must be exactly three lines and cite the source document."


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


@pytest.fixture
def astore(db_url: str, clock: FixedClock, runner: asyncio.Runner) -> Iterator[AsyncMemoryStore]:
    """An AsyncMemoryStore with the deterministic hash embedder, on the session database."""
    store = runner.run(open_async_store(db_url, HashEmbedder(), clock))
    yield store
    runner.run(store.close())


def count_memories(db_url: str, tenant: str) -> int:
    """Every row of ``tenant`` in the memories table, whatever its status (owner connection)."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    sa.text("SELECT count(*) FROM memories WHERE tenant = :t"), {"t": tenant}
                ).scalar_one()
            )
    finally:
        engine.dispose()


def workflow_lesson(tenant: str, content: str, workflow_id: str = "wf-1") -> MemoryCandidate:
    return MemoryCandidate(
        tenant=tenant,
        scope=Scope.WORKFLOW,
        scope_id=workflow_id,
        kind=Kind.LESSON,
        content=content,
        source={"origin": "api"},
    )
