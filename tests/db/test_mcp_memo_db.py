"""RecallSet memos over MCP: handles work in stateless and handshake mode, per caller only.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_mcp_memo.py, tests/system/test_mcp_memo_system.py."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from harness.mcp_server import MemoLimits, build_server
from harness.memory import AsyncMemoryStore, Caller
from tests.support.loop_thread import LoopThread
from tests.support.mcp_helpers import text_of

MODES = ["auto", "legacy"]


# --- over MCP -------------------------------------------------------------------------------


async def tool(client: Client, name: str, args: dict[str, Any]) -> tuple[str, bool]:
    result = await client.call_tool(name, args)
    return text_of(result), bool(result.is_error)


async def memo_round_trip(connect: Any) -> None:
    """Open, add, mark, read and list across separate connections: only the handle links them."""
    async with connect() as client:
        opened, error = await tool(client, "recallset_open", {})
        assert not error
        memo = json.loads(opened)["memo"]
        added, error = await tool(
            client, "recallset_add", {"memo": memo, "content": "VPN log shows a timeout"}
        )
        assert not error
        note = json.loads(added)
        assert note["memo"] == memo and note["status"] == "added"
    async with connect() as client:
        marked, error = await tool(
            client, "recallset_mark", {"memo": memo, "id": note["id"], "mark": "keep"}
        )
        assert not error and json.loads(marked)["mark"] == "keep"
        body, error = await tool(client, "recallset_read", {"memo": memo, "id": note["id"]})
        assert (body, error) == ("VPN log shows a timeout", False)
        listed, error = await tool(client, "recallset_overview", {"memo": memo})
        assert not error
        assert [(n["id"], n["mark"]) for n in json.loads(listed)] == [(note["id"], "keep")]
        # the first add without a handle opens a memo and names it
        fresh, error = await tool(client, "recallset_add", {"content": "second memo"})
        other = json.loads(fresh)["memo"]
        assert not error and other != memo
        listed, _ = await tool(client, "recallset_overview", {"memo": other})
        assert [n["title"] for n in json.loads(listed)] == ["second memo"]
        missing, error = await tool(client, "recallset_read", {"memo": memo, "id": "r999"})
        assert error and missing == "error: recallset_read: no RecallSet item with id 'r999'"
        guessed, error = await tool(client, "recallset_overview", {"memo": "memo_guess"})
        assert error and "no memo 'memo_guess'" in guessed
        too_long, error = await tool(client, "recallset_add", {"memo": memo, "content": "x" * 8001})
        assert error and "at most 8000 characters" in too_long


@pytest.mark.parametrize("mode", MODES)
def test_memo_in_process(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str, mode: str
) -> None:
    server = build_server(astore, identity=Caller(tenant, "alice"))
    aloop.run(memo_round_trip(lambda: Client(server, mode=mode)))


def test_expired_memo_is_a_tool_error(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str
) -> None:
    server = build_server(
        astore, identity=Caller(tenant, "alice"), memo_limits=MemoLimits(idle_s=0.2)
    )

    async def go() -> tuple[str, bool]:
        async with Client(server) as client:
            added, _ = await tool(client, "recallset_add", {"content": "short-lived"})
            await anyio.sleep(0.5)
            return await tool(client, "recallset_overview", {"memo": json.loads(added)["memo"]})

    text, error = aloop.run(go())
    assert error and "expired" in text and "recallset_open" in text


def test_a_failed_first_add_leaves_no_memo(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str
) -> None:
    server = build_server(astore, identity=Caller(tenant, "alice"))

    async def go() -> tuple[str, bool]:
        async with Client(server) as client:
            return await tool(client, "recallset_add", {"content": "   "})

    text, error = aloop.run(go())
    assert error and text == "error: recallset_add: content: must be non-empty text"
    assert aloop.run(server.memo_book.open_count()) == 0  # type: ignore[attr-defined]
