"""Running on an operator's own PostgreSQL: URL checks, configuration errors vs outages, the
owner/app split, migrations kept apart from daily use (issue 19).

The server tests use a separate TCP server with scram password auth
(tests/support/pg_tcp.py): an owner that is not a superuser, and an application login with only
what the README grants.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_own_postgres.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from harness.cli import app as cli_app
from harness.errors import StoreMisconfigured, StoreUnavailable
from harness.memory import Answer, IdempotencyOutcome, Idempotent
from harness.memory.store.migrate import head_revision
from tests.support.pg_tcp import TcpServer, tcp_server
from tests.unit.test_own_postgres import _connect

OWNER, OWNER_PW = "owner", "owner-pw"
APP, APP_PW = "app", "p:ss w/rd%"  # ':' parses unencoded; the fixture percent-encodes the rest


# --- a real server over TCP with password auth ---------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[TcpServer]:
    with tcp_server() as srv:
        srv.admin(
            f"CREATE ROLE {OWNER} LOGIN PASSWORD '{OWNER_PW}' NOSUPERUSER NOCREATEROLE",
            f"CREATE ROLE {APP} LOGIN PASSWORD '{APP_PW}' NOSUPERUSER NOCREATEROLE",
        )
        yield srv


def _database(server: TcpServer, *, vector: str | None = "public") -> str:
    """A database owned by the owner; the superuser enables pgvector (as on a managed service)."""
    name = f"h_{uuid.uuid4().hex[:10]}"
    server.admin(f"CREATE DATABASE {name} OWNER {OWNER}")
    if vector == "public":
        server.admin("CREATE EXTENSION vector", database=name)
    elif vector is not None:
        server.admin(
            f"CREATE SCHEMA {vector}",
            f"GRANT USAGE ON SCHEMA {vector} TO PUBLIC",
            f"CREATE EXTENSION vector SCHEMA {vector}",
            database=name,
        )
    return name


def test_wrong_password_and_missing_database_are_misconfigured_and_redacted(
    server: TcpServer,
) -> None:
    for url, says in [
        (server.url(OWNER, "wrong-secret"), "password authentication failed"),
        (server.url(OWNER, OWNER_PW, "no_such_db"), 'database "no_such_db" does not exist'),
    ]:
        with pytest.raises(StoreMisconfigured) as err:
            _connect(url)
        text = str(err.value)
        assert says in text and "What to do:" in text
        assert "***" in text and "wrong-secret" not in text and OWNER_PW not in text
        assert not isinstance(err.value, StoreUnavailable)


def test_app_role_without_create_gets_the_owner_fix(server: TcpServer) -> None:
    db = _database(server)
    with pytest.raises(StoreMisconfigured) as err:
        _connect(server.url(APP, APP_PW, db))
    assert "permission denied for schema public" in str(err.value)
    assert "harness-memory init" in str(err.value)


def test_extension_an_admin_must_create_keeps_the_hint(server: TcpServer) -> None:
    db = _database(server, vector=None)
    with pytest.raises(StoreMisconfigured) as err:
        _connect(server.url(OWNER, OWNER_PW, db))
    text = str(err.value)
    assert 'permission denied to create extension "vector"' in text
    assert "(hint: " in text and "CREATE EXTENSION vector;" in text


def test_vector_outside_the_search_path_says_so(server: TcpServer) -> None:
    db = _database(server, vector="extensions")
    with pytest.raises(StoreMisconfigured) as err:
        _connect(server.url(OWNER, OWNER_PW, db))
    assert 'type "vector" does not exist' in str(err.value) and "search_path" in str(err.value)
    # ... and the fix it names works.
    fixed = server.url(OWNER, OWNER_PW, db) + "?options=-csearch_path%3Dpublic,extensions"
    _connect(fixed).close()


def test_owner_migrates_with_app_role_then_app_runs_without_ddl(server: TcpServer) -> None:
    db = _database(server)
    app_url = server.url(APP, APP_PW, db)
    with pytest.raises(StoreMisconfigured) as behind:
        _connect(app_url, migrate="never")
    assert "no schema yet" in str(behind.value) and f"needs revision {head_revision()}" in str(
        behind.value
    )
    assert "harness-memory init" in str(behind.value)

    _connect(server.url(OWNER, OWNER_PW, db), app_role=APP).close()
    # CLUSTER rewrites the table: the app login is told to run it as the owner, not to grant
    denied = CliRunner().invoke(cli_app, ["cluster", "--url", app_url], env={"COLUMNS": "400"})
    assert denied.exit_code == 2, denied.output
    (line,) = [x for x in denied.output.splitlines() if x.startswith("error:")]
    assert "permission denied" in line and "as the tables' owner" in line, line
    assert "grant this role" not in line and APP_PW not in denied.output
    store = _connect(app_url, migrate="never")
    try:
        tenant = "t1"
        # the idempotency table came with the last migrations: granted like every other one
        result = store.idempotent(
            tenant,
            "key-1",
            "a" * 64,
            lambda write: Answer(
                201,
                {
                    "n": len(
                        write(
                            [
                                {
                                    "tenant": tenant,
                                    "scope": "user",
                                    "scope_id": "u",
                                    "kind": "fact",
                                    "content": "the app login writes",
                                }
                            ]
                        )
                    )
                },
            ),
        )
        assert result == Idempotent(IdempotencyOutcome.NEW, Answer(201, {"n": 1}))
        assert store.idempotent(tenant, "key-1", "a" * 64, lambda w: Answer(500)).replayed
    finally:
        store.close()
    engine = sa.create_engine(server.admin_url.replace("/postgres", f"/{db}"))
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT tenant, content FROM memories")).all()
            keys = conn.execute(sa.text("SELECT count(*) FROM ingest_requests")).scalar()
    finally:
        engine.dispose()
    assert [tuple(r) for r in rows] == [(tenant, "the app login writes")]
    assert keys == 1


def test_read_only_commands_never_migrate(server: TcpServer) -> None:
    db = _database(server)
    url = server.url(OWNER, OWNER_PW, db)
    runner = CliRunner()
    for args in (
        ["status"],
        ["admin", "pending", "--tenant", "t"],
        ["admin", "audit", "--tenant", "t"],
    ):
        result = runner.invoke(cli_app, [*args, "--url", url])
        assert result.exit_code == 2, result.output
        assert "harness-memory init" in result.output
        assert OWNER_PW not in result.output
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT to_regclass('alembic_version')")).scalar() is None
    finally:
        engine.dispose()
    init = runner.invoke(cli_app, ["init", "--url", url], env={"HARNESS_MIGRATE": "never"})
    assert init.exit_code == 0, init.output
    assert runner.invoke(cli_app, ["status", "--url", url]).exit_code == 0


def test_mcp_stdio_start_up_error_stays_off_the_protocol_channel(server: TcpServer) -> None:
    import json
    import subprocess
    import sys

    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    wrong = server.url(OWNER, "wrong-secret")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "mcp",
            "--tenant",
            "t",
            "--user",
            "u",
            "--url",
            wrong,
        ],
        input=json.dumps(initialize) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""  # the JSON-RPC channel: nothing a client would fail to parse
    assert "error:" in proc.stderr and "password authentication failed" in proc.stderr
    assert "wrong-secret" not in proc.stderr


def test_failed_keyed_ingest_surfaces_the_real_error_and_holds_no_lock(
    server: TcpServer,
) -> None:
    db = _database(server)
    _connect(server.url(OWNER, OWNER_PW, db), app_role=APP).close()
    server.admin(f"REVOKE INSERT ON memories FROM {APP}", database=db)
    candidate = {
        "tenant": "t1",
        "scope": "user",
        "scope_id": "u",
        "kind": "fact",
        "content": "kept?",
    }

    def attempt(write):  # type: ignore[no-untyped-def]
        return Answer(201, {"n": len(write([candidate]))})

    store = _connect(server.url(APP, APP_PW, db), migrate="never", lock_timeout_ms=500)
    try:
        for _ in range(2):  # the second would hit lock_timeout if the first left its lock
            with pytest.raises(StoreMisconfigured) as err:
                store.idempotent("t1", "key-1", "a" * 64, attempt)
            assert "permission denied for table memories" in str(err.value)
            assert "current transaction is aborted" not in str(err.value)
        engine = sa.create_engine(server.admin_url.replace("/postgres", f"/{db}"))
        try:
            with engine.connect() as conn:
                held = conn.execute(
                    sa.text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
                ).scalar()
                recorded = conn.execute(sa.text("SELECT count(*) FROM ingest_requests")).scalar()
        finally:
            engine.dispose()
        assert (held, recorded) == (0, 0)  # no lock left on the pooled connection, no record
    finally:
        store.close()


def test_every_migration_grants_the_app_role_on_tables_it_did_not_name(
    server: TcpServer,
) -> None:
    """A table 0003 never named (as one a later version adds) is granted to ``harness_app``."""
    db = _database(server)
    server.admin(
        "DO $$ BEGIN CREATE ROLE harness_app NOLOGIN; EXCEPTION WHEN duplicate_object THEN "
        "NULL; END $$",
        f"GRANT harness_app TO {APP}",
    )
    try:
        owner_url = server.url(OWNER, OWNER_PW, db)
        engine = sa.create_engine(owner_url)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text("CREATE TABLE later_table (id int)"))
        finally:
            engine.dispose()
        _connect(owner_url).close()
        engine = sa.create_engine(server.url(APP, APP_PW, db))
        try:
            with engine.begin() as conn:
                conn.execute(sa.text("SET ROLE harness_app"))
                conn.execute(sa.text("INSERT INTO later_table VALUES (1)"))
                assert conn.execute(sa.text("SELECT count(*) FROM later_table")).scalar() == 1
        finally:
            engine.dispose()
    finally:
        server.admin(f"REVOKE harness_app FROM {APP}")
