"""The ingest endpoint on loopback: identity rule, typed 400s for hostile bodies, and keyed
requests under load (one connection, one transaction per request)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Route

from bench.common import all_tenants
from harness.mcp_server.ingest import IngestHandler
from harness.memory import AsyncMemoryStore, MemoryStore
from tests.support.loop_thread import LoopThread

# Also run on the Citus cluster (make test-citus): the same tests, sharded by tenant.
pytestmark = pytest.mark.citus


INGEST_KEY = "ingest-key-0123456789abcdef"
AUTH = {"X-Ingest-Key": INGEST_KEY}


@pytest.fixture
def ingest_url(aloop: LoopThread, astore: AsyncMemoryStore) -> Iterator[str]:
    handler = IngestHandler(astore, INGEST_KEY)
    app = Starlette(routes=[Route("/v1/memories", handler.__call__, methods=["POST"])])
    # bound here, port 0: the system's free port, held until the server has it
    sock = socket.create_server(("127.0.0.1", 0), backlog=512)
    port = sock.getsockname()[1]
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = aloop.submit(web.serve(sockets=[sock]))  # on the store's loop
    deadline = time.monotonic() + 60  # a bound for a stuck start, not a speed claim
    while not web.started:
        assert not serving.done(), serving.exception()
        assert time.monotonic() < deadline, "the ingest server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/v1/memories"
    web.should_exit = True
    serving.result(timeout=30)
    sock.close()


def good(tenant: str, content: str = "The release train leaves on Thursdays") -> dict[str, Any]:
    return {
        "tenant": tenant,
        "scope": "user",
        "scope_id": "alice",
        "kind": "fact",
        "content": content,
    }


def count(store: MemoryStore) -> int:
    with all_tenants(store) as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM memories")).scalar_one())


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"tenant": "\u3000tA\u3000"}, "tenant"),
        ({"scope_id": "alice "}, "scope_id"),
        ({"key": "k\x00"}, "key"),
        ({"content": "nul \x00 inside"}, "content"),
        ({"content": "lone \ud800 surrogate"}, "content"),
        ({"context": "\x00"}, "context"),
        ({"expires_at": "9999-12-31T23:59:59+00:00"}, "expires_at"),
        ({"source": {"origin": "api", "run_id": "r\x00"}}, "source.run_id"),
    ],
)
def test_hostile_fields_answer_400_naming_the_field(
    ingest_url: str, store: MemoryStore, tenant: str, change: dict[str, Any], field: str
) -> None:
    before = count(store)
    body = json.dumps({**good(tenant), **change}).encode()  # surrogates travel as \\ud800
    answer = httpx.post(ingest_url, content=body, headers=AUTH)
    assert answer.status_code == 400, answer.text
    assert field in answer.json()["fields"]
    assert count(store) == before


def test_deeply_nested_body_answers_400(ingest_url: str, store: MemoryStore) -> None:
    before = count(store)
    deep = b"[" * 100_000 + b"]" * 100_000
    answer = httpx.post(ingest_url, content=deep, headers=AUTH)
    assert answer.status_code in (400, 413)
    nested = b'{"tenant": "t", "content": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    answer = httpx.post(ingest_url, content=nested, headers=AUTH)
    assert answer.status_code == 400 and answer.json()["fields"]
    assert count(store) == before


@pytest.mark.parametrize("key", ["x" * 201])
def test_bad_idempotency_key_answers_400(ingest_url: str, tenant: str, key: str) -> None:
    answer = httpx.post(ingest_url, json=good(tenant), headers={**AUTH, "Idempotency-Key": key})
    assert answer.status_code == 400 and answer.json()["fields"] == ["Idempotency-Key"]


def test_hundred_concurrent_keyed_requests_all_answer_201(
    ingest_url: str, store: MemoryStore, tenant: str
) -> None:
    async def fire() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            return await asyncio.gather(
                *(
                    http.post(
                        ingest_url,
                        json=good(tenant, f"release note number {n}"),
                        headers={**AUTH, "Idempotency-Key": f"req-{n}"},
                    )
                    for n in range(100)
                )
            )

    started = time.monotonic()
    answers = asyncio.run(fire())
    elapsed = time.monotonic() - started
    assert [a.status_code for a in answers] == [201] * 100, [
        a.text for a in answers if a.status_code != 201
    ][:3]
    assert elapsed < 30
    replay = asyncio.run(fire())
    assert all(a.headers["Idempotent-Replayed"] == "true" for a in replay)
    assert [a.json() for a in replay] == [a.json() for a in answers]
    with all_tenants(store) as conn:
        rows = conn.execute(
            sa.text("SELECT count(*) FROM memories WHERE tenant = :t"), {"t": tenant}
        ).scalar_one()
    assert rows == 100
