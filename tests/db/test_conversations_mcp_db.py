"""Conversation recall over MCP and the keyed ingest route: the caller's own archive only,
honest "nothing" answers, and the HTTP rules of memory ingest (key, Idempotency-Key, typed
400s naming the field with nothing stored)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
from mcp import Client
from starlette.applications import Starlette
from starlette.routing import Route

from harness.mcp_server import build_server
from harness.mcp_server.conversations import ConversationIngestHandler
from harness.memory import AsyncMemoryStore, Caller, MemoryStore
from harness.memory.domain.conversations import NO_CONVERSATIONS
from tests.db.test_conversations_db import SMALL_TALK
from tests.support.loop_thread import LoopThread
from tests.support.mcp_helpers import text_of
from tests.support.stores import T0

INGEST_KEY = "ingest-key-0123456789abcdef"
AUTH = {"X-Ingest-Key": INGEST_KEY}


def turns(*texts: str) -> list[dict[str, Any]]:
    return [
        {
            "seq": n,
            "ts": (T0 + timedelta(minutes=n)).isoformat(),
            "role": "user" if n % 2 == 0 else "assistant",
            "text": text,
        }
        for n, text in enumerate(texts)
    ]


ALICE = turns(
    "What did we decide about the N-11 upgrade?",
    "Go ahead once maintenance ticket MT-4471 on machine K-2 is closed.",
    "Good, and the North line stays at 91% load.",
)
BOB = turns("Motor P-7 has bearing noise, I opened ticket MT-5120.")


def call(aloop: LoopThread, server: Any, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
    async def go() -> tuple[str, bool]:
        async with Client(server) as client:
            result = await client.call_tool(tool, args)
            return text_of(result), bool(result.is_error)

    return aloop.run(go())


def seed(store: MemoryStore, tenant: str) -> None:
    store.put_conversation(tenant=tenant, user_id="alice", conversation_id="n11", turns=ALICE)
    store.put_conversation(tenant=tenant, user_id="bob", conversation_id="p7", turns=BOB)
    store.put_conversation(tenant=tenant, user_id="alice", conversation_id="chat", turns=SMALL_TALK)


def test_recall_my_conversations_answers_from_the_callers_archive_only(
    aloop: LoopThread, astore: AsyncMemoryStore, store: MemoryStore, tenant: str
) -> None:
    seed(store, tenant)
    alice = build_server(astore, identity=Caller(tenant, "alice"))
    out, err = call(aloop, alice, "recall_my_conversations", {"query": "MT-4471 K-2"})
    assert not err
    assert "conversation n11" in out and f"{T0:%Y-%m-%d}" in out and "MT-4471" in out
    sneaky, _ = call(aloop, alice, "recall_my_conversations", {"query": "MT-5120 P-7 bob"})
    assert "MT-5120" not in sneaky
    nobody = build_server(astore, identity=Caller(tenant, "nobody"))
    assert call(aloop, nobody, "recall_my_conversations", {"query": "N-11"}) == (
        NO_CONVERSATIONS,
        False,
    )


def test_reading_tools_open_only_the_callers_conversations(
    aloop: LoopThread, astore: AsyncMemoryStore, store: MemoryStore, tenant: str
) -> None:
    seed(store, tenant)
    alice = build_server(astore, identity=Caller(tenant, "alice"))
    text, err = call(aloop, alice, "read_conversation", {"id": "n11", "from_seq": 1, "to_seq": 1})
    assert not err and "[1] assistant" in text and "MT-4471" in text and "[0]" not in text
    found, err = call(aloop, alice, "find_in_conversation", {"id": "n11", "text": "k-2"})
    assert not err and "[1]" in found
    listed, _ = call(aloop, alice, "list_my_conversations", {})
    assert "n11:" in listed and "3 turns" in listed and "p7" not in listed
    for tool, args in (
        ("read_conversation", {"id": "p7"}),
        ("find_in_conversation", {"id": "p7", "text": "P-7"}),
    ):
        text, err = call(aloop, alice, tool, args)
        assert err and "not found" in text and "MT-5120" not in text


def test_the_tool_descriptions_say_when_and_how_to_call(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str
) -> None:
    server = build_server(astore, identity=Caller(tenant, "alice"))

    async def go() -> dict[str, Any]:
        async with Client(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = aloop.run(go())
    recall = tools["recall_my_conversations"]
    assert recall.input_schema["required"] == ["query"]
    for phrase in ("last time", "what did we decide", "short queries", "identifiers"):
        assert phrase in (recall.description or "")
    assert tools["read_conversation"].input_schema["required"] == ["id"]
    assert tools["find_in_conversation"].input_schema["required"] == ["id", "text"]


def post(
    aloop: LoopThread, astore: AsyncMemoryStore, path: str, body: Any, headers: dict[str, str]
) -> httpx.Response:
    handler = ConversationIngestHandler(astore, INGEST_KEY)
    app = Starlette(
        routes=[Route("/v1/conversations/{conversation_id}", handler.__call__, methods=["POST"])]
    )

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(path, json=body, headers=headers)

    return aloop.run(go())


def test_ingest_posts_replace_and_reposting_embeds_nothing(
    aloop: LoopThread, astore: AsyncMemoryStore, store: MemoryStore, tenant: str
) -> None:
    body = {"tenant": tenant, "user_id": "alice", "turns": ALICE[:2]}
    assert post(aloop, astore, "/v1/conversations/n11", body, {}).status_code == 401
    first = post(aloop, astore, "/v1/conversations/n11", body, AUTH)
    assert first.status_code == 201 and first.json()["embedded"] == 2
    again = post(aloop, astore, "/v1/conversations/n11", body, AUTH)
    assert again.json() == {
        "conversation_id": "n11",
        "turns": 2,
        "embedded": 0,
        "unchanged": 2,
        "removed": 0,
    }
    grown = post(aloop, astore, "/v1/conversations/n11", {**body, "turns": ALICE}, AUTH)
    assert grown.json()["embedded"] == 1
    assert [
        t.seq
        for t in store.read_conversation(tenant=tenant, user_id="alice", conversation_id="n11")
    ] == [0, 1, 2]


def test_ingest_idempotency_key_replays_or_conflicts(
    aloop: LoopThread, astore: AsyncMemoryStore, store: MemoryStore, tenant: str
) -> None:
    body = {"tenant": tenant, "user_id": "alice", "turns": ALICE}
    keyed = {**AUTH, "Idempotency-Key": "post-1"}
    first = post(aloop, astore, "/v1/conversations/n11", body, keyed)
    assert first.status_code == 201 and first.headers["Idempotent-Replayed"] == "false"
    replay = post(aloop, astore, "/v1/conversations/n11", body, keyed)
    assert replay.headers["Idempotent-Replayed"] == "true" and replay.json() == first.json()
    other = post(aloop, astore, "/v1/conversations/n11", {**body, "turns": ALICE[:1]}, keyed)
    assert other.status_code == 409
    assert len(store.read_conversation(tenant=tenant, user_id="alice", conversation_id="n11")) == 3


def test_ingest_bad_input_is_a_400_naming_the_field_with_nothing_stored(
    aloop: LoopThread, astore: AsyncMemoryStore, store: MemoryStore, tenant: str
) -> None:
    good = {"tenant": tenant, "user_id": "alice", "turns": ALICE}
    naive = [{**ALICE[0], "ts": "2026-10-08T10:00:00"}]
    cases = [
        ("/v1/conversations/bad.id", good, ["conversation_id"]),
        ("/v1/conversations/n11", {**good, "turns": [ALICE[1], ALICE[0]]}, ["turns.1.seq"]),
        ("/v1/conversations/n11", {**good, "turns": [ALICE[0], ALICE[0]]}, ["turns.1.seq"]),
        ("/v1/conversations/n11", {**good, "turns": naive}, ["turns.0.ts"]),
        (
            "/v1/conversations/n11",
            {**good, "turns": [{**ALICE[0], "text": "x" * 20_001}]},
            ["turns.0.text"],
        ),
        ("/v1/conversations/n11", {**good, "user_id": ""}, ["user_id"]),
    ]
    for path, body, fields in cases:
        response = post(aloop, astore, path, body, AUTH)
        assert response.status_code == 400, (path, body)
        assert response.json()["fields"] == fields
    assert store.list_conversations(tenant=tenant, user_id="alice") == []
