"""Deployment as a service: /healthz and /readyz on a real server over loopback (the database
going away and coming back through a TCP relay we cut), settings from the environment and
their start line, one version everywhere, one-line errors for bad serving input."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import os
import signal
import socket
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.mcpserver import MCPServer
from pydantic import SecretStr
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from harness import __version__
from harness.cli import app
from harness.errors import InvalidInput
from harness.logs import JsonLinesFormatter
from harness.mcp_server import TokenFile, TokenFileVerifier, build_server
from harness.mcp_server.health import Readiness, check_readiness, schema_head
from harness.mcp_server.serve_config import (
    ServeFlags,
    default_workers,
    resolve_serve_config,
    serving_settings,
    start_line,
)
from harness.memory import AsyncMemoryStore
from harness.settings import Settings
from tests.conftest import UNREACHABLE_URL, create_database
from tests.test_operability import CLI, cli_env, first_line, free_port, run_cli

KEY = "ingest-key-from-a-file-0123"

# --- a TCP relay to the test database that we can cut and restore ------------------------------


class Relay:
    """Accepts on 127.0.0.1:``port`` and pipes each connection to PostgreSQL. ``stop`` closes
    the listener and every relayed connection (the database is gone); ``start`` listens again
    on the same port (it is back)."""

    def __init__(self, target: tuple[int, object]):
        self.family, self.address = target
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(32)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        if self._listener is not None:
            # close() alone does not wake a thread blocked in accept(); shutdown() does.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.socket(self.family, socket.SOCK_STREAM)
            try:
                upstream.connect(self.address)  # type: ignore[arg-type]
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


def relay_target(url: str) -> tuple[int, object]:
    parsed = make_url(url)
    socket_dir = parsed.query.get("host")
    if isinstance(socket_dir, str) and socket_dir.startswith("/"):
        return socket.AF_UNIX, f"{socket_dir}/.s.PGSQL.{parsed.port or 5432}"
    return socket.AF_INET, (parsed.host or "127.0.0.1", parsed.port or 5432)


@pytest.fixture
def relayed_db(server_url: str, tmp_path: Path) -> Iterator[tuple[Relay, str]]:
    """A fresh database reached through a relay: (relay, URL through it)."""
    real = create_database(server_url, f"harness_deploy_{os.getpid()}")
    relay = Relay(relay_target(real))
    relay.start()
    parsed = make_url(real)
    query = {k: v for k, v in parsed.query.items() if k != "host"}
    through = parsed.set(host="127.0.0.1", port=relay.port, query=query)
    try:
        yield relay, through.render_as_string(hide_password=False)
    finally:
        relay.stop()


def get(url: str) -> httpx.Response:
    return httpx.get(url, timeout=10)


def wait_for_status(url: str, status: int, timeout: float) -> httpx.Response:
    deadline = time.monotonic() + timeout
    answer = get(url)
    while answer.status_code != status and time.monotonic() < deadline:
        time.sleep(0.2)
        answer = get(url)
    return answer


# --- 1, 2, 4: a real server over loopback -----------------------------------------------------


@pytest.mark.subprocess
def test_health_and_readiness_follow_the_database_and_settings_come_from_the_env(
    relayed_db: tuple[Relay, str], tmp_path: Path
) -> None:
    relay, url = relayed_db
    key_file = tmp_path / "ingest.key"
    key_file.write_text(KEY + "\n")
    port = free_port()
    env = cli_env(
        tmp_path / "home",
        tmp_path,
        HARNESS_DATABASE_URL=url,
        HARNESS_MCP_HTTP=f"127.0.0.1:{port}",
        HARNESS_MCP_INGEST_KEY_FILE=str(key_file),
        HARNESS_LOG_FORMAT="json",
        HARNESS_EMBED_MODEL_PATH=str(tmp_path / "no-model"),
    )
    tokens = tmp_path / "tokens.json"
    proc = subprocess.Popen(
        [*CLI, "mcp", "--tokens", str(tokens), "--log-level", "info"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        line = first_line(proc, timeout=120)
        # What was read from where, on one line, without the key or the database password.
        assert line.startswith(f"harness-memory {__version__} MCP on {base}/mcp"), line
        assert f"listening on 127.0.0.1:{port} (from HARNESS_MCP_HTTP)" in line
        assert f"bearer tokens: {tokens} (from --tokens)" in line
        assert f"key from HARNESS_MCP_INGEST_KEY_FILE ({key_file})" in line
        assert "log: info json (from --log-level, HARNESS_LOG_FORMAT)" in line
        assert "(from HARNESS_DATABASE_URL)" in line and "embedder: lexical-only" in line
        assert KEY not in line

        health = get(f"{base}/healthz")
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "version": __version__}
        ready = get(f"{base}/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json() == {
            "status": "ready",
            "version": __version__,
            "embedder": "lexical-only",
            "schema": schema_head(),
        }
        timings: dict[str, list[float]] = {"/healthz": [], "/readyz": []}
        with httpx.Client(timeout=10) as client:
            for _ in range(11):
                for path, seen in timings.items():
                    started = time.perf_counter()
                    assert client.get(base + path).status_code == 200
                    seen.append(time.perf_counter() - started)
        medians = {path: statistics.median(seen) for path, seen in timings.items()}
        print(f"median answer times over loopback: {medians}")
        # This box is shared by many processes, so the bound is on what readiness adds to a
        # bare answer (the database round trips), not on wall time.
        assert medians["/readyz"] - medians["/healthz"] < 0.05, timings
        # Health is open; the MCP endpoint still wants a token; the file's key opens ingest.
        assert httpx.post(f"{base}/mcp", json={}, timeout=10).status_code == 401
        wrong = httpx.post(f"{base}/v1/memories", json={}, headers={"X-Ingest-Key": "x" * 20})
        right = httpx.post(f"{base}/v1/memories", json={}, headers={"X-Ingest-Key": KEY})
        assert wrong.status_code == 401 and right.status_code not in (401, 403)

        relay.stop()  # the database goes away
        gone = get(f"{base}/readyz")
        assert gone.status_code == 503
        assert gone.json()["reason"] == "database unreachable"
        assert gone.json()["status"] == "not ready"
        assert get(f"{base}/healthz").status_code == 200  # the process is still up

        relay.start()  # and comes back
        back = wait_for_status(f"{base}/readyz", 200, timeout=20)
        assert back.status_code == 200 and back.json()["status"] == "ready"

        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    # Once logging is configured every line is a JSON object (a warning before that is not).
    lines = err.splitlines()
    first_json = next(i for i, raw in enumerate(lines) if raw.startswith("{"))
    records = [json.loads(raw) for raw in lines[first_json:] if raw.strip()]
    assert any(r["message"].startswith("not ready") for r in records), err
    assert any("/readyz" in r["message"] for r in records)  # uvicorn's access log, as JSON
    assert KEY not in err


async def readiness_of(url: str) -> Readiness:
    store = await AsyncMemoryStore.connect(url, embedder=None, migrate=False, check_model=False)
    try:
        return await check_readiness(store)
    finally:
        await store.close()


def test_schema_behind_head_is_not_ready_with_the_reason(server_url: str) -> None:
    url = create_database(server_url, f"harness_deploy_unmigrated_{os.getpid()}")
    verdict = asyncio.run(readiness_of(url))
    assert not verdict.ready and verdict.schema is None
    assert verdict.reason == f"schema at None, expected {schema_head()}"
    assert verdict.as_json()["status"] == "not ready"


@pytest.mark.subprocess
def test_unreachable_database_is_not_ready_without_leaking_the_url() -> None:
    verdict = asyncio.run(readiness_of(UNREACHABLE_URL))
    assert not verdict.ready and verdict.reason == "database unreachable"
    assert "127.0.0.1" not in json.dumps(verdict.as_json())


# --- 4: one version ----------------------------------------------------------------------------


def test_one_version_on_every_channel(tmp_path: Path) -> None:
    assert importlib.metadata.version("harness-memory") == __version__
    out = CliRunner().invoke(app, ["--version"])
    assert out.exit_code == 0 and out.output.strip() == f"harness-memory {__version__}"

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
        ({}, ServeFlags(http="1.2.3.4:0"), "--http"),
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


# --- bad input as the operator meets it: one line naming the setting, exit code 2 -------------


@pytest.fixture
def taken_port() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "case", ["port taken", "unreadable key file", "short key file", "workers on stdio"]
)
def test_bad_serving_input_is_one_line_and_exit_code_2(
    case: str, taken_port: int, tmp_path: Path
) -> None:
    short = tmp_path / "short.key"
    short.write_text("fifteen-chars!!\n")
    extra = {"HARNESS_DATABASE_URL": UNREACHABLE_URL}
    if case == "port taken":
        args, named = ["mcp", "--http", f"127.0.0.1:{taken_port}"], "--http"
    elif case == "unreadable key file":
        extra |= {"HARNESS_MCP_HTTP": "127.0.0.1:1", "HARNESS_MCP_INGEST_KEY_FILE": str(tmp_path)}
        args, named = ["mcp"], "HARNESS_MCP_INGEST_KEY_FILE"
    elif case == "short key file":
        args, named = (
            ["mcp", "--http", "127.0.0.1:1", "--ingest-key-file", str(short)],
            ("--ingest-key-file"),
        )
    else:
        args, named = ["mcp", "--tenant", "t", "--user", "u", "--workers", "2"], "--workers"
    code, out = run_cli(args, cli_env(tmp_path / "home", tmp_path, **extra), timeout=60)
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, out
    assert lines[0].startswith(f"error: {named}:"), lines[0]
    assert "fifteen-chars" not in lines[0]


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
