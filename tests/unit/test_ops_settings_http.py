"""Settings (pydantic-settings, secrets hidden), the LLM extractor's HARNESS_LLM_* settings,
the HTTP server's header timeout and token expiry, --help texts and single-write error texts.

Here the tests that need no database, model or other process; the others are in
tests/db/test_ops_settings_http_db.py, tests/system/test_ops_settings_http_system.py."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import typer.main

from harness.cli import app
from harness.errors import InvalidInput
from harness.mcp_server import TokenFile, TokenFileVerifier
from harness.mcp_server.http import (
    parse_http_address,
    tell_late_connections,
)
from harness.memory import Caller
from harness.run.extract import OpenAIExtractor
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
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        ("[::1]:80", ("::1", 80)),
        ("h:1", ("h", 1)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),  # the system chooses the port
    ],
)
def test_http_address_parses(value: str, expected: tuple[str, int]) -> None:
    assert parse_http_address(value) == expected


@pytest.mark.parametrize("value", ["8765", ":8765", "h:-1", "h:65536", "h:x", "a:b:1", ""])
def test_bad_http_address_names_the_option(value: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_http_address(value)
    assert info.value.fields == ("--http",)


def test_expired_token_is_refused(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    expired = tokens.add(Caller("t", "u"), expires_at=time.time() - 1)
    valid = tokens.add(Caller("t", "v"), expires_at=time.time() + 3600)
    forever = tokens.add(Caller("t", "w"))
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


class _Connection:
    def __init__(self) -> None:
        self.told = 0

    def shutdown(self) -> None:
        self.told += 1


def test_a_connection_registered_after_shutdown_began_is_told_to_close_once() -> None:
    """uvicorn tells the connections it has once; one accepted a moment before the listener
    closed registers later and would be kept alive by a busy client (issue 35: 10 s exits)."""
    early, late = _Connection(), _Connection()
    connections = {early}
    told = set(connections)  # uvicorn's own pass
    assert tell_late_connections(connections, told) == 0 and early.told == 0
    connections.add(late)
    assert tell_late_connections(connections, told) == 1
    assert tell_late_connections(connections, told) == 0  # each one once
    assert (early.told, late.told) == (0, 1)
