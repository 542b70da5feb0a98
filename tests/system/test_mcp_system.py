"""The MCP server, exercised with the SDK's own client (in-process, HTTP and stdio).

Here the tests with other processes, servers or real faults; the others are in
tests/db/test_mcp.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from harness.mcp_server import (
    hash_token,
)
from harness.memory import MemoryStore
from tests.support.mcp_helpers import INGEST_KEY, lexical_env, seed, text_of

# --- HTTP ------------------------------------------------------------------------------------


def http_call(base: str, token: str | None, tool: str, args: dict[str, Any]) -> str:
    async def go() -> str:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        ):
            return text_of(await client.call_tool(tool, args))

    return anyio.run(go)


def test_tokens_are_stored_hashed(http_server: dict[str, Any]) -> None:
    raw = http_server["tokens"].path.read_text()
    assert http_server["alice"] not in raw
    assert hash_token(http_server["alice"]) in raw


def test_http_tokens_never_see_each_others_memories(
    http_server: dict[str, Any], store: MemoryStore, tenant: str
) -> None:
    seed(store, tenant)
    base = http_server["base"]
    as_alice = http_call(
        base, http_server["alice"], "recall_memories", {"query": "staging cluster"}
    )
    as_bob = http_call(base, http_server["bob"], "recall_memories", {"query": "staging cluster"})
    assert "kestrel" in as_alice and "osprey" not in as_alice
    assert "osprey" in as_bob and "kestrel" not in as_bob
    unauth = httpx.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert unauth.status_code == 401
    wrong = httpx.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Authorization": "Bearer hm_not-a-token",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert wrong.status_code == 401


def test_ingest_checks_key_body_guard_and_is_idempotent(
    http_server: dict[str, Any], store: MemoryStore, tenant: str
) -> None:
    url = f"{http_server['base']}/v1/memories"
    good = {
        "tenant": tenant,
        "scope": "user",
        "scope_id": "alice",
        "kind": "fact",
        "content": "The release train leaves on Thursdays",
    }
    assert httpx.post(url, json=good).status_code == 401
    assert (
        httpx.post(url, json=good, headers={"X-Ingest-Key": "wrong-key-0123456789"}).status_code
        == 401
    )
    auth = {"Authorization": f"Bearer {INGEST_KEY}"}
    bad = httpx.post(url, json={**good, "scope": "galaxy"}, headers=auth)
    assert bad.status_code == 400 and "scope" in bad.json()["fields"]
    notjson = httpx.post(url, content=b"{oops", headers=auth)
    assert notjson.status_code == 400 and notjson.json()["fields"] == ["body"]
    secret = httpx.post(url, json={**good, "content": "password: hunter2!"}, headers=auth)
    assert secret.status_code == 422
    assert secret.json()["rule"] == "password_assignment" and secret.json()["error"]
    key = {**auth, "Idempotency-Key": "req-1"}
    first = httpx.post(
        url, json=[good, {**good, "content": "Deploys need two approvals"}], headers=key
    )
    assert first.status_code == 201 and first.headers["Idempotent-Replayed"] == "false"
    again = httpx.post(
        url, json=[good, {**good, "content": "Deploys need two approvals"}], headers=key
    )
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    clash = httpx.post(url, json=good, headers=key)
    assert clash.status_code == 409
    ids = [m["id"] for m in first.json()["memories"]]
    assert all(store.get(i, tenant=tenant) is not None for i in ids)
    out = http_call(
        http_server["base"],
        http_server["alice"],
        "recall_memories",
        {"query": "when does the release train leave"},
    )
    assert "Thursdays" in out


def test_stdio_server_subprocess(
    store: MemoryStore, tenant: str, db_url: str, tmp_path: Path
) -> None:
    seed(store, tenant)
    env = lexical_env(
        tmp_path,
        HARNESS_DATABASE_URL=db_url,
        HARNESS_MCP_TENANT=tenant,
        HARNESS_MCP_USER="bob",
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-W", "ignore", "-m", "harness.cli", "mcp"], env=env
    )

    async def go() -> tuple[list[str], str]:
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, text_of(
                await client.call_tool("recall_memories", {"query": "staging cluster"})
            )

    names, out = anyio.run(go)
    assert "recall_memories" in names
    assert "osprey" in out and "kestrel" not in out
