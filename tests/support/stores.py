"""Databases and stores for tests: create a database, connect a store the way the fixtures do,
and a store whose database cannot be reached (a real connection failure, no server needed)."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from harness.clock import FixedClock
from harness.memory import RecallConfig
from harness.memory.embedding.embedder import Embedder
from harness.memory.store.sync import MemoryStore
from harness.settings import Settings
from tests.support.hash_embedder import HashEmbedder

#: The instant of the ``clock`` fixture.
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

#: A PostgreSQL URL nothing listens on: a real connection failure, fast.
UNREACHABLE_URL = "postgresql+psycopg://postgres@127.0.0.1:9/harness"


def create_database(server_url: str, name: str, template: str | None = None) -> str:
    """Create a database on the server (empty, or a copy of ``template``); return its URL."""
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    copy = f' TEMPLATE "{template}"' if template else ""
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"{copy}'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def unreachable_store() -> MemoryStore:
    """A store whose database cannot be reached (no migration, no model check)."""
    return MemoryStore.connect(
        UNREACHABLE_URL, embedder=HashEmbedder(), migrate=False, check_model=False
    )


def make_store(
    db_url: str,
    embedder: Embedder | None,
    clock: FixedClock | None = None,
    *,
    recall: RecallConfig | None = None,
    **settings: object,
) -> MemoryStore:
    return MemoryStore.connect(
        db_url,
        embedder=embedder,
        clock=clock,
        migrate=False,
        check_model=False,
        settings=Settings.from_env(**settings),
        recall=recall,
    )  # type: ignore[arg-type]
