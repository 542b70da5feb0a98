"""RecallSet memos over MCP: handles work in stateless and handshake mode, per caller only."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import anyio
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from harness.mcp_server import Identity, MemoLimits, build_server
from harness.mcp_server.sessions import MemoExpired, MemoNotFound, RecallSets
from harness.memory import AsyncMemoryStore

from .loop_thread import LoopThread
from .test_mcp import http_server, text_of  # noqa: F401  (fixture shared with test_mcp)

MODES = ["auto", "legacy"]

ALICE = Identity("t1", "alice")
BOB = Identity("t1", "bob")
ALICE_ELSEWHERE = Identity("t2", "alice")


# --- the registry alone (no server, no database) ------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_handles_are_long_random_and_distinct() -> None:
    memos = RecallSets()
    handles = {memos.open(ALICE)[0] for _ in range(200)}
    assert len(handles) == 200
    for handle in handles:
        assert re.fullmatch(r"memo_[A-Za-z0-9_-]{22}", handle)  # 16 random bytes


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from([ALICE, BOB, ALICE_ELSEWHERE]), st.booleans()), max_size=40
    )
)
def test_a_handle_opens_only_for_its_caller(ops: list[tuple[Identity, bool]]) -> None:
    memos = RecallSets(MemoLimits(max_memos_per_caller=3))
    owners: dict[str, Identity] = {}
    for who, opening in ops:
        if opening or not owners:
            handle, rs = memos.open(who)
            rs.add(f"{who.tenant}/{who.user_id} {handle}")
            owners[handle] = who
        for handle, owner in owners.items():
            for other in (ALICE, BOB, ALICE_ELSEWHERE):
                if other == owner:
                    try:
                        notes = memos.get(handle, other).items()
                    except MemoExpired:
                        continue  # closed by the cap: allowed for the owner only
                    assert [n.content for n in notes] == [
                        f"{owner.tenant}/{owner.user_id} {handle}"
                    ]
                else:
                    with pytest.raises(MemoNotFound):
                        memos.get(handle, other)
        assert memos.open_count(who) <= 3


def test_idle_memos_expire_and_say_so() -> None:
    clock = Clock()
    memos = RecallSets(MemoLimits(idle_s=60), clock=clock)
    old, rs = memos.open(ALICE)
    rs.add("note")
    live, _ = memos.open(ALICE)
    clock.now = 50
    memos.get(live, ALICE)  # use refreshes the timer
    clock.now = 100
    with pytest.raises(MemoExpired, match="idle"):
        memos.get(old, ALICE)
    assert memos.get(live, ALICE) is not None
    with pytest.raises(MemoNotFound):  # another caller is told nothing about it
        memos.get(old, BOB)
    clock.now = 1000
    assert memos.sweep() == 0
    assert rs.items() == []  # the notes are gone, not just unreachable


def test_cap_per_caller_drops_least_recently_used() -> None:
    memos = RecallSets(MemoLimits(max_memos_per_caller=2))
    first, _ = memos.open(ALICE)
    second, _ = memos.open(ALICE)
    memos.get(first, ALICE)
    bobs, _ = memos.open(BOB)
    third, _ = memos.open(ALICE)
    with pytest.raises(MemoExpired, match="more than 2"):
        memos.get(second, ALICE)
    assert memos.get(first, ALICE) is not None and memos.get(third, ALICE) is not None
    assert memos.get(bobs, BOB) is not None  # one caller's cap never closes another's memos
    assert memos.open_count() == 3
    memos.discard(third, ALICE)
    memos.discard(third, ALICE)  # idempotent
    with pytest.raises(MemoNotFound):
        memos.get(third, ALICE)


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
    server = build_server(astore, identity=Identity(tenant, "alice"))
    aloop.run(memo_round_trip(lambda: Client(server, mode=mode)))


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
    http_server: dict[str, Any],  # noqa: F811
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


def test_expired_memo_is_a_tool_error(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str
) -> None:
    server = build_server(
        astore, identity=Identity(tenant, "alice"), memo_limits=MemoLimits(idle_s=0.2)
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
    server = build_server(astore, identity=Identity(tenant, "alice"))

    async def go() -> tuple[str, bool]:
        async with Client(server) as client:
            return await tool(client, "recallset_add", {"content": "   "})

    text, error = aloop.run(go())
    assert error and text == "error: recallset_add: content: must be non-empty text"
    assert aloop.run(server.memo_book.open_count()) == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", MODES)
def test_memo_over_stdio(db_url: str, tenant: str, mode: str) -> None:
    env = {
        **os.environ,
        "HARNESS_DATABASE_URL": db_url,
        "HARNESS_MCP_TENANT": tenant,
        "HARNESS_MCP_USER": "alice",
        "HARNESS_EMBED_MODEL_PATH": "/nonexistent-model",
    }
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
