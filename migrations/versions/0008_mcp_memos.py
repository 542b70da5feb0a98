"""RecallSet memos of the MCP server, shared by its worker processes.

UNLOGGED: memos are scratch state that is never stored long-term, so the table is not written
to the WAL, not replicated, and emptied after a crash (a memo then answers "not found", as it
would after a restart of a one-process server). Only the SHA-256 of a handle is stored.
Row-level security as migration 0003 sets it for every tenant table.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "harness_app"
TABLE = "mcp_memos"
# The policy expression of migration 0003, for the same settings.
ADMITTED = (
    "tenant = current_setting('harness.tenant', true) "
    "OR current_setting('harness.all_tenants', true) = 'on'"
)


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("handle_sha256", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("workflow_id", sa.String(200), nullable=False),
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("state", sa.Text),
        sa.Column("last_used", sa.Double, nullable=False),
        sa.Column("touched", sa.BigInteger, nullable=False),
        sa.Column("ended_why", sa.Text),
        sa.Column("ended_at", sa.Double),
        sa.PrimaryKeyConstraint("tenant", "handle_sha256", name="pk_mcp_memos"),
        prefixes=["UNLOGGED"],
    )
    op.create_index(
        "ix_mcp_memos_caller",
        TABLE,
        ["tenant", "user_id", "workflow_id", "session_id", "last_used"],
    )
    op.create_index("ix_mcp_memos_tenant_last_used", TABLE, ["tenant", "last_used"])
    op.execute(f"""
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                GRANT SELECT, INSERT, UPDATE, DELETE ON {TABLE} TO {APP_ROLE};
            END IF;
        END $$
    """)
    op.execute(f"ALTER TABLE {TABLE} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {TABLE} FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON {TABLE} USING ({ADMITTED}) WITH CHECK ({ADMITTED})"
    )


def downgrade() -> None:
    # Dropping the table drops its policy, indexes and grants with it; the role stays (0003).
    op.drop_table(TABLE)
