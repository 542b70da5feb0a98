"""The admin console over HTTP: every route, the security rules, bad input.

Here the tests that need no database, model or other process; the others are in
tests/db/test_console_db.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app as cli_app
from harness.console import AdminTokenFile


def test_tokens_are_stored_hashed_with_their_tenants(tokens: AdminTokenFile) -> None:
    token = tokens.add("alice", ["acme", "globex", "acme"])
    raw = tokens.path.read_text()
    assert token not in raw
    entry = json.loads(raw)["admins"][0]
    assert entry["name"] == "alice" and entry["tenants"] == ["acme", "globex"]
    assert len(entry["sha256"]) == 64
    assert tokens.path.stat().st_mode & 0o777 == 0o600
    admin = tokens.verify(token)
    assert admin is not None and admin.tenants == ("acme", "globex")
    assert tokens.verify(token + "x") is None


def test_console_token_command_mints_a_hashed_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "admins.json"
    monkeypatch.setenv("HARNESS_CONSOLE_TOKENS", str(path))
    result = CliRunner().invoke(
        cli_app, ["console-token", "--name", "alice", "--tenant", "A", "--tenant", "B"]
    )
    assert result.exit_code == 0, result.output
    token = result.output.strip().splitlines()[-1]
    assert token.startswith("hmc_") and token not in path.read_text()
    admin = AdminTokenFile(path).verify(token)
    assert admin is not None and admin.name == "alice" and admin.tenants == ("A", "B")
    missing = CliRunner().invoke(cli_app, ["console-token", "--name", " ", "--tenant", "A"])
    assert missing.exit_code == 2 and "name" in missing.output


def test_console_command_refuses_a_bad_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CliRunner().invoke(cli_app, ["console", "--http", "no-port"])
    assert result.exit_code == 2 and "HOST:PORT" in result.output
