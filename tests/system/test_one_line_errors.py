"""Every command answers an unreachable database or a bad setting with one ``error:`` line and
exit code 2: no traceback, no WARNING before it (issue 35, point 3). Real subprocesses of
``harness-memory``, their whole output counted."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.system.test_operability import cli_env, run_cli
from tests.system.test_operability import home as home  # the fixture: a private HARNESS_HOME

#: Every command that opens the store, with the arguments it needs.
STORE_COMMANDS = [
    ["status"],
    ["init"],
    ["reembed"],
    ["cluster"],
    ["distribute"],
    ["reconcile"],
    ["demo"],
    ["admin", "pending", "--tenant", "t"],
    ["admin", "audit", "--tenant", "t"],
    ["admin", "approve", "00000000-0000-0000-0000-000000000001", "--by", "a", "--tenant", "t"],
    [
        "admin",
        "reject",
        "00000000-0000-0000-0000-000000000001",
        "--by",
        "a",
        "--reason",
        "r",
        "--tenant",
        "t",
    ],
    ["console", "--http", "127.0.0.1:0"],
    ["mcp", "--tenant", "t", "--user", "u"],
    ["mcp", "--http", "127.0.0.1:0", "--workers", "1"],
    ["mcp", "--http", "127.0.0.1:0", "--workers", "2"],
]


@pytest.fixture(scope="module")
def closed_url() -> Iterator[str]:
    """A database URL on a port bound here and never listened on: refused at once, and no
    other process can listen there while the tests hold it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"postgresql://app:s3cret@127.0.0.1:{sock.getsockname()[1]}/harness"
    finally:
        sock.close()


def one_error_line(out: str) -> str:
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, out
    assert lines[0].startswith("error: "), out
    assert "Traceback" not in out and "WARNING" not in out and "s3cret" not in out
    return lines[0]


#: With HARNESS_MIGRATE=never the MCP server starts degraded while the database is down (by
#: design: /readyz says so until it is back); every other command still fails in one line.
CASES = [(args, "auto") for args in STORE_COMMANDS] + [
    (args, "never") for args in STORE_COMMANDS if args[0] != "mcp"
]


@pytest.mark.parametrize(
    ("args", "migrate"), CASES, ids=[f"{' '.join(a[:2])}-{m}" for a, m in CASES]
)
def test_an_unreachable_database_is_one_error_line_and_exit_2(
    home: Path, tmp_path: Path, closed_url: str, args: list[str], migrate: str
) -> None:
    env = cli_env(home, tmp_path, HARNESS_DATABASE_URL=closed_url, HARNESS_MIGRATE=migrate)
    code, out = run_cli(args, env, timeout=120)
    assert code == 2, out
    line = one_error_line(out)
    assert "database unavailable" in line and "127.0.0.1" in line


@pytest.mark.parametrize(
    ("args", "extra", "named"),
    [
        (["status"], {"HARNESS_MIGRATE": "sometimes"}, "HARNESS_MIGRATE"),
        (["console-token", "--name", "n", "--tenant", "t"], {"HARNESS_POOL_SIZE": "x"}, "POOL"),
        (["console", "--http", "localhost"], {}, "--http"),
        (["mcp", "--http", "127.0.0.1:0", "--tokens", "/nonexistent/t.json"], {}, "--tokens"),
        (["mcp", "--http", "127.0.0.1:0"], {"HARNESS_MCP_TOKENS": "/no/t.json"}, "MCP_TOKENS"),
    ],
)
def test_a_bad_setting_is_one_error_line_and_exit_2(
    home: Path, tmp_path: Path, args: list[str], extra: dict[str, str], named: str
) -> None:
    code, out = run_cli(args, cli_env(home, tmp_path, **extra), timeout=60)
    assert code == 2, out
    assert named in one_error_line(out)
    assert not (home / "pgdata").exists()  # refused before any server was started


@pytest.mark.parametrize(
    "args", [["status"], ["init"], ["demo"], ["mcp", "--tenant", "t", "--user", "u"]]
)
def test_a_model_folder_named_but_missing_is_an_error_naming_it(
    home: Path, tmp_path: Path, args: list[str]
) -> None:
    missing = tmp_path / "no-such-model"
    env = cli_env(home, tmp_path, HARNESS_EMBED_MODEL_PATH=str(missing))
    code, out = run_cli(args, env, timeout=120)
    assert code == 2, out
    line = one_error_line(out)
    assert line.startswith("error: HARNESS_EMBED_MODEL_PATH:") and str(missing) in line
    assert "lexical-only" in line  # how to get the fallback: unset it
    assert not (home / "pgdata").exists()  # checked before the embedded server starts


def test_status_against_a_closed_port_is_at_most_two_lines(
    home: Path, tmp_path: Path, closed_url: str
) -> None:
    """The issue's bar, as a user types it (no model anywhere, so lexical-only too)."""
    code, out = run_cli(["status"], cli_env(home, tmp_path, HARNESS_DATABASE_URL=closed_url))
    assert code == 2 and len([x for x in out.splitlines() if x.strip()]) <= 2, out
