"""Migration 0010: memos bound to the bearer token (``mcp_memos.token_sha256``), grants and
row-level security as 0008 left them, older rows (bound to no token) gone, and back down."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import command

from harness.memory.store.migrate import alembic_config
from harness.memory.store.sql import APP_ROLE

POLICY = sa.text(
    "SELECT polname, pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid) "
    "FROM pg_policy WHERE polrelid = 'mcp_memos'::regclass"
)
RLS = sa.text(
    "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = 'mcp_memos'"
)
PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")


def _migrate(engine: sa.Engine, revision: str, *, down: bool = False) -> None:
    with engine.connect() as conn:
        cfg = alembic_config(conn)
        (command.downgrade if down else command.upgrade)(cfg, revision)


def _security(conn: sa.Connection) -> tuple[Any, ...]:
    granted = tuple(
        conn.execute(
            sa.text("SELECT has_table_privilege(:who, 'mcp_memos', :what)"),
            {"who": APP_ROLE, "what": what},
        ).scalar()
        for what in PRIVILEGES
    )
    return (sorted(conn.execute(POLICY).all()), tuple(conn.execute(RLS).one()), granted)


def _insert_old_row(conn: sa.Connection, tenant: str) -> None:
    conn.execute(sa.text("SELECT set_config('harness.all_tenants', 'on', true)"))
    conn.execute(
        sa.text(
            "INSERT INTO mcp_memos (tenant, handle_sha256, user_id, workflow_id, session_id, "
            "state, last_used, touched) VALUES (:t, :h, 'alice', '', '', '{}', 1.0, 1)"
        ),
        {"t": tenant, "h": "a" * 64},
    )


def test_0010_binds_memos_to_a_token_hash_and_keeps_grants_and_policy(fresh_db_url: str) -> None:
    engine = sa.create_engine(fresh_db_url)
    try:
        _migrate(engine, "0009")
        with engine.begin() as conn:
            before = _security(conn)
            _insert_old_row(conn, "t1")
        policies, rls, granted = before
        assert policies and rls == (True, True)
        assert granted == (True, True, True, True, False)  # DML, no TRUNCATE

        _migrate(engine, "0010")
        columns = {c["name"]: c for c in sa.inspect(engine).get_columns("mcp_memos")}
        token = columns["token_sha256"]
        assert not token["nullable"] and str(token["type"]) == "VARCHAR(64)"
        assert token.get("default") is None  # every insert names its owner's token
        with engine.begin() as conn:
            assert _security(conn) == before  # grants and row-level security untouched
            conn.execute(sa.text("SELECT set_config('harness.all_tenants', 'on', true)"))
            # rows from before were bound to no token: ended, as after a restart
            assert conn.execute(sa.text("SELECT count(*) FROM mcp_memos")).scalar() == 0

        _migrate(engine, "0009", down=True)
        columns = {c["name"] for c in sa.inspect(engine).get_columns("mcp_memos")}
        assert "token_sha256" not in columns
        with engine.begin() as conn:
            assert _security(conn) == before
            _insert_old_row(conn, "t1")  # the 0009 shape takes rows again
        _migrate(engine, "head")
    finally:
        engine.dispose()


def test_the_app_role_still_sees_only_its_tenants_memos_after_0010(fresh_db_url: str) -> None:
    engine = sa.create_engine(fresh_db_url)
    try:
        _migrate(engine, "head")
        insert = sa.text(
            "INSERT INTO mcp_memos (tenant, handle_sha256, user_id, workflow_id, session_id, "
            "token_sha256, state, last_used, touched) "
            "VALUES (:t, :h, 'alice', '', '', :k, '{}', 1.0, 1)"
        )
        with engine.begin() as conn:
            conn.execute(sa.text("SELECT set_config('harness.all_tenants', 'on', true)"))
            for tenant in ("t1", "t2"):
                conn.execute(insert, {"t": tenant, "h": "b" * 64, "k": "c" * 64})
        with engine.begin() as conn:
            conn.execute(sa.text(f"SET LOCAL ROLE {APP_ROLE}"))
            conn.execute(sa.text("SELECT set_config('harness.tenant', 't1', true)"))
            seen = conn.execute(sa.text("SELECT tenant, token_sha256 FROM mcp_memos")).all()
        assert seen == [("t1", "c" * 64)]
    finally:
        engine.dispose()
