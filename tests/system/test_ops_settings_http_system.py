"""Settings (pydantic-settings, secrets hidden), the LLM extractor's HARNESS_LLM_* settings,
the HTTP server's header timeout and token expiry, --help texts and single-write error texts.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_ops_settings_http.py, tests/db/test_ops_settings_http_db.py."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from harness.mcp_server.http import (
    HttpOptions,
    listening_socket,
    uvicorn_config,
)
from harness.run.extract import ExtractionContext, OpenAIExtractor

# --- the OpenAI-compatible extractor reads HARNESS_LLM_* --------------------------------------


@pytest.fixture
def chat_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
            proposal = {"candidates": []}
            answer = json.dumps({"choices": [{"message": {"content": json.dumps(proposal)}}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(answer.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()


def test_openai_extractor_is_configured_by_harness_llm_variables(
    monkeypatch: pytest.MonkeyPatch, chat_server: tuple[str, list[dict[str, Any]]]
) -> None:
    base, seen = chat_server
    monkeypatch.setenv("HARNESS_LLM_BASE_URL", base)
    monkeypatch.setenv("HARNESS_LLM_MODEL", "tiny-model")
    monkeypatch.setenv("HARNESS_LLM_API_KEY", "sk-abc")
    monkeypatch.setenv("HARNESS_LLM_TIMEOUT_S", "3")
    extractor = OpenAIExtractor.from_settings()
    ctx = ExtractionContext(tenant="t", user_id="u", workflow_id="w", session_id="s", run_id="r")
    assert extractor.extract("hi", "there", ctx) == []
    assert seen[0]["path"] == "/v1/chat/completions"
    assert seen[0]["model"] == "tiny-model" and seen[0]["auth"] == "Bearer sk-abc"


#: How long the test's clients wait for the server to close them.
CLIENT_WAIT_S = 30.0


@pytest.fixture
def slow_header_server() -> Iterator[int]:
    async def hello(request: object) -> PlainTextResponse:
        return PlainTextResponse("hello")

    # bound here, port 0: the system's free port, held until the server has it
    sock = socket.create_server(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn_config(
        Starlette(routes=[Route("/", hello)]),
        "127.0.0.1",
        port,
        HttpOptions(header_timeout_s=0.5, shutdown_grace_s=1),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # a bound for a stuck start, not a speed claim
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def test_idle_and_trickling_sockets_are_closed_after_the_header_timeout(
    slow_header_server: int,
) -> None:
    socks = [socket.create_connection(("127.0.0.1", slow_header_server)) for _ in range(20)]
    for i, s in enumerate(socks):
        s.settimeout(CLIENT_WAIT_S)
        if i % 2:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never finishes its head
    started = time.monotonic()
    for s in socks:
        # closed by the server (its 0.5 s header timeout), not by the client's own timeout
        assert s.recv(1024) == b""
        s.close()
    # Measured from the last send: the timeout plus whatever a loaded machine adds, and far
    # below the client's wait (a server that never closed them would take all of it, x20).
    assert time.monotonic() - started < CLIENT_WAIT_S / 2
    # A prompt request on a kept-alive connection still works, twice.
    with httpx.Client() as client:
        for _ in range(2):
            assert client.get(f"http://127.0.0.1:{slow_header_server}/").text == "hello"
            time.sleep(0.7)  # longer than the header timeout, between requests


def test_connections_accepted_from_the_listening_socket_send_without_nagle_delay() -> None:
    """The server's pre-bound socket says TCP, so asyncio disables Nagle's algorithm on every
    accepted connection (with it on, each answer on a kept-alive connection waited ~40 ms for
    the client's delayed acknowledgement)."""
    sock = listening_socket("127.0.0.1", 0)
    nodelay: list[int] = []

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted = transport.get_extra_info("socket")
            nodelay.append(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def accept_one() -> None:
        server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
        async with server:
            port = sock.getsockname()[1]
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(200):
                if nodelay:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(accept_one())
    assert nodelay and nodelay[0] != 0


def test_a_taken_port_is_an_os_error_and_the_socket_is_closed() -> None:
    first = listening_socket("127.0.0.1", 0)
    try:
        with pytest.raises(OSError, match="in use"):
            listening_socket("127.0.0.1", first.getsockname()[1])
    finally:
        first.close()
