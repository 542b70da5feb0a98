"""Running on an operator's own PostgreSQL: URL checks, configuration errors vs outages, the
owner/app split, migrations kept apart from daily use (issue 19).

The server tests use a separate TCP server with scram password auth (tests/pg_tcp.py): an owner
that is not a superuser, and an application login with only what the README grants.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from harness.cli import app as cli_app
from harness.errors import InvalidInput, StoreMisconfigured, StoreUnavailable
from harness.memory import Answer, IdempotencyOutcome, Idempotent
from harness.memory.store.db import diagnose, normalize_url
from harness.memory.store.migrate import head_revision
from harness.memory.store.sync import MemoryStore
from harness.settings import Settings
from tests.pg_tcp import TcpServer, tcp_server

OWNER, OWNER_PW = "owner", "owner-pw"
APP, APP_PW = "app", "p:ss w/rd%"  # ':' parses unencoded; the fixture percent-encodes the rest


# --- URLs: pure ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("host=db.internal dbname=harness user=app", "libpq"),
        ("postgresql+asyncpg://app:pw@db/harness", "'postgresql+asyncpg' is not supported"),
        ("mysql://app:pw@db/harness", "not supported"),
        ("postgresql://app:p@ss@db/harness", "unencoded '@'"),
        ("postgresql://app:pw@db:notaport/harness", "port is not a number"),
        ("not a url", "not a database URL"),
    ],
)
def test_unusable_urls_are_invalid_input_naming_the_setting(url: str, says: str) -> None:
    with pytest.raises(InvalidInput) as err:
        normalize_url(url)
    assert err.value.fields == ("HARNESS_DATABASE_URL",)
    assert says in str(err.value)
    assert "percent-encoded" in str(err.value)
    assert "p@ss" not in str(err.value)


@given(st.text(min_size=1, max_size=30).filter(lambda p: "\x00" not in p))
def test_any_percent_encoded_password_survives_normalisation(password: str) -> None:
    url = normalize_url(f"postgresql://app:{quote(password, safe='')}@db:5432/harness")
    parsed = make_url(url)
    assert (parsed.password, parsed.host, parsed.port, parsed.drivername) == (
        password,
        "db",
        5432,
        "postgresql+psycopg",
    )


@pytest.mark.parametrize(
    ("sqlstate", "message", "advice"),
    [
        ("0A000", 'extension "vector" is not available', "install pgvector"),
        ("42501", 'permission denied to create extension "vector"', "CREATE EXTENSION vector"),
        ("42501", "permission denied for schema public", "harness-memory init"),
        ("42704", 'type "vector" does not exist', "search_path"),
        (None, 'FATAL:  password authentication failed for user "app"', "password"),
        (None, 'FATAL:  database "nope" does not exist', "database name"),
        (None, "server does not support SSL, but SSL was required", "sslmode"),
        (None, 'could not translate host name "db.nowhere" to address', "host name"),
    ],
)
def test_known_failures_are_misconfigurations_with_one_fix(
    sqlstate: str | None, message: str, advice: str
) -> None:
    diagnosis = diagnose(sqlstate, message)
    assert diagnosis.misconfigured
    assert diagnosis.advice is not None and advice in diagnosis.advice


@pytest.mark.parametrize(
    ("sqlstate", "message"),
    [
        (None, 'connection to server at "127.0.0.1", port 9 failed: Connection refused'),
        ("57014", "canceling statement due to statement timeout"),
        ("55P03", "canceling statement due to lock timeout"),
        ("42P01", 'relation "memories" does not exist'),
        ("42501", 'new row violates row-level security policy for table "memories"'),
    ],
)
def test_outages_are_not_misconfigurations(sqlstate: str | None, message: str) -> None:
    assert not diagnose(sqlstate, message).misconfigured


@pytest.mark.parametrize(
    ("word", "mode"),
    [("0", "never"), ("never", "never"), ("auto", "auto"), ("1", "auto"), ("FALSE", "never")],
)
def test_harness_migrate_words(word: str, mode: str) -> None:
    assert Settings.from_env(migrate=word).migrate == mode


def test_harness_migrate_rejects_other_words() -> None:
    with pytest.raises(InvalidInput) as err:
        Settings.from_env(migrate="sometimes")
    assert err.value.fields == ("HARNESS_MIGRATE",)


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


def _connect(url: str, **settings: object) -> MemoryStore:
    return MemoryStore.connect(
        url, embedder=None, check_model=False, settings=Settings.from_env(**settings)
    )


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


def test_nothing_listening_stays_an_outage() -> None:
    with pytest.raises(StoreUnavailable) as err:
        _connect("postgresql://u:secret@127.0.0.1:9/harness")
    assert not isinstance(err.value, StoreMisconfigured)
    assert "secret" not in str(err.value)


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
    store = _connect(app_url, migrate="never")
    try:
        tenant = "t1"
        # the idempotency table came with the last migrations: granted like every other one
        result = store.idempotent(
            tenant,
            "key-1",
            "sha",
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
        assert store.idempotent(tenant, "key-1", "sha", lambda w: Answer(500)).replayed
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
                store.idempotent("t1", "key-1", "sha", attempt)
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


@pytest.mark.parametrize(
    "url",
    ["host=db dbname=harness user=app password=s3cret", "postgresql+asyncpg://app:s3cret@db/h"],
)
def test_cli_refuses_an_unusable_url_in_one_line(url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(
        cli_app, ["status"], env={"HARNESS_DATABASE_URL": url, "HARNESS_HOME": str(tmp_path)}
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: HARNESS_DATABASE_URL:"), lines
    assert "Traceback" not in result.output and "s3cret" not in result.output
