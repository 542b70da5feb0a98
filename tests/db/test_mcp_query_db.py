"""A recall query the store cannot take (NUL, a lone surrogate) answers a tool error naming the
field, not "Error executing tool" with a traceback in the log (issue 31, point 5)."""

from __future__ import annotations

import logging

import pytest
from mcp import Client

from harness.mcp_server import build_server
from harness.memory import AsyncMemoryStore, Caller
from tests.support.loop_thread import LoopThread
from tests.support.mcp_helpers import text_of


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("deploy\x00notes", "query: must not contain NUL characters"),
        ("\x00", "query: must not contain NUL characters"),
        ("lone \ud800 surrogate", "query: "),
    ],
)
def test_a_query_with_nul_or_a_lone_surrogate_is_a_clear_tool_error(
    aloop: LoopThread,
    astore: AsyncMemoryStore,
    tenant: str,
    query: str,
    problem: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    server = build_server(astore, identity=Caller(tenant, "alice"))

    async def go() -> tuple[str, bool]:
        async with Client(server) as client:
            result = await client.call_tool("recall_memories", {"query": query})
            return text_of(result), bool(result.is_error)

    text, is_error = aloop.run(go())
    assert is_error and text.startswith(f"error: recall_memories: {problem}"), text
    assert "Error executing tool" not in text and "\n" not in text
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
