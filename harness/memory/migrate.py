"""Run the shipped Alembic migrations programmatically."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection, Engine

from migrations import MIGRATIONS_DIR

__all__ = ["alembic_config", "current_revision", "downgrade", "recorded_revision", "upgrade_to_head"]


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """An Alembic config pointing at the packaged ``migrations`` folder."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def upgrade_to_head(engine: Engine) -> None:
    """Migrate to head. Idempotent; concurrent callers serialise on an advisory lock."""
    with engine.connect() as conn:
        command.upgrade(alembic_config(conn), "head")


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
