"""Real ``harness-memory`` processes (issue 31, point 4): the console gives its embedded
PostgreSQL back on SIGTERM; a broken token file stops the console and the MCP server from
starting with one error line; an MCP server whose token file breaks while it runs answers 503
naming the file (logged once) instead of a 500 with a traceback per request."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from harness.mcp_server import TokenFile
from harness.memory import Caller
from harness.memory.store.embedded import live_handle_pids, postmaster_pid
from harness.token_files import TokenFileUnreadable
from tests.support.mcp_helpers import served_port
from tests.system.test_operability import (  # noqa: F401  (fixtures)
    CLI,
    cli_env,
    home,
    postgres_of,
    wait_until,
)


def line_matching(proc: subprocess.Popen[str], pattern: str, timeout: float) -> str:
    """The first stdout line matching ``pattern``, or fail (killing the process) in time."""
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line matching {pattern!r}; exit {proc.wait()}")
    finally:
        timer.cancel()


def test_sigterm_on_the_console_leaves_no_postgres(home: Path, tmp_path: Path) -> None:  # noqa: F811
    env = cli_env(home, tmp_path)  # lexical-only, the embedded server in this home
    proc = subprocess.Popen(
        [*CLI, "console", "--http", "127.0.0.1:0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = line_matching(proc, r"console at http://", timeout=120)
        port = int(re.search(r":(\d+)/", line).group(1))  # type: ignore[union-attr]
        assert postmaster_pid(home) is not None and proc.pid in live_handle_pids(home)
        assert httpx.get(f"http://127.0.0.1:{port}/login", timeout=10).status_code == 200
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert wait_until(lambda: not postgres_of(home), 15), "postgres left running after SIGTERM"
    assert live_handle_pids(home) == []
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["console", "mcp"])
def test_a_broken_token_file_stops_the_start_with_one_line(
    home: Path,  # noqa: F811
    tmp_path: Path,
    command: str,
) -> None:
    name = "console-tokens.json" if command == "console" else "mcp-tokens.json"
    home.mkdir(parents=True)
    (home / name).write_text('{"tokens": [{"sha256": "x"')  # cut off mid-write
    started = time.monotonic()
    done = subprocess.run(
        [*CLI, command, "--http", "127.0.0.1:0"],
        env=cli_env(home, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: token file "), done.stderr
    assert str(home / name) in lines[0] and "not JSON" in lines[0]
    assert "Traceback" not in done.stdout + done.stderr
    assert not postgres_of(home) and postmaster_pid(home) is None  # refused before the store
    assert time.monotonic() - started < 60  # a bound for a hang, not a speed claim


def test_a_token_file_broken_while_serving_answers_503_naming_it_once(
    db_url: str, tmp_path: Path
) -> None:
    tokens_path = tmp_path / "mcp-tokens.json"
    token = TokenFile(tokens_path).add(Caller("t-broken", "alice"))
    env = cli_env(
        tmp_path / "home",
        tmp_path,
        HARNESS_DATABASE_URL=db_url,
        HARNESS_MCP_TOKENS=str(tokens_path),
        HARNESS_MCP_INGEST_KEY="ingest-key-of-20-chars",
    )
    proc = subprocess.Popen(
        [*CLI, "mcp", "--http", "127.0.0.1:0", "--workers", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = served_port(line_matching(proc, r"listening on", timeout=120))
        base = f"http://127.0.0.1:{port}"
        auth = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
        hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        assert httpx.post(f"{base}/mcp", json=hello, headers=auth, timeout=10).status_code == 200

        tokens_path.write_text('{"tokens": [')  # an edit gone wrong
        answers = [
            httpx.post(f"{base}/mcp", json=hello, headers=auth, timeout=10) for _ in range(20)
        ]
        for answer in answers:
            assert answer.status_code == 503, answer.text
            assert answer.json()["code"] == "token_file_unreadable"
            assert "mcp-tokens.json" in answer.text and str(tmp_path) not in answer.text
        # the ingest path does not depend on the token file
        ingest = httpx.post(
            f"{base}/v1/memories",
            json={
                "tenant": "t-broken",
                "scope": "user",
                "scope_id": "alice",
                "kind": "fact",
                "content": "The release train leaves on Thursdays",
            },
            headers={"Authorization": "Bearer ingest-key-of-20-chars"},
            timeout=30,
        )
        assert ingest.status_code == 201, ingest.text
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200

        with pytest.raises(TokenFileUnreadable):  # minting refuses, never overwrites
            TokenFile(tokens_path).add(Caller("t-broken", "bob"))
        tokens_path.write_text('{"tokens": []}')
        auth["Authorization"] = f"Bearer {TokenFile(tokens_path).add(Caller('t-broken', 'al'))}"
        fixed = httpx.post(f"{base}/mcp", json=hello, headers=auth, timeout=10)
        assert fixed.status_code == 200, fixed.text  # served again, without a restart
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert err.count("cannot be used") == 1, err  # logged once, not per request
    assert "Traceback" not in err
