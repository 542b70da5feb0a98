"""Initial schema: memories, approval audit, runs, cleanup tasks, store metadata.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TSV_EXPR = (
    "setweight(to_tsvector('simple'::regconfig, content), 'A') || "
    "setweight(to_tsvector('english'::regconfig, content), 'A') || "
    "setweight(to_tsvector('simple'::regconfig, coalesce(context, '')), 'B') || "
    "setweight(to_tsvector('english'::regconfig, coalesce(context, '')), 'B')"
)


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "memories",
        sa.Column("id", postgresql.UUID(as_uuid=True), primary_key=True),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("scope_id", sa.String(200), nullable=False, server_default=""),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("memory_key", sa.String(200)),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("context", sa.Text),
        sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("run_id", sa.String(200)),
        sa.Column("verdict_id", sa.String(200)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True)),
        sa.Column("supersedes", postgresql.UUID(as_uuid=True)),
        sa.Column("superseded_by", postgresql.UUID(as_uuid=True)),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("embedding", Vector(384)),
        sa.Column("context_embedding", Vector(384)),
        sa.Column("tsv", postgresql.TSVECTOR, sa.Computed(TSV_EXPR, persisted=True)),
        sa.Column("approved_by", sa.String(200)),
        sa.Column("approved_at", sa.DateTime(timezone=True)),
        sa.Column("approval_decision", sa.String(16)),
        sa.Column("approval_reason", sa.Text),
        sa.CheckConstraint(
            "scope IN ('session','workflow','user','platform')", name="ck_memories_scope"
        ),
        sa.CheckConstraint(
            "kind IN ('constraint','preference','lesson','fact','decision')",
            name="ck_memories_kind",
        ),
        sa.CheckConstraint(
            "status IN ('active','pending_approval','rejected','superseded')",
            name="ck_memories_status",
        ),
        sa.CheckConstraint(
            "origin IN ('verdict','completion','admin','api')", name="ck_memories_origin"
        ),
        sa.CheckConstraint("(scope = 'platform') = (scope_id = '')", name="ck_memories_scope_id"),
        sa.PrimaryKeyConstraint("id", name="pk_memories"),
    )
    op.create_index(
        "ix_memories_readable", "memories", ["tenant", "scope", "scope_id", "status", "kind"]
    )
    op.create_index(
        "uq_memories_active_key",
        "memories",
        ["tenant", "scope", "scope_id", "memory_key"],
        unique=True,
        postgresql_where=sa.text("status = 'active' AND memory_key IS NOT NULL"),
    )
    op.create_index(
        "ix_memories_history",
        "memories",
        ["tenant", "scope", "scope_id", "memory_key", "created_at"],
    )
    op.create_index(
        "ix_memories_fingerprint", "memories", ["tenant", "scope", "scope_id", "fingerprint"]
    )
    op.create_index(
        "ix_memories_expires",
        "memories",
        ["tenant", "expires_at"],
        postgresql_where=sa.text("expires_at IS NOT NULL"),
    )
    op.create_index(
        "ix_memories_pending",
        "memories",
        ["tenant", "created_at"],
        postgresql_where=sa.text("status = 'pending_approval'"),
    )
    op.create_index(
        "ix_memories_embedding_hnsw",
        "memories",
        ["embedding"],
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.create_index("ix_memories_tsv", "memories", ["tsv"], postgresql_using="gin")
    op.create_index(
        "ix_memories_with_context",
        "memories",
        ["tenant", "scope", "scope_id"],
        postgresql_where=sa.text("context_embedding IS NOT NULL"),
    )

    op.create_table(
        "memory_approvals",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("memory_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "decision IN ('approved','rejected')", name="ck_memory_approvals_decision"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_memory_approvals"),
    )
    op.create_index(
        "ix_memory_approvals_tenant_decided", "memory_approvals", ["tenant", "decided_at"]
    )

    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("workflow_id", sa.String(200)),
        sa.Column("session_id", sa.String(200)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("error", sa.Text),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
    )
    op.create_index("ix_runs_tenant_workflow", "runs", ["tenant", "workflow_id"])

    op.create_table(
        "cleanup_tasks",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("target", sa.String(16), nullable=False),
        sa.Column("target_id", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_error", sa.Text),
        sa.Column("done_at", sa.DateTime(timezone=True)),
        sa.CheckConstraint("target IN ('workflow','session')", name="ck_cleanup_tasks_target"),
        sa.PrimaryKeyConstraint("id", name="pk_cleanup_tasks"),
    )
    op.create_index("ix_cleanup_tasks_tenant_open", "cleanup_tasks", ["tenant", "done_at"])

    op.create_table(
        "store_meta",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_store_meta"),
    )


def downgrade() -> None:
    op.drop_table("store_meta")
    op.drop_table("cleanup_tasks")
    op.drop_table("runs")
    op.drop_table("memory_approvals")
    op.drop_table("memories")
    # The extension stays: other schemas in the database may use it.
