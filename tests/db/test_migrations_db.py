"""Alembic: one linear head, reversible, no drift, safe under concurrent connects.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_migrations.py, tests/system/test_migrations_system.py."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from harness.memory.store.migrate import downgrade, upgrade_to_head
from harness.memory.store.sql import APP_ROLE
from harness.memory.store.sql.schema import metadata

TABLES = {
    "memories",
    "memory_approvals",
    "runs",
    "cleanup_tasks",
    "store_meta",
    "ingest_requests",
    "mcp_memos",
    "lesson_events",
    "lesson_scores",
    "conversations",
    "conversation_turns",
    "conversation_settings",
}


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}


def test_upgrade_downgrade_upgrade(fresh_db_url: str) -> None:
    engine = sa.create_engine(fresh_db_url)
    try:
        upgrade_to_head(engine)
        assert _tables(engine) == TABLES
        downgrade(engine, "base")
        assert _tables(engine) == set()
        upgrade_to_head(engine)
        assert _tables(engine) == TABLES
        upgrade_to_head(engine)  # idempotent
        indexes = {ix["name"] for ix in sa.inspect(engine).get_indexes("memories")}
        assert {
            "ix_memories_embedding_hnsw",
            "ix_memories_tsv",
            "uq_memories_active_key",
        } <= indexes
    finally:
        engine.dispose()


def test_autogenerate_finds_no_drift(fresh_db_url: str) -> None:
    engine = sa.create_engine(fresh_db_url)
    try:
        upgrade_to_head(engine)
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(ctx, metadata)
        assert diff == []
    finally:
        engine.dispose()


def test_every_index_on_tenant_tables_leads_with_tenant(fresh_db_url: str) -> None:
    engine = sa.create_engine(fresh_db_url)
    try:
        upgrade_to_head(engine)
        insp = sa.inspect(engine)
        single_column_access_methods = {"ix_memories_embedding_hnsw", "ix_memories_tsv"}
        for table in ("memories", "memory_approvals", "runs", "cleanup_tasks", "mcp_memos"):
            for ix in insp.get_indexes(table):
                if ix["name"] in single_column_access_methods:
                    continue
                assert ix["column_names"][0] == "tenant", (table, ix["name"])
    finally:
        engine.dispose()


def test_a_memory_keeps_its_vectors_in_its_row(fresh_db_url: str) -> None:
    """Migration 0007: a lesson with both vectors (about 3.3 kB, nothing in it compressible
    enough to matter) stays whole, so exact recall reads one heap page per row, no TOAST;
    under PostgreSQL's default 2,032-byte target a vector would have been moved out."""
    from harness.memory import MemoryCandidate, MemoryStore
    from tests.support.hash_embedder import HashEmbedder

    store = MemoryStore.connect(fresh_db_url, embedder=HashEmbedder(), check_model=False)
    try:
        store.write(
            MemoryCandidate(
                tenant="t",
                scope="user",
                scope_id="u",
                kind="lesson",
                content="Cite the ticket id in every incident summary.",
                context="Summarise yesterday's incidents for the on-call handover.",
            )
        )
        engine = sa.create_engine(fresh_db_url)
        with engine.connect() as conn:
            options = conn.execute(
                sa.text("SELECT reloptions FROM pg_class WHERE relname = 'memories'")
            ).scalar_one()
            row_size, toast_pages = conn.execute(
                sa.text(
                    "SELECT (SELECT pg_column_size(m.*) FROM memories m), "
                    "pg_relation_size(reltoastrelid) FROM pg_class WHERE relname = 'memories'"
                )
            ).one()
        engine.dispose()
        assert "toast_tuple_target=4080" in options
        assert row_size > 3000  # both vectors, well above the default target
        assert toast_pages == 0
    finally:
        store.close()


def test_the_app_roles_only_read_the_schema_revision(fresh_db_url: str) -> None:
    """Least privilege: ``harness_app`` and ``HARNESS_APP_ROLE`` read ``alembic_version`` (the
    store checks its revision) but never write it; they keep DML on the store's tables."""
    engine = sa.create_engine(fresh_db_url)
    role = f"app_{uuid.uuid4().hex[:8]}"
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"CREATE ROLE {role} NOLOGIN"))
        upgrade_to_head(engine, app_role=role)
        with engine.connect() as conn:
            for who in (APP_ROLE, role):
                granted = {
                    (table, what)
                    for table in ("alembic_version", "memories")
                    for what in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")
                    if conn.execute(
                        sa.text("SELECT has_table_privilege(:who, :table, :what)"),
                        {"who": who, "table": table, "what": what},
                    ).scalar()
                }
                assert granted == {
                    ("alembic_version", "SELECT"),
                    ("memories", "SELECT"),
                    ("memories", "INSERT"),
                    ("memories", "UPDATE"),
                    ("memories", "DELETE"),
                }, who
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP OWNED BY {role}"))
            conn.execute(sa.text(f"DROP ROLE {role}"))
    finally:
        engine.dispose()
