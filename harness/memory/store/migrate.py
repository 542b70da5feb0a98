"""Run the shipped Alembic migrations programmatically."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from harness.errors import StoreMisconfigured
from harness.identifiers import check_identifier

__all__ = [
    "MIGRATIONS_DIR",
    "alembic_config",
    "check_schema_current",
    "current_revision",
    "downgrade",
    "head_revision",
    "recorded_revision",
    "upgrade_to_head",
]


def _migrations_dir() -> Path:
    """``harness/_migrations`` in an installed wheel; the repository's ``migrations/`` in a
    checkout (editable install)."""
    package = Path(__file__).resolve().parents[2]  # harness/memory/store/migrate.py
    shipped = package / "_migrations"
    return shipped if (shipped / "env.py").is_file() else package.parent / "migrations"


#: The Alembic environment (env.py, script.py.mako, versions/).
MIGRATIONS_DIR = _migrations_dir()


def alembic_config(
    connection: Connection | None = None, url: str | None = None, app_role: str | None = None
) -> Config:
    """An Alembic config pointing at the packaged ``migrations`` folder. ``app_role`` is
    granted the store's tables after the migration (``HARNESS_APP_ROLE``)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    if app_role:
        cfg.attributes["app_role"] = check_identifier(app_role, "HARNESS_APP_ROLE")
    return cfg


def upgrade_to_head(engine: Engine, *, app_role: str | None = None) -> None:
    """Migrate to head, then grant ``app_role`` (if given) DML on every table of the schema.

    Idempotent; concurrent callers serialise on an advisory lock.
    """
    with engine.connect() as conn:
        command.upgrade(alembic_config(conn, app_role=app_role), "head")


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The revision this version of harness-memory needs."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def check_schema_current(engine: Engine) -> None:
    """With migrations off: raise unless the database is at this version's head revision.

    Raises:
        StoreMisconfigured: naming the revision gap and ``harness-memory init``.
    """
    with engine.connect() as conn:
        current = current_revision(conn)
    head = head_revision()
    if current == head:
        return
    have = f"revision {current}" if current else "no schema yet"
    raise StoreMisconfigured(
        f"the database has {have} but this version of harness-memory needs revision {head}, "
        "and migrations are off here (HARNESS_MIGRATE=never, or a read-only command). "
        "What to do: run `harness-memory init` (on your own PostgreSQL as the role that owns "
        "the tables: its URL in HARNESS_DATABASE_URL)."
    )


def downgrade(engine: Engine, revision: str = "base") -> None:
    """Migrate down to ``revision`` (tests and operators only)."""
    with engine.connect() as conn:
        command.downgrade(alembic_config(conn), revision)


def recorded_revision(conn: Connection) -> str | None:
    """The revision in ``alembic_version`` with one statement (the fast path for probes).

    Raises the driver's error when the table does not exist; :func:`current_revision` is the
    careful variant.
    """
    row = conn.execute(sa.text("SELECT version_num FROM alembic_version")).first()
    return None if row is None else str(row[0])


def current_revision(conn: Connection) -> str | None:
    """The revision the database is at, or None before the first migration."""
    return MigrationContext.configure(conn).get_current_revision()
