"""Row-level security on every tenant table, and the application role.

Policies admit only the rows of the transaction's ``harness.tenant`` setting, or every row
while ``harness.all_tenants`` is on (the store's explicit maintenance transactions). FORCE
makes them apply to the tables' owner too; superusers always bypass RLS, which is why the
store runs its statements as ``harness_app`` (NOLOGIN, not an owner, no BYPASSRLS) whenever the
login may assume it. The role is created when the migrating user may create roles; otherwise an
operator creates it (docs/operations.md, "Row-level security").

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "harness_app"
TABLES = ("memories", "memory_approvals", "runs", "cleanup_tasks", "ingest_requests")
ADMITTED = (
    "tenant = current_setting('harness.tenant', true) "
    "OR current_setting('harness.all_tenants', true) = 'on'"
)


def upgrade() -> None:
    # Roles are cluster-wide: another database of this server may have created it already.
    op.execute(f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                CREATE ROLE {APP_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;
            END IF;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN
                NULL;  -- created meanwhile by a migration of another database
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'role {APP_ROLE} not created (%); an operator creates it', SQLERRM;
        END $$
    """)
    tables = ", ".join(TABLES)
    op.execute(f"""
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                GRANT USAGE ON SCHEMA public TO {APP_ROLE};
                GRANT SELECT, INSERT, UPDATE, DELETE ON {tables}, store_meta TO {APP_ROLE};
                GRANT SELECT ON alembic_version TO {APP_ROLE};
                GRANT USAGE ON SEQUENCE memory_approvals_id_seq TO {APP_ROLE};
            END IF;
        END $$
    """)
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} USING ({ADMITTED}) WITH CHECK ({ADMITTED})"
        )


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    tables = ", ".join(TABLES)
    # The role stays: it is cluster-wide and other databases may use it.
    op.execute(f"""
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                REVOKE ALL ON {tables}, store_meta, alembic_version FROM {APP_ROLE};
                REVOKE ALL ON SEQUENCE memory_approvals_id_seq FROM {APP_ROLE};
            END IF;
        END $$
    """)
