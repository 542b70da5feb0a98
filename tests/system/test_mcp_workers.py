"""The HTTP MCP server as several worker processes: memos shared, dead workers replaced,
a worker that cannot start stops the server, orphaned workers stop themselves."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.mcp_server import TokenFile
from harness.memory import Caller
from tests.support.mcp_helpers import served_port

CLI_MCP = (sys.executable, "-m", "harness.cli", "mcp")


def children(pid: int) -> set[int]:
    """Live worker processes of ``pid`` (from /proc; not multiprocessing's resource tracker)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            with contextlib.suppress(OSError):
                if b"spawn_main" in (entry / "cmdline").read_bytes():
                    found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


async def call(base: str, token: str, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
    """One tool call on a new connection (so it may reach any worker)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool(tool, args)
    return result.content[0].text, bool(result.is_error)  # type: ignore[union-attr]


@pytest.fixture
def server_env(private_db_url: str, tmp_path: Path) -> tuple[dict[str, str], str]:
    tokens = TokenFile(tmp_path / "tokens.json")
    token = tokens.add(Caller("t-workers", "alice"))
    env = {
        **os.environ,
        "HARNESS_HOME": str(tmp_path / "home"),
        "HARNESS_DATABASE_URL": private_db_url,
        "HARNESS_MCP_TOKENS": str(tokens.path),
    }
    return env, token


def listening(port: int) -> bool:
    """Whether any process listens on TCP ``port`` (from /proc/net/tcp: state 0A)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                local, state = row.split()[1], row.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    return True
    return False


def start(env: dict[str, str], workers: int) -> subprocess.Popen[str]:
    """The server on port 0: the system picks a free port, the start line names it."""
    return subprocess.Popen(
        [*CLI_MCP, "--http", "127.0.0.1:0", "--workers", str(workers)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_workers_share_memos_and_a_dead_worker_is_replaced(
    server_env: tuple[dict[str, str], str],
) -> None:
    env, token = server_env
    proc = start(env, 2)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "/mcp" in line and "workers: 2 (from --workers)" in line, line + (
            proc.stderr.read() if proc.stderr else ""
        )
        port = served_port(line)
        base = f"http://127.0.0.1:{port}"
        first = children(proc.pid)
        assert len(first) == 2, first
        opened, error = anyio.run(call, base, token, "recallset_add", {"content": "keep the ids"})
        assert not error, opened
        memo = json.loads(opened)["memo"]
        # Every worker that saw the memo dies; the ones started in their place never held it
        # in memory, so the memo can only come back from the database.
        for pid in first:
            os.kill(pid, signal.SIGKILL)
        wait_for(
            lambda: len(children(proc.pid) - first) == 2 and not (children(proc.pid) & first),
            60,
            "two new workers",
        )
        second = children(proc.pid)
        overview, error = anyio.run(call, base, token, "recallset_overview", {"memo": memo})
        assert not error, overview
        assert [item["title"] for item in json.loads(overview)] == ["keep the ids"]
        assert children(proc.pid) == second and proc.poll() is None
        # Another caller cannot use the handle, whichever worker answers.
        other = TokenFile(Path(env["HARNESS_MCP_TOKENS"])).add(Caller("t-workers", "bob"))
        text, error = anyio.run(call, base, other, "recallset_read", {"memo": memo, "id": "r1"})
        assert error and "no memo" in text, text
        # The supervisor is killed outright: its workers notice and stop by themselves.
        proc.kill()
        proc.wait(timeout=10)
        wait_for(lambda: not any(alive(pid) for pid in second), 60, "orphaned workers to stop")
        # Nobody listens on the port any more. (Binding it again would not prove that: once
        # free, any process's outgoing connection may take it as its local port.)
        wait_for(lambda: not listening(port), 30, "the port to be released")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def test_a_worker_that_cannot_start_stops_the_server(
    server_env: tuple[dict[str, str], str], tmp_path: Path
) -> None:
    env, _ = server_env
    # The supervisor checks the database itself (an unusable one is its one error line); what
    # only a worker meets is the model: a named folder that holds none.
    empty = tmp_path / "empty-model"
    empty.mkdir()
    env = {**env, "HARNESS_EMBED_MODEL_PATH": str(empty)}
    proc = start(env, 2)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, err
    assert "before it was ready" in err and "an MCP worker could not start" in err, err
    assert "HARNESS_EMBED_MODEL_PATH" in err, err
    assert "/mcp" not in out  # never announced as serving
    assert not children(proc.pid)
