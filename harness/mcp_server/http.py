"""Serving the MCP server over streamable HTTP: address parsing, the uvicorn config with a
header read timeout and a shutdown grace period, a uvicorn server that ends the calls in flight
when it stops, logging of authentication failures, and a 503 while the token file is broken."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from harness.errors import InvalidInput
from harness.token_files import TokenFileUnreadable

__all__ = [
    "BEARER_CHALLENGE",
    "AuthFailureLog",
    "DrainingServer",
    "HeaderTimeoutH11Protocol",
    "HttpOptions",
    "TokenFileGate",
    "listening_socket",
    "parse_http_address",
    "uvicorn_config",
]

log = logging.getLogger("harness.mcp_server.http")


@dataclass(frozen=True)
class HttpOptions:
    """Connection limits: seconds to deliver a request's headers, and to finish in-flight calls
    after SIGTERM/SIGINT before they are cancelled."""

    header_timeout_s: float = 10.0
    shutdown_grace_s: int = 10


def parse_http_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (IPv6 as ``[::1]:PORT``) -> ``(host, port)``; port 0 lets the system
    choose a free port (the start line names the one it chose).

    Raises:
        InvalidInput: naming ``--http`` when the value is not a host and a port 0-65535.
    """
    host, sep, port = value.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InvalidInput(
            f"--http: expected HOST:PORT such as 127.0.0.1:8765, got {value!r}",
            fields=("--http",),
        )
    if ":" in host:  # only a bracketed IPv6 address may contain colons
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise InvalidInput(
                f"--http: {host!r} is not a host name or address", fields=("--http",)
            ) from None
    return host, int(port)


def listening_socket(host: str, port: int, *, backlog: int = 2048) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening, for ``uvicorn.Server.serve``.

    Created with protocol ``IPPROTO_TCP``, not 0: asyncio turns Nagle's algorithm off only on
    connections whose socket says TCP, and with it on, every answer on a kept-alive connection
    waited for the client's delayed acknowledgement (about 40 ms a request).

    Raises:
        OSError: the address cannot be bound (the socket is closed first).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


class HeaderTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing connections that do not deliver a complete request head
    within ``header_timeout_s`` of connecting or of sending more bytes after an idle pause.

    uvicorn's keep-alive timeout covers idle sockets only between requests; a client that opens
    a socket and trickles (or never sends) headers would hold it open indefinitely.
    """

    header_timeout_s: float = 10.0
    _header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def data_received(self, data: bytes) -> None:
        if self._header_deadline is None and self._between_requests():
            self._arm_header_deadline()
        super().data_received(data)
        if not self._between_requests() and self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm_header_deadline(self) -> None:
        cycle = self.cycle
        self._header_deadline = self.loop.call_later(
            self.header_timeout_s, self._header_timed_out, cycle
        )

    def _header_timed_out(self, cycle_at_start: Any) -> None:
        self._header_deadline = None
        if self.cycle is cycle_at_start and not self.transport.is_closing():
            log.info(
                "closing a connection from %s: no request head within %.0fs",
                self.client,
                self.header_timeout_s,
            )
            self.transport.close()


#: The 401 challenge: plain bearer tokens, and no pointer to an OAuth authorization server.
BEARER_CHALLENGE = (
    'Bearer realm="harness-memory", error="invalid_token", error_description="a bearer token '
    'from harness-memory mcp-token is required; this server does not offer OAuth"'
)


class AuthFailureLog:
    """ASGI middleware logging every 401/403 answer (client address, method, path; never the
    token or any header), and stating plain bearer auth in the 401 challenge."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in (401, 403):
                client = scope.get("client") or ("?", 0)
                log.warning(
                    "authentication failed: %s %s from %s (HTTP %d)",
                    scope.get("method", "?"),
                    scope.get("path", "?"),
                    client[0],
                    message["status"],
                )
                if message["status"] == 401:
                    headers = [
                        (k, v) for k, v in message.get("headers", []) if k != b"www-authenticate"
                    ]
                    headers.append((b"www-authenticate", BEARER_CHALLENGE.encode()))
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, watch)


class TokenProblems(Protocol):
    """What :class:`TokenFileGate` asks: why the token file cannot be used, or None."""

    def problem(self) -> TokenFileUnreadable | None: ...


class TokenFileGate:
    """ASGI middleware answering 503 (JSON, ``"code": "token_file_unreadable"``, naming the
    file by its name) to every request of ``paths`` while the bearer-token file cannot be used,
    instead of a 500 with a traceback per request; the cause is logged once per change of the
    file (by the file's watcher). Other paths (health, ingest) do not depend on the file."""

    def __init__(self, app: ASGIApp, tokens: TokenProblems, paths: tuple[str, ...] = ("/mcp",)):
        self.app = app
        self.tokens = tokens
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path", "").rstrip("/") in self.paths:
            problem = self.tokens.problem()
            if problem is not None:
                body = json.dumps(
                    {
                        "error": f"the server's bearer-token file ({problem.path.name}) cannot "
                        "be used; every MCP request is refused until an operator fixes it",
                        "code": "token_file_unreadable",
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 503,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


class DrainingServer(uvicorn.Server):
    """A uvicorn server that, on SIGINT/SIGTERM, also runs ``drain`` (end the calls in flight)
    while it stops accepting and waits for open requests: a busy server then exits as soon as
    those calls have answered, not when their slow work would have finished."""

    def __init__(self, config: uvicorn.Config, drain: Callable[[], Awaitable[None]]):
        super().__init__(config)
        self._drain = drain

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        draining = asyncio.ensure_future(self._drain())
        # uvicorn asks the connections it has right now to close (below, before its first
        # await); these are the ones it tells.
        told = set(self.server_state.connections)
        late = asyncio.ensure_future(_close_late_connections(self.server_state.connections, told))
        try:
            await super().shutdown(sockets)
        finally:
            late.cancel()
            await draining


async def _close_late_connections(
    connections: set[Any], told: set[Any], *, every_s: float = 0.02
) -> None:
    """Ask every connection that registers after shutdown began to close, as it appears.

    uvicorn asks its connections to close once. A connection accepted just before the listener
    closed registers a moment later, misses that, and is kept alive by a busy client for as
    long as the client keeps asking: the shutdown then waits its whole graceful bound (10 s).
    Under load that window is wide. Runs until cancelled."""
    while True:
        tell_late_connections(connections, told)
        await asyncio.sleep(every_s)


def tell_late_connections(connections: set[Any], told: set[Any]) -> int:
    """``shutdown()`` each connection of ``connections`` not in ``told`` (then adds it there);
    returns how many were told. A connection told mid-request closes after its response."""
    late = [c for c in list(connections) if c not in told]
    for connection in late:
        told.add(connection)
        connection.shutdown()
    return len(late)


def uvicorn_config(
    app: ASGIApp,
    host: str,
    port: int,
    options: HttpOptions | None = None,
    *,
    log_level: str = "warning",
) -> uvicorn.Config:
    """The uvicorn config this project serves with: h11 with a header read timeout, a
    graceful-shutdown bound, auth failures logged. uvicorn's loggers propagate to the root
    logger (so they share its format), at ``log_level``."""
    opts = options or HttpOptions()
    protocol = type(
        "HarnessH11Protocol",
        (HeaderTimeoutH11Protocol,),
        {"header_timeout_s": opts.header_timeout_s},
    )
    return uvicorn.Config(
        AuthFailureLog(app),
        host=host,
        port=port,
        http=protocol,
        log_level=log_level,
        log_config=None,
        timeout_graceful_shutdown=opts.shutdown_grace_s,
        lifespan="on",
    )
