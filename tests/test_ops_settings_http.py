"""Settings (pydantic-settings, secrets hidden), the LLM extractor's HARNESS_LLM_* settings,
the HTTP server's header timeout and token expiry, --help texts and single-write error texts."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import click
import httpx
import pytest
import typer.main
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from harness.cli import app
from harness.errors import InvalidInput
from harness.mcp_server import Identity, TokenFile, TokenFileVerifier
from harness.mcp_server.http import (
    HttpOptions,
    listening_socket,
    parse_http_address,
    uvicorn_config,
)
from harness.memory import MemoryCandidate, MemoryStore
from harness.run.extract import ExtractionContext, OpenAIExtractor
from harness.settings import Settings

# --- settings ------------------------------------------------------------------------------------


def test_secrets_never_show_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_LLM_API_KEY", "sk-very-secret-1")
    monkeypatch.setenv("HARNESS_MCP_INGEST_KEY", "ingest-very-secret-2")
    monkeypatch.setenv("HARNESS_DATABASE_URL", "postgresql://u:pw-secret-3@db/x")
    s = Settings.from_env()
    shown = repr(s) + str(s) + s.model_dump_json()
    for secret in ("sk-very-secret-1", "ingest-very-secret-2", "pw-secret-3"):
        assert secret not in shown
    assert s.llm_api_key is not None and s.llm_api_key.get_secret_value() == "sk-very-secret-1"
    assert s.database_url_value == "postgresql://u:pw-secret-3@db/x"


def test_settings_read_prefixed_variables_and_ignore_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_POOL_SIZE", "7")
    monkeypatch.setenv("HARNESS_LLM_MODEL", "")
    s = Settings.from_env(recall_top_n=3)
    assert s.pool_size == 7 and s.llm_model is None and s.recall_top_n == 3


def test_bad_variable_is_invalid_input_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_STATEMENT_TIMEOUT_MS", "-5")
    with pytest.raises(InvalidInput) as info:
        Settings.from_env()
    assert info.value.fields == ("HARNESS_STATEMENT_TIMEOUT_MS",)
    assert str(info.value).startswith("HARNESS_STATEMENT_TIMEOUT_MS:")


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


def test_openai_extractor_without_settings_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HARNESS_LLM_BASE_URL", raising=False)
    with pytest.raises(InvalidInput) as info:
        OpenAIExtractor.from_settings()
    assert info.value.fields == ("HARNESS_LLM_BASE_URL",)


# --- HTTP: address, header read timeout, token expiry ----------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("127.0.0.1:8765", ("127.0.0.1", 8765)), ("[::1]:80", ("::1", 80)), ("h:1", ("h", 1))],
)
def test_http_address_parses(value: str, expected: tuple[str, int]) -> None:
    assert parse_http_address(value) == expected


@pytest.mark.parametrize("value", ["8765", ":8765", "h:0", "h:65536", "h:x", "a:b:1", ""])
def test_bad_http_address_names_the_option(value: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_http_address(value)
    assert info.value.fields == ("--http",)


@pytest.fixture
def slow_header_server() -> Iterator[int]:
    async def hello(request: object) -> PlainTextResponse:
        return PlainTextResponse("hello")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    config = uvicorn_config(
        Starlette(routes=[Route("/", hello)]),
        "127.0.0.1",
        port,
        HttpOptions(header_timeout_s=0.5, shutdown_grace_s=1),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_idle_and_trickling_sockets_are_closed_after_the_header_timeout(
    slow_header_server: int,
) -> None:
    socks = [socket.create_connection(("127.0.0.1", slow_header_server)) for _ in range(20)]
    for i, s in enumerate(socks):
        s.settimeout(5)
        if i % 2:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never finishes its head
    started = time.monotonic()
    for s in socks:
        assert s.recv(1024) == b""  # closed by the server, not by our 5 s timeout
        s.close()
    assert time.monotonic() - started < 4
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


def test_expired_token_is_refused(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    expired = tokens.add(Identity("t", "u"), expires_at=time.time() - 1)
    valid = tokens.add(Identity("t", "v"), expires_at=time.time() + 3600)
    forever = tokens.add(Identity("t", "w"))
    verifier = TokenFileVerifier(tokens)

    async def check() -> list[bool]:
        return [await verifier.verify_token(t) is not None for t in (expired, valid, forever)]

    assert asyncio.run(check()) == [False, True, True]


# --- --help and error texts --------------------------------------------------------------------


def _commands(group: click.Command, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    yield prefix or "harness-memory", group
    if isinstance(group, click.Group):
        for name, sub in group.commands.items():
            yield from _commands(sub, f"{prefix} {name}".strip())


def test_every_command_and_option_has_a_description() -> None:
    missing = []
    for name, command in _commands(typer.main.get_command(app)):
        if not (command.help or command.short_help):
            missing.append(name)
        for param in command.params:
            if isinstance(param, click.Option) and not param.help:
                missing.append(f"{name} {param.opts[0]}")
            if isinstance(param, click.Argument) and not getattr(param, "help", None):
                missing.append(f"{name} {param.name}")
    assert missing == []


def test_single_write_errors_do_not_mention_candidate_indexes(
    store: MemoryStore, tenant: str
) -> None:
    bad: dict[str, Any] = {"tenant": tenant, "scope": "user", "kind": "fact", "content": "x"}
    with pytest.raises(InvalidInput) as single:
        store.write(bad)
    assert "candidate" not in str(single.value) and "__root__" not in str(single.value)
    assert "scope_id" in single.value.fields
    good = {**bad, "scope_id": "u"}
    with pytest.raises(InvalidInput) as batch:
        store.write_many([good, bad])
    assert "candidate 1" in str(batch.value)
    with pytest.raises(InvalidInput) as long:
        store.write(MemoryCandidate(**{**good, "content": "y" * 10_000}))
    assert str(long.value).startswith("content:")


def test_mcp_token_cli_mints_an_expiring_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    path = tmp_path / "tokens.json"
    monkeypatch.setenv("HARNESS_MCP_TOKENS", str(path))
    result = CliRunner().invoke(
        app, ["mcp-token", "--tenant", "t", "--user", "u", "--expires-in-days", "2"]
    )
    assert result.exit_code == 0, result.output
    token = result.output.strip().splitlines()[-1]
    (entry,) = json.loads(path.read_text())["tokens"]
    assert abs(entry["expires_at"] - (time.time() + 2 * 86400)) < 60
    assert token not in path.read_text()  # only the hash is stored
