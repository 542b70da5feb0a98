"""Deployment as a service: /healthz and /readyz on a real server over loopback (the database
going away and coming back through a TCP relay we cut), settings from the environment and
their start line, one version everywhere, one-line errors for bad serving input.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_deploy.py, tests/db/test_deploy_db.py."""

from __future__ import annotations

import asyncio
import contextlib
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
from sqlalchemy.engine import make_url

from harness import __version__
from harness.mcp_server import TokenFile
from harness.memory import Caller
from harness.memory.store.migrate import head_revision
from tests.db.test_deploy_db import readiness_of
from tests.support.stores import UNREACHABLE_URL, create_database
from tests.system.test_operability import CLI, cli_env, first_line, run_cli, served_port

KEY = "ingest-key-from-a-file-0123"

# --- a TCP relay to the test database that we can cut and restore ------------------------------


class Relay:
    """Pipes each connection on 127.0.0.1:``port`` to PostgreSQL. ``stop`` ends every relayed
    connection and turns new ones away at once (the database is gone); ``start`` relays again
    (it is back). The port is the system's choice, held from first to last: nothing else can
    take it between a stop and a start."""

    def __init__(self, target: tuple[int, object]):
        self.family, self.address = target
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=32)
        self.port = int(self._listener.getsockname()[1])
        self.up = False
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def start(self) -> None:
        self.up = True

    def stop(self) -> None:
        self.up = False
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self._open.clear()

    def close(self) -> None:
        self.stop()
        # close() alone does not wake a thread blocked in accept(); shutdown() does.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
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
        relay.close()


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


def test_health_and_readiness_follow_the_database_and_settings_come_from_the_env(
    relayed_db: tuple[Relay, str], tmp_path: Path
) -> None:
    relay, url = relayed_db
    key_file = tmp_path / "ingest.key"
    key_file.write_text(KEY + "\n")
    env = cli_env(
        tmp_path / "home",
        tmp_path,
        HARNESS_DATABASE_URL=url,
        HARNESS_MCP_HTTP="127.0.0.1:0",  # the system chooses; the start line says which
        HARNESS_MCP_INGEST_KEY_FILE=str(key_file),
        HARNESS_LOG_FORMAT="json",
    )
    tokens = tmp_path / "tokens.json"
    TokenFile(tokens).add(Caller("t", "u"))
    proc = subprocess.Popen(
        [*CLI, "mcp", "--tokens", str(tokens), "--log-level", "info"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = first_line(proc, timeout=120)
        port = served_port(line)
        base = f"http://127.0.0.1:{port}"
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
            "schema": head_revision(),
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


def test_unreachable_database_is_not_ready_without_leaking_the_url() -> None:
    verdict = asyncio.run(readiness_of(UNREACHABLE_URL))
    assert not verdict.ready and verdict.reason == "database unreachable"
    assert "127.0.0.1" not in json.dumps(verdict.as_json())


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
