"""Alembic environment: one linear head, every run under a PostgreSQL advisory lock."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text
from sqlalchemy.engine import Connection

from harness.memory.store.sql import APP_ROLE
from harness.memory.store.sql.schema import metadata

# Any constant works; it only has to be the same for every process migrating this database.
MIGRATION_LOCK_KEY = 0x6861726E657373  # "harness"

config = context.config


def _run(connection: Connection) -> None:
    with connection.begin():
        connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        # A store's pooled connection runs as the application role: migrations run as the login
        # (the owner), over every tenant's rows, for this transaction only.
        connection.execute(text("SET LOCAL ROLE NONE"))
        connection.execute(text("SELECT set_config('harness.all_tenants', 'on', true)"))
        context.configure(connection=connection, target_metadata=metadata, compare_type=True)
        context.run_migrations()
        # The store's own role (when it exists) and HARNESS_APP_ROLE get what the store needs
        # on every table, including those a later migration adds (after each upgrade).
        has_app_role = connection.execute(
            text("SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = :r)"), {"r": APP_ROLE}
        ).scalar()
        roles = [APP_ROLE] if has_app_role else []
        roles += [r for r in [config.attributes.get("app_role")] if r and r != APP_ROLE]
        for role in roles:
            _grant_app_role(connection, role)


def _grant_app_role(connection: Connection, role: str) -> None:
    """DML on every table and sequence of the schema, to ``role`` (idempotent); only SELECT on
    ``alembic_version``: the store reads its revision, only migrations (the owner) write it."""
    quoted = connection.dialect.identifier_preparer.quote(role)
    for statement in (
        f"GRANT USAGE ON SCHEMA public TO {quoted}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {quoted}",
        f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON alembic_version FROM {quoted}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {quoted}",
    ):
        connection.execute(text(statement))


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "", poolclass=pool.NullPool)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"), target_metadata=metadata, literal_binds=True
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
