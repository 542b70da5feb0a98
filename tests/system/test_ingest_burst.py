"""A burst of keyed ingest requests against a store that cannot keep up (issue 31, point 4):
every refused request is a typed, retryable 503 with ``Retry-After`` and no driver text, the
cause is logged, and a retry with the same ``Idempotency-Key`` writes once the store is free."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Route

from bench.common import as_tenant
from harness.mcp_server.ingest import RETRY_AFTER_S, IngestHandler
from harness.memory import AsyncMemoryStore, MemoryStore, Scope
from harness.memory.store.sql import memories as memories_sql
from tests.support.hash_embedder import HashEmbedder
from tests.support.loop_thread import LoopThread, open_async_store

INGEST_KEY = "ingest-key-0123456789abcdef"
AUTH = {"X-Ingest-Key": INGEST_KEY}
BURST = 200
#: Words of the driver's messages the issue found in 503 bodies.
INTERNALS = ("lock timeout", "QueuePool", "canceling statement", "psycopg", "sqlalchemy", "pool")


@pytest.fixture
def small_store(aloop: LoopThread, db_url: str) -> Iterator[AsyncMemoryStore]:
    """A store of two connections (pool 1, overflow 1) whose writers wait 1 s for a lock."""
    s = aloop.run(open_async_store(db_url, HashEmbedder(), pool_size=1, lock_timeout_ms=1000))
    yield s
    aloop.run(s.close())


@pytest.fixture
def ingest_url(aloop: LoopThread, small_store: AsyncMemoryStore) -> Iterator[str]:
    handler = IngestHandler(small_store, INGEST_KEY)
    app = Starlette(routes=[Route("/v1/memories", handler.__call__, methods=["POST"])])
    sock = socket.create_server(("127.0.0.1", 0), backlog=512)  # port 0, held until served
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = aloop.submit(web.serve(sockets=[sock]))
    deadline = time.monotonic() + 60  # a bound for a stuck start, not a speed claim
    while not web.started:
        assert not serving.done(), serving.exception()
        assert time.monotonic() < deadline, "the ingest server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1/memories"
    web.should_exit = True
    serving.result(timeout=30)
    sock.close()


def keyed(tenant: str, n: int) -> dict[str, Any]:
    return {
        "tenant": tenant,
        "scope": "user",
        "scope_id": "alice",
        "kind": "preference",
        "key": "answer-style",
        "content": f"Answer style number {n}",
    }


async def burst(url: str, tenant: str, numbers: range) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=BURST, max_keepalive_connections=BURST)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        return await asyncio.gather(
            *(
                http.post(url, json=keyed(tenant, n), headers={**AUTH, "Idempotency-Key": f"r{n}"})
                for n in numbers
            )
        )


def test_a_burst_the_store_cannot_take_answers_typed_retryable_503s_and_logs_the_cause(
    ingest_url: str, store: MemoryStore, tenant: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="harness.mcp_server.ingest")
    # Another writer holds the key for the whole burst: the two connections wait for it until
    # the lock timeout, every other request waits for a connection until the pool's timeout.
    with as_tenant(store, tenant) as holder:
        holder.execute(memories_sql.lock_key(tenant, Scope.USER, "alice", "answer-style"))
        answers = asyncio.run(burst(ingest_url, tenant, range(BURST)))
    assert Counter(a.status_code for a in answers) == {503: BURST}
    for answer in answers:
        body = answer.json()
        assert body["code"] == "store_busy" and body["retryable"] is True, body
        assert answer.headers["Retry-After"] == str(RETRY_AFTER_S)
        assert not any(word.lower() in answer.text.lower() for word in INTERNALS), answer.text
    causes = [r.getMessage() for r in caplog.records if "store_busy" in r.getMessage()]
    assert len(causes) == BURST  # one line per refused request, with the driver's cause
    assert any("lock timeout" in cause for cause in causes)
    assert any("QueuePool limit" in cause for cause in causes)
    assert all("Traceback" not in cause for cause in causes)

    # Nothing was half-written: the same requests, retried once the key is free, all write.
    retried = asyncio.run(burst(ingest_url, tenant, range(20)))
    assert [a.status_code for a in retried] == [201] * 20, [a.text for a in retried][:2]
    assert all(a.headers["Idempotent-Replayed"] == "false" for a in retried)
