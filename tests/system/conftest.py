"""Fixtures of the system tests (servers and processes): the MCP server over HTTP."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.mcp_helpers import INGEST_KEY

if TYPE_CHECKING:
    from harness.memory import AsyncMemoryStore
    from tests.support.loop_thread import LoopThread


@pytest.fixture
def http_server(
    aloop: LoopThread, astore: AsyncMemoryStore, tenant: str, tmp_path: Path
) -> Iterator[dict[str, Any]]:
    """The MCP server over HTTP (uvicorn on the store's loop) with tokens for alice and bob."""
    import uvicorn

    from harness.mcp_server import TokenFile, TokenFileVerifier, build_server
    from harness.memory import Caller

    tokens = TokenFile(tmp_path / "tokens.json")
    alice = tokens.add(Caller(tenant, "alice"))
    bob = tokens.add(Caller(tenant, "bob"))
    # bound here, port 0: the system's free port, held until the server has it
    sock = socket.create_server(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = build_server(
        astore, verifier=TokenFileVerifier(tokens), public_url=base, ingest_key=INGEST_KEY
    )
    config = uvicorn.Config(server.streamable_http_app(host="127.0.0.1"), log_level="warning")
    web = uvicorn.Server(config)
    serving = aloop.submit(web.serve(sockets=[sock]))  # on the store's loop
    deadline = time.monotonic() + 60  # a bound for a stuck start, not a speed claim
    while not web.started:
        assert not serving.done(), serving.exception()
        assert time.monotonic() < deadline, "the MCP server did not start"
        time.sleep(0.05)
    yield {"base": base, "alice": alice, "bob": bob, "tokens": tokens}
    web.should_exit = True
    serving.result(timeout=30)
    sock.close()
