"""What only the asyncio facade has: cancellation that really stops the work, and no blocking
of the event loop by embedding."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
import sqlalchemy as sa

from harness.memory import AsyncMemoryStore, MemoryCandidate, RecallRequest
from harness.settings import Settings
from tests.support.hash_embedder import HashEmbedder


def _waiting_on_locks(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                )
            ).scalar_one()
        )


async def _connect(db_url: str, embedder: Any) -> AsyncMemoryStore:
    return await AsyncMemoryStore.connect(
        db_url,
        embedder=embedder,
        migrate=False,
        check_model=False,
        # long enough that only the cancellation can end the wait within the test
        settings=Settings.from_env(lock_timeout_ms=60_000, statement_timeout_ms=60_000),
    )


def test_cancelled_recall_cancels_the_server_query_and_returns_the_connection(
    db_url: str, tenant: str
) -> None:
    holder = sa.create_engine(db_url)

    async def scenario() -> None:
        store = await _connect(db_url, HashEmbedder())
        try:
            await store.write(
                MemoryCandidate(
                    tenant=tenant, scope="user", scope_id="alice", kind="fact", content="Lock me"
                )
            )
            req = RecallRequest(tenant=tenant, user_id="alice", query="lock")
            with holder.connect() as lock_conn:
                lock_conn.execute(sa.text("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE"))
                started = time.monotonic()
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.5):
                        await store.recall(req)
                assert time.monotonic() - started < 2.0
                deadline = time.monotonic() + 1.0
                while time.monotonic() < deadline and (
                    store.connections_in_use() or _waiting_on_locks(holder)
                ):
                    await asyncio.sleep(0.02)
                assert store.connections_in_use() == 0  # every connection back in the pool
                assert _waiting_on_locks(holder) == 0  # and the query no longer on the server
                lock_conn.rollback()
            # the returned connection is healthy: the next recall works
            after = await store.recall(req)
            assert [i.memory.content for i in after.items] == ["Lock me"]
        finally:
            await store.close()

    try:
        asyncio.run(scenario())
    finally:
        holder.dispose()


class _SlowEmbedder(HashEmbedder):
    """Blocks its calling thread, as a real model does while it computes."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.threads.add(threading.get_ident())
        time.sleep(0.3)
        return super().embed(texts)


def test_embedding_runs_off_the_event_loop(db_url: str, tenant: str) -> None:
    embedder = _SlowEmbedder()

    async def scenario() -> int:
        store = await _connect(db_url, embedder)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        try:
            await store.write(
                MemoryCandidate(
                    tenant=tenant, scope="user", scope_id="alice", kind="fact", content="Off loop"
                )
            )
            await store.recall(RecallRequest(tenant=tenant, user_id="alice", query="loop"))
        finally:
            task.cancel()
            await store.close()
        return ticks

    ticks = asyncio.run(scenario())
    assert threading.get_ident() not in embedder.threads  # the loop's thread never embedded
    assert ticks >= 20  # the loop kept running through ~0.6 s of embedding
