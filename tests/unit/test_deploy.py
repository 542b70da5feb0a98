"""Deployment as a service: /healthz and /readyz on a real server over loopback (the database
going away and coming back through a TCP relay we cut), settings from the environment and
their start line, one version everywhere, one-line errors for bad serving input.

Here the tests that need no database, model or other process; the others are in
tests/db/test_deploy_db.py, tests/system/test_deploy_system.py."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.mcpserver import MCPServer
from pydantic import SecretStr
from typer.testing import CliRunner

from harness import __version__
from harness._version import DISTRIBUTION
from harness.cli import app
from harness.errors import InvalidInput
from harness.logs import JsonLinesFormatter
from harness.mcp_server import TokenFile, TokenFileVerifier, build_server
from harness.mcp_server.serve_config import (
    ServeFlags,
    default_workers,
    resolve_serve_config,
    serving_settings,
    start_line,
)
from harness.memory import AsyncMemoryStore, Caller
from harness.settings import Settings
from tests.support.stores import UNREACHABLE_URL

# --- 4: one version ----------------------------------------------------------------------------


def test_one_version_on_every_channel(tmp_path: Path) -> None:
    assert importlib.metadata.version(DISTRIBUTION) == __version__
    out = CliRunner().invoke(app, ["--version"])
    assert out.exit_code == 0 and out.output.strip() == f"{DISTRIBUTION} {__version__}"

    async def built() -> MCPServer:
        store = await AsyncMemoryStore.connect(
            UNREACHABLE_URL, embedder=None, migrate=False, check_model=False
        )
        try:
            return build_server(store, verifier=TokenFileVerifier(TokenFile(tmp_path / "t.json")))
        finally:
            await store.close()

    assert asyncio.run(built()).version == __version__


# --- 2: resolution of flags, variables and defaults (pure) -------------------------------------


def settings_with(monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    for name in list(os.environ):
        if name.startswith("HARNESS_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings.from_env()


def test_flags_win_over_variables_which_win_over_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = settings_with(
        monkeypatch,
        HARNESS_HOME=str(tmp_path),
        HARNESS_MCP_HTTP="10.1.2.3:9000",
        HARNESS_LOG_LEVEL="WARNING",
        HARNESS_MCP_INGEST_KEY="k" * 16,
    )
    env_only = resolve_serve_config(s, ServeFlags())
    assert env_only is not None
    assert (env_only.host, env_only.port, env_only.bind_from) == (
        "10.1.2.3",
        9000,
        "HARNESS_MCP_HTTP",
    )
    assert env_only.log_level == "warning" and env_only.log_format == "text"
    assert env_only.log_from == "HARNESS_LOG_LEVEL, default"
    assert env_only.tokens == tmp_path / "mcp-tokens.json" and env_only.tokens_from == "default"
    assert env_only.ingest_from == "HARNESS_MCP_INGEST_KEY"
    TokenFile(tmp_path / "x.json").add(Caller("t", "u"))
    flagged = resolve_serve_config(
        s, ServeFlags(http="[::1]:8000", log_level="debug", tokens=tmp_path / "x.json")
    )
    assert flagged is not None
    assert (flagged.host, flagged.port, flagged.bind_from) == ("::1", 8000, "--http")
    assert flagged.address_label == "[::1]:8000" and flagged.log_level == "debug"
    assert flagged.tokens_from == "--tokens"
    assert resolve_serve_config(settings_with(monkeypatch), ServeFlags()) is None  # stdio


@pytest.mark.parametrize(
    ("env", "flags", "named"),
    [
        ({"HARNESS_MCP_HTTP": "nohost"}, ServeFlags(), "HARNESS_MCP_HTTP"),
        ({}, ServeFlags(http="1.2.3.4:65536"), "--http"),
        ({"HARNESS_MCP_HTTP": "h:1"}, ServeFlags(tokens=Path("/no/such/tokens.json")), "--tokens"),
        (
            {"HARNESS_MCP_HTTP": "h:1", "HARNESS_MCP_TOKENS": "/no/such/t.json"},
            ServeFlags(),
            "HARNESS_MCP_TOKENS",
        ),
        ({"HARNESS_MCP_HTTP": "h:1"}, ServeFlags(log_format="xml"), "--log-format"),
        ({"HARNESS_MCP_HTTP": "h:1"}, ServeFlags(log_level="loud"), "--log-level"),
        (
            {"HARNESS_MCP_HTTP": "h:1", "HARNESS_MCP_INGEST_KEY": "k" * 20},
            ServeFlags(ingest_key_file=Path("/etc/hostname")),
            "--ingest-key-file",
        ),
        (
            {"HARNESS_MCP_HTTP": "h:1", "HARNESS_MCP_INGEST_KEY_FILE": "/no/such/file"},
            ServeFlags(),
            "HARNESS_MCP_INGEST_KEY_FILE",
        ),
    ],
)
def test_bad_serving_input_names_the_flag_or_variable(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], flags: ServeFlags, named: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        resolve_serve_config(settings_with(monkeypatch, **env), flags)
    assert info.value.fields == (named,) and str(info.value).startswith(f"{named}:")


@given(key=st.text(min_size=16, max_size=40).filter(lambda k: k == k.strip() and "\x00" not in k))
def test_the_start_line_never_shows_the_ingest_key(key: str) -> None:
    s = Settings.from_env(mcp_http="127.0.0.1:1", mcp_ingest_key=key)
    config = resolve_serve_config(s, ServeFlags())
    assert config is not None and config.ingest_key == SecretStr(key)
    line = start_line(
        config, version=__version__, base_url="http://h:1", database="db", embedder="e"
    )
    assert key not in line and "\n" not in line


def test_the_http_server_uses_one_model_thread_per_call_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HARNESS_EMBED_THREADS", raising=False)
    assert Settings.from_env().embed_threads is None  # the library's default: onnxruntime's
    assert serving_settings(Settings.from_env()).embed_threads == 1
    told = Settings.from_env(embed_threads=2)
    assert serving_settings(told).embed_threads == 2
    # nothing else changes
    assert serving_settings(told) == told
    assert (
        serving_settings(Settings.from_env()).model_copy(update={"embed_threads": None})
        == Settings.from_env()
    )


def test_json_log_lines_are_one_object_each() -> None:
    import logging

    record = logging.LogRecord("harness.x", logging.WARNING, "f", 1, "a %s\nb", ("c",), None)
    out = JsonLinesFormatter().format(record)
    assert "\n" not in out
    assert json.loads(out)["message"] == "a c\nb" and json.loads(out)["level"] == "warning"


@given(cores=st.integers(min_value=0, max_value=512))
def test_default_workers_is_one_per_core_from_one_to_four(cores: int) -> None:
    assert default_workers(cores) == max(1, min(4, cores))


def test_workers_come_from_the_flag_then_the_variable_then_the_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HARNESS_MCP_WORKERS", raising=False)
    plain = settings_with(monkeypatch, HARNESS_MCP_HTTP="127.0.0.1:1")
    by_cores = resolve_serve_config(plain, ServeFlags(), usable_cores=3)
    assert by_cores is not None and by_cores.workers == 3
    assert by_cores.workers_from.startswith("default")
    told = settings_with(monkeypatch, HARNESS_MCP_HTTP="127.0.0.1:1", HARNESS_MCP_WORKERS="2")
    by_variable = resolve_serve_config(told, ServeFlags(), usable_cores=3)
    assert by_variable is not None
    assert (by_variable.workers, by_variable.workers_from) == (2, "HARNESS_MCP_WORKERS")
    by_flag = resolve_serve_config(told, ServeFlags(workers=1), usable_cores=3)
    assert by_flag is not None and (by_flag.workers, by_flag.workers_from) == (1, "--workers")
    line = start_line(
        by_flag, version=__version__, base_url="http://h:1", database="db", embedder="e"
    )
    assert "workers: 1 (from --workers)" in line
    with pytest.raises(InvalidInput) as info:
        resolve_serve_config(told, ServeFlags(workers=0))
    assert info.value.fields == ("--workers",)
    with pytest.raises(InvalidInput) as bad_variable:
        settings_with(monkeypatch, HARNESS_MCP_WORKERS="0")
    assert "mcp_workers" in str(bad_variable.value).lower() or "HARNESS_MCP_WORKERS" in str(
        bad_variable.value
    )
