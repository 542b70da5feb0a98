"""Serving one HTTP MCP server process over a store: the app, its health routes, uvicorn.

The single-process server and each worker of a multi-process one run :func:`serve_http`;
they differ in where RecallSet memos live (``memo_book``) and in who prints the start line
(``ready``).
"""

from __future__ import annotations

import gc
import socket
from collections.abc import Callable

from harness.mcp_server.memo_book import MemoBook
from harness.mcp_server.serve_config import ServeConfig
from harness.memory import AsyncMemoryStore

__all__ = ["base_url", "freeze_startup_heap", "serve_http"]


def base_url(config: ServeConfig, public_url: str | None) -> str:
    """The server's base URL: ``public_url`` when proxied, else its own address."""
    shown_host = f"[{config.host}]" if ":" in config.host else config.host
    return (public_url or f"http://{shown_host}:{config.port}").rstrip("/")


async def serve_http(
    store: AsyncMemoryStore,
    config: ServeConfig,
    sock: socket.socket,
    *,
    public_url: str | None,
    ready: Callable[[str], None],
    memo_book: MemoBook | None = None,
) -> None:
    """Serve MCP over streamable HTTP on the listening ``sock`` until SIGINT/SIGTERM.

    Builds the server with its health routes and logging, then calls ``ready`` with the
    embedder mode (the start line's words) before the first request is accepted. Raises
    ``HarnessError`` (e.g. an unreadable token file) before serving anything.
    """
    from harness.logs import configure_logging
    from harness.mcp_server import McpLimits, TokenFile, TokenFileVerifier, build_server
    from harness.mcp_server.health import add_health_routes, embedder_mode
    from harness.mcp_server.http import DrainingServer, TokenFileGate, uvicorn_config
    from harness.mcp_server.server import Drain

    ingest_key = config.ingest_key.get_secret_value() if config.ingest_key else None
    drain = Drain()
    tokens = TokenFile(config.tokens)
    tokens.check()  # a broken token file stops the start, before anything is served
    verifier = TokenFileVerifier(tokens)
    server = build_server(
        store,
        verifier=verifier,
        public_url=base_url(config, public_url),
        ingest_key=ingest_key,
        memo_book=memo_book,
        drain=drain,
    )
    add_health_routes(server, store)
    configure_logging(config.log_level, config.log_format)
    ready(embedder_mode(store))
    # Stateless, plain-JSON answers: every request stands alone (memos are addressed by
    # handle, not by session), so no per-session task, SSE stream or idle session holds
    # work or a connection open, and shutdown has nothing to wait for.
    app_ = TokenFileGate(
        server.streamable_http_app(host=config.host, json_response=True, stateless_http=True),
        verifier,
    )
    web = DrainingServer(
        uvicorn_config(app_, config.host, config.port, log_level=config.log_level),
        drain=lambda: drain.drain(McpLimits().drain_grace_s),
    )
    freeze_startup_heap()
    await web.serve(sockets=[sock])


def freeze_startup_heap() -> None:
    """Leave what the server built at start (the model, the modules, the schemas: a few
    hundred thousand objects that live as long as the process) out of the cyclic garbage
    collector's full passes. Each call allocates thousands of short-lived objects, and every
    full pass walked all of them too (a soak user's recall, in process: 9.1 -> 5.3 ms mean
    assembly time; BENCHMARKS.md section 14)."""
    gc.freeze()
