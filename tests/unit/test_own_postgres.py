"""Running on an operator's own PostgreSQL: URL checks, configuration errors vs outages, the
owner/app split, migrations kept apart from daily use (issue 19).

The server tests use a separate TCP server with scram password auth
(tests/support/pg_tcp.py): an owner that is not a superuser, and an application login with only
what the README grants.

Here the tests that need no database, model or other process; the others are in
tests/system/test_own_postgres_system.py.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from harness.cli import app as cli_app
from harness.errors import InvalidInput, StoreMisconfigured, StoreUnavailable
from harness.memory.store.db import diagnose, normalize_url
from harness.memory.store.sync import MemoryStore
from harness.settings import Settings

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


def test_a_privilege_error_of_an_owner_only_action_says_run_it_as_the_owner() -> None:
    denied = "permission denied for table memories"
    cluster = diagnose("42501", denied, action="cluster memories (waiting at most 3 s)")
    assert cluster.misconfigured and cluster.advice is not None
    assert "owner" in cluster.advice and "grant" not in cluster.advice.lower()
    write = diagnose("42501", denied, action="write")  # a missing grant: say which
    assert write.advice is not None and write.advice.startswith("grant this role")


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


def _connect(url: str, **settings: object) -> MemoryStore:
    return MemoryStore.connect(
        url, embedder=None, check_model=False, settings=Settings.from_env(**settings)
    )


def test_nothing_listening_stays_an_outage() -> None:
    with pytest.raises(StoreUnavailable) as err:
        _connect("postgresql://u:secret@127.0.0.1:9/harness")
    assert not isinstance(err.value, StoreMisconfigured)
    assert "secret" not in str(err.value)


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
