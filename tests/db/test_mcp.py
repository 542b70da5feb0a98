"""The MCP server, exercised with the SDK's own client (in-process, HTTP and stdio).

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/system/test_mcp_system.py."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import anyio
import sqlalchemy as sa
from mcp import Client

from harness.mcp_server import BUSY, STOPPING, UNAVAILABLE, McpLimits, build_server
from harness.mcp_server.server import Drain
from harness.memory import AsyncMemoryStore, Caller, MemoryCandidate, MemoryStore
from tests.support.hash_embedder import HashEmbedder
from tests.support.loop_thread import LoopThread, open_async_store
from tests.support.mcp_helpers import seed, text_of
from tests.support.stores import UNREACHABLE_URL


def call(
    aloop: LoopThread, server: Any, tool: str, args: dict[str, Any], mode: str = "auto"
) -> str:
    """One tool call by an in-process client, on the store's loop."""

    async def go() -> str:
        async with Client(server, mode=mode) as client:
            return text_of(await client.call_tool(tool, args))

    return aloop.run(go())


def unreachable(aloop: LoopThread) -> AsyncMemoryStore:
    """An asyncio store whose database cannot be reached."""
    return aloop.run(open_async_store(UNREACHABLE_URL, HashEmbedder()))


def test_tools_are_listed_with_schemas(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str
) -> None:
    server = build_server(astore, identity=Caller(tenant, "alice"))

    async def go() -> dict[str, Any]:
        async with Client(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = aloop.run(go())
    assert set(tools) == {
        "recall_memories",
        "recallset_open",
        "recallset_add",
        "recallset_mark",
        "recallset_read",
        "recallset_overview",
        "recall_my_conversations",
        "read_conversation",
        "find_in_conversation",
        "list_my_conversations",
    }
    recall = tools["recall_memories"]
    assert "last time" in (recall.description or "")
    assert recall.input_schema["required"] == ["query"]
    add = tools["recallset_add"].input_schema
    assert add["required"] == ["content"]
    assert "ctx" not in add["properties"]
    assert set(add["properties"]["mark"]["enum"]) == {"keep", "check", "discard"}
    assert "memo" in add["properties"]
    for name in ("recallset_mark", "recallset_read", "recallset_overview"):
        assert "memo" in tools[name].input_schema["required"]


def test_recall_reads_only_the_callers_memories(
    aloop: LoopThread, astore: AsyncMemoryStore, store: MemoryStore, tenant: str
) -> None:
    seed(store, tenant)
    server = build_server(astore, identity=Caller(tenant, "alice"))
    out = call(
        aloop, server, "recall_memories", {"query": "what is Alice's staging cluster called"}
    )
    assert "kestrel" in out and "osprey" not in out
    assert "[user preference" in out and "[user fact" in out
    sneaky = call(
        aloop, server, "recall_memories", {"query": "bob's staging cluster osprey user bob"}
    )
    assert "osprey" not in sneaky
    empty = build_server(astore, identity=Caller(tenant, "nobody"))
    assert call(aloop, empty, "recall_memories", {"query": "staging cluster"}) == (
        "Nothing relevant is stored for this query."
    )


def test_output_cap_keeps_whole_items(
    aloop: LoopThread, astore: AsyncMemoryStore, store: MemoryStore, tenant: str
) -> None:
    store.write_many(
        [
            MemoryCandidate(
                tenant=tenant,
                scope="user",
                scope_id="alice",
                kind="preference",
                content=f"Preference number {i}: " + "detail " * 40,
            )
            for i in range(30)
        ]
    )
    server = build_server(
        astore, identity=Caller(tenant, "alice"), limits=McpLimits(output_chars=1500)
    )
    out = call(aloop, server, "recall_memories", {"query": "preference"})
    assert len(out) <= 1500
    body = out.split("\n")[1:]
    assert body and all(line.rstrip().endswith("detail") for line in body)


def test_store_failure_and_timeout_answer_unavailable(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str
) -> None:
    down = unreachable(aloop)
    try:
        server = build_server(down, identity=Caller(tenant, "alice"))
        assert call(aloop, server, "recall_memories", {"query": "anything"}) == UNAVAILABLE
    finally:
        aloop.run(down.close())

    class Slow:
        def __getattr__(self, name: str) -> Any:
            return getattr(astore, name)

        async def recall(self, request: Any) -> Any:
            await asyncio.sleep(30)
            return await astore.recall(request)

    slow = build_server(
        Slow(),  # type: ignore[arg-type]
        identity=Caller(tenant, "alice"),
        limits=McpLimits(timeout_s=0.3),
    )
    started = time.perf_counter()
    assert call(aloop, slow, "recall_memories", {"query": "anything"}) == UNAVAILABLE
    # the 0.3 s timeout, not the 30 s of work (the slack is for a loaded machine)
    assert time.perf_counter() - started < 15


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


def test_timed_out_recall_stops_its_query_and_returns_the_connection(
    aloop: LoopThread, db_url: str, store: MemoryStore, tenant: str
) -> None:
    seed(store, tenant)
    # Database timeouts far beyond the tool's: only the server's cancellation can end the wait.
    slow_db = aloop.run(
        open_async_store(
            db_url, HashEmbedder(), lock_timeout_ms=60_000, statement_timeout_ms=60_000
        )
    )
    server = build_server(
        slow_db, identity=Caller(tenant, "alice"), limits=McpLimits(timeout_s=0.5)
    )
    # The same store (same pool) behind the default timeout: the call after the lock proves
    # the pool healthy; its first query reconnects (the timed-out connection was dropped),
    # which a loaded 2-core machine has been seen to take past the 0.5 s above.
    same_pool_server = build_server(slow_db, identity=Caller(tenant, "alice"))
    holder = sa.create_engine(db_url)

    async def stuck_then_free(lock_conn: sa.Connection) -> tuple[Any, float, float, Any]:
        async with Client(server) as client, Client(same_pool_server) as same_pool_client:
            started = time.monotonic()
            stuck = await client.call_tool("recall_memories", {"query": "staging cluster"})
            answered = time.monotonic() - started
            deadline = time.monotonic() + 15  # a condition wait; the bound is for a hang
            while time.monotonic() < deadline and (
                slow_db.connections_in_use() or _waiting_on_locks(holder)
            ):
                await asyncio.sleep(0.02)
            returned = time.monotonic() - started - answered
            assert slow_db.connections_in_use() == 0  # every connection back in the pool
            assert _waiting_on_locks(holder) == 0  # and the query gone from the server
            lock_conn.rollback()
            after = await same_pool_client.call_tool(
                "recall_memories", {"query": "staging cluster"}
            )
            return stuck, answered, returned, after

    try:
        with holder.connect() as lock_conn:
            lock_conn.execute(sa.text("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE"))
            stuck, answered, returned, after = aloop.run(stuck_then_free(lock_conn))
    finally:
        aloop.run(slow_db.close())
        holder.dispose()
    assert stuck.is_error and text_of(stuck) == UNAVAILABLE
    assert answered < 30  # the 0.5 s timeout, not the database's 60 s (slack for a loaded box)
    assert returned < 15
    assert not after.is_error and "kestrel" in text_of(after)  # the pool is healthy


def test_concurrent_recalls_are_capped(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str
) -> None:
    state = {"now": 0, "max": 0}

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(astore, name)

        async def recall(self, request: Any) -> Any:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
            await asyncio.sleep(0.2)
            state["now"] -= 1
            return await astore.recall(request)

    server = build_server(
        Counting(),
        identity=Caller(tenant, "alice"),  # type: ignore[arg-type]
        limits=McpLimits(max_concurrent_recalls=2),
    )

    async def go() -> list[str]:
        async with Client(server) as client:
            results: list[str] = []

            async def one() -> None:
                results.append(text_of(await client.call_tool("recall_memories", {"query": "x"})))

            async with anyio.create_task_group() as tg:
                for _ in range(6):
                    tg.start_soon(one)
            return results

    results = aloop.run(go())
    assert len(results) == 6 and UNAVAILABLE not in results
    assert state["max"] == 2


def test_every_failure_answer_is_an_error_with_its_text(
    aloop: LoopThread, astore: AsyncMemoryStore, store: MemoryStore, tenant: str
) -> None:
    seed(store, tenant)
    server = build_server(astore, identity=Caller(tenant, "alice"))
    down = unreachable(aloop)

    async def answers(target: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        async with Client(target) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    try:
        (unavailable,) = aloop.run(
            answers(
                build_server(down, identity=Caller(tenant, "alice")),
                [("recall_memories", {"query": "x"})],
            )
        )
    finally:
        aloop.run(down.close())
    assert unavailable.is_error and text_of(unavailable) == UNAVAILABLE
    found, opened = aloop.run(
        answers(server, [("recall_memories", {"query": "staging cluster"}), ("recallset_open", {})])
    )
    (nothing,) = aloop.run(
        answers(
            build_server(astore, identity=Caller(tenant, "nobody")),
            [("recall_memories", {"query": "staging cluster"})],
        )
    )
    assert not found.is_error and "kestrel" in text_of(found)
    assert not nothing.is_error and text_of(nothing) == "Nothing relevant is stored for this query."
    memo = json.loads(text_of(opened))["memo"]
    failures = aloop.run(
        answers(
            server,
            [
                ("recallset_read", {"memo": memo, "id": "r7"}),
                ("recallset_mark", {"memo": memo, "id": "r7", "mark": "keep"}),
                ("recallset_overview", {"memo": "memo_nope"}),
                ("recallset_mark", {"memo": memo, "id": "r1", "mark": "galaxy"}),
                ("recallset_add", {"memo": memo, "content": "   "}),
                ("recallset_add", {"memo": memo}),
                ("no_such_tool", {}),
            ],
        )
    )
    texts = [text_of(f) for f in failures]
    assert all(f.is_error for f in failures), texts
    assert texts[0] == "error: recallset_read: no RecallSet item with id 'r7'"
    assert texts[1] == "error: recallset_mark: no RecallSet item with id 'r7'"
    assert texts[2].startswith("error: recallset_overview: no memo 'memo_nope'")
    # bad arguments: one line naming the argument, none of pydantic's multi-line text or URL
    assert texts[3] == "error: recallset_mark: mark: Input should be 'keep', 'check' or 'discard'"
    assert "content" in texts[4]
    assert texts[5] == "error: recallset_add: content: Field required"
    assert "no_such_tool" in texts[6]
    assert not any("\n" in t or "pydantic" in t for t in texts), texts


def test_work_in_flight_is_bounded_and_overflow_answers_busy(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str
) -> None:
    class Slow:
        def __getattr__(self, name: str) -> Any:
            return getattr(astore, name)

        async def recall(self, request: Any) -> Any:
            await asyncio.sleep(0.4)
            return await astore.recall(request)

    server = build_server(
        Slow(),  # type: ignore[arg-type]
        identity=Caller(tenant, "alice"),
        limits=McpLimits(max_concurrent_recalls=1, max_waiting_recalls=2, queue_timeout_s=5.0),
    )

    async def burst(n: int) -> list[tuple[str, bool, float]]:
        out: list[tuple[str, bool, float]] = []
        async with Client(server) as client:

            async def one() -> None:
                result = await client.call_tool("recall_memories", {"query": "x"})
                out.append((text_of(result), bool(result.is_error), time.perf_counter()))

            async with anyio.create_task_group() as tg:
                for _ in range(n):
                    tg.start_soon(one)
                    await anyio.sleep(0.02)  # arrive in order
        return out

    answers = aloop.run(burst(6))
    busy = [a for a in answers if a[0] == BUSY]
    served = [a for a in answers if a[0] != BUSY]
    assert len(served) == 3 and len(busy) == 3  # one running, two waiting
    assert all(error for _, error, _ in busy) and not any(error for _, error, _ in served)
    # turned away at once, not queued: every "busy" came while the first recall (0.4 s of
    # work) still ran, an order a loaded machine cannot change
    assert max(at for _, _, at in busy) < min(at for _, _, at in served)
    assert server.recall_load.shed == 3  # type: ignore[attr-defined]

    impatient = build_server(
        Slow(),  # type: ignore[arg-type]
        identity=Caller(tenant, "alice"),
        limits=McpLimits(max_concurrent_recalls=1, queue_timeout_s=0.1),
    )
    server = impatient
    answers = aloop.run(burst(2))
    assert sorted(a[0] == BUSY for a in answers) == [False, True]


def test_a_stopping_server_ends_the_recalls_in_flight_with_an_error(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str
) -> None:
    started: list[float] = []

    class Stuck:
        def __getattr__(self, name: str) -> Any:
            return getattr(astore, name)

        async def recall(self, request: Any) -> Any:
            started.append(time.monotonic())
            await asyncio.sleep(30)  # far past the drain's grace
            return await astore.recall(request)

    drain = Drain()
    server = build_server(
        Stuck(),  # type: ignore[arg-type]
        identity=Caller(tenant, "alice"),
        limits=McpLimits(max_concurrent_recalls=2),
        drain=drain,
    )

    async def go() -> tuple[list[Any], float, Any]:
        async with Client(server) as client:
            calls = [
                asyncio.ensure_future(client.call_tool("recall_memories", {"query": "x"}))
                for _ in range(4)  # two running, two waiting for a slot
            ]
            while len(started) < 2 or drain.in_flight < 4:
                await asyncio.sleep(0.01)
            stopping = time.monotonic()
            await drain.drain(grace_s=0.2)
            answers = await asyncio.gather(*calls)
            took = time.monotonic() - stopping
            late = await client.call_tool("recall_memories", {"query": "x"})
            return answers, took, late

    answers, took, late = aloop.run(go())
    assert all(a.is_error and text_of(a) == STOPPING for a in answers)
    assert took < 15  # the 0.2 s grace, not the 30 s of work (slack for a loaded machine)
    assert late.is_error and text_of(late) == STOPPING  # refused once stopping
    assert drain.in_flight == 0
