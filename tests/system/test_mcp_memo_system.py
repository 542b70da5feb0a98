"""RecallSet memos over MCP: handles work in stateless and handshake mode, per caller only.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_mcp_memo.py, tests/db/test_mcp_memo_db.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.db.test_mcp_memo_db import MODES, memo_round_trip, tool
from tests.support.mcp_helpers import lexical_env


def http_client(base: str, token: str, mode: str) -> Any:
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def connect() -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as c,
        ):
            yield c

    return connect


@pytest.mark.parametrize("mode", MODES)
def test_memo_over_http_is_bound_to_the_token(
    http_server: dict[str, Any],
    mode: str,
) -> None:
    base = http_server["base"]
    as_alice = http_client(base, http_server["alice"], mode)
    as_bob = http_client(base, http_server["bob"], mode)
    anyio.run(memo_round_trip, as_alice)

    async def across() -> None:
        async with as_alice() as alice:
            added, _ = await tool(alice, "recallset_add", {"content": "alice's secret note"})
            memo, item = json.loads(added)["memo"], json.loads(added)["id"]
        async with as_bob() as bob:
            for name, args in [
                ("recallset_overview", {"memo": memo}),
                ("recallset_read", {"memo": memo, "id": item}),
                ("recallset_mark", {"memo": memo, "id": item, "mark": "discard"}),
                ("recallset_add", {"memo": memo, "content": "bob writes here"}),
            ]:
                text, error = await tool(bob, name, args)
                assert error and f"no memo {memo!r} for this caller" in text
                assert "secret" not in text
        async with as_alice() as alice:
            listed, error = await tool(alice, "recallset_overview", {"memo": memo})
            assert not error
            assert [(n["title"], n["mark"]) for n in json.loads(listed)] == [
                ("alice's secret note", "check")
            ]

    anyio.run(across)


def test_a_second_token_of_the_same_user_reads_no_memo_even_after_the_first_is_revoked(
    http_server: dict[str, Any], tenant: str
) -> None:
    """Memos are bound to the token, not only to its tenant and user (issue 31, point 4)."""
    from harness.memory import Caller
    from harness.token_files import hash_token, read_entries, write_entries

    base, tokens = http_server["base"], http_server["tokens"]
    first = http_server["alice"]
    second = tokens.add(Caller(tenant, "alice"))  # the same tenant and user, another token
    as_first, as_second = http_client(base, first, "auto"), http_client(base, second, "auto")

    async def strangers_see_nothing(memo: str, item: str) -> None:
        async with as_second() as client:
            for name, args in [
                ("recallset_overview", {"memo": memo}),
                ("recallset_read", {"memo": memo, "id": item}),
                ("recallset_mark", {"memo": memo, "id": item, "mark": "discard"}),
                ("recallset_add", {"memo": memo, "content": "written with the second token"}),
            ]:
                text, error = await tool(client, name, args)
                assert error and f"no memo {memo!r} for this caller" in text, text
                assert "first token" not in text

    async def go() -> None:
        async with as_first() as client:
            added, _ = await tool(client, "recallset_add", {"content": "the first token's note"})
            memo, item = json.loads(added)["memo"], json.loads(added)["id"]
        await strangers_see_nothing(memo, item)
        # revoke the first token: its memo stays out of the second token's reach
        kept = [e for e in read_entries(tokens.path, "tokens") if e["sha256"] != hash_token(first)]
        write_entries(tokens.path, "tokens", kept)
        await strangers_see_nothing(memo, item)
        async with httpx2.AsyncClient(timeout=30) as http:
            refused = await http.post(
                f"{base}/mcp", headers={"Authorization": f"Bearer {first}"}, json={}
            )
        assert refused.status_code == 401

    anyio.run(go)


@pytest.mark.parametrize("mode", MODES)
def test_memo_over_stdio(db_url: str, tenant: str, mode: str, tmp_path: Path) -> None:
    env = lexical_env(
        tmp_path,
        HARNESS_DATABASE_URL=db_url,
        HARNESS_MCP_TENANT=tenant,
        HARNESS_MCP_USER="alice",
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-W", "ignore", "-m", "harness.cli", "mcp"], env=env
    )

    async def go() -> None:
        async with Client(params, mode=mode) as client:

            class Same:  # one subprocess: the memo must survive between stateless requests
                async def __aenter__(self) -> Client:
                    return client

                async def __aexit__(self, *exc: object) -> None:
                    return None

            await memo_round_trip(Same)

    anyio.run(go)
