"""Pooled connections the server ended are replaced at checkout, without a ping per checkout:
the next call after ``pg_terminate_backend`` (what a server restart or an idle timeout does to
a pool) succeeds on both facades.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_pool_recovery.py."""

from __future__ import annotations

import asyncio
import time

import sqlalchemy as sa

from harness.clock import FixedClock
from harness.memory import AsyncMemoryStore, MemoryCandidate, RecallRequest
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import make_store


def _end_other_backends(db_url: str) -> int:
    """Terminate every other connection to the database; returns how many were ended."""
    engine = sa.create_engine(db_url, poolclass=sa.NullPool)
    try:
        with engine.connect() as conn:
            ended = conn.execute(
                sa.text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            ).scalar_one()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                left = conn.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
                ).scalar_one()
                if left == 0:
                    break
                time.sleep(0.05)
            return int(ended)
    finally:
        engine.dispose()


def _cand(content: str) -> MemoryCandidate:
    return MemoryCandidate(
        tenant="pool-t", scope="user", scope_id="u", kind="preference", content=content
    )


def test_sync_store_survives_its_pooled_connections_being_ended(
    private_db_url: str, clock: FixedClock
) -> None:
    store = make_store(private_db_url, HashEmbedder(), clock)
    try:
        first = store.write(_cand("before the restart"))
        assert _end_other_backends(private_db_url) >= 1
        second = store.write(_cand("after the restart"))
        assert store.get(first.id, tenant="pool-t") is not None
        got = store.get(second.id, tenant="pool-t")
        assert got is not None and got.content == "after the restart"
        result = store.recall(RecallRequest(tenant="pool-t", user_id="u", query="restart"))
        assert {i.memory.id for i in result.items} == {first.id, second.id}
    finally:
        store.close()


def test_async_store_survives_its_pooled_connections_being_ended(
    private_db_url: str, clock: FixedClock
) -> None:
    async def scenario() -> None:
        store = await AsyncMemoryStore.connect(
            private_db_url, embedder=HashEmbedder(), clock=clock, migrate=False, check_model=False
        )
        try:
            first = await store.write(_cand("before the restart"))
            assert await asyncio.to_thread(_end_other_backends, private_db_url) >= 1
            second = await store.write(_cand("after the restart"))
            got = await store.get(second.id, tenant="pool-t")
            assert got is not None and got.content == "after the restart"
            result = await store.recall(
                RecallRequest(tenant="pool-t", user_id="u", query="restart")
            )
            assert {i.memory.id for i in result.items} == {first.id, second.id}
        finally:
            await store.close()

    asyncio.run(scenario())
