"""The conversation archive: each user's conversations kept verbatim, searched per turn.

``conversations`` holds one row per (tenant, user, conversation id) with its first and last
turn times; ``conversation_turns`` one row per turn (seq, turn id, timestamp, role, text), its
vector inline like a memory's (migration 0007) under an HNSW index, and its full-text vector
(``simple`` + ``english``, as memories) under a GIN index. ``conversation_settings`` keeps a
tenant's settings by name (its retention in days). Tenant is the first column of every primary and foreign key (the
tables are distributed by tenant on Citus); row-level security and grants as migration 0009.
``memories`` gets the conversation and turn a memory was extracted from, and the cleanup
queue a ``user`` target (a deleted user's archive).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import TSVECTOR

revision: str = "0011"
# The lead re-chains this after 0010 at merge.
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "harness_app"
# The policy expression of migration 0003, for the same settings.
ADMITTED = (
    "tenant = current_setting('harness.tenant', true) "
    "OR current_setting('harness.all_tenants', true) = 'on'"
)
TSV = "to_tsvector('simple'::regconfig, text) || to_tsvector('english'::regconfig, text)"


def _vector_type() -> str:
    """The memories' vector type (a store may run a model of another dimension)."""
    row = op.get_bind().execute(
        sa.text(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
        )
    )
    return str(row.scalar_one())


def _tenant_table(table: str) -> None:
    """The app role's grants and the tenant policy, as migration 0003 sets them."""
    op.execute(f"""
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE};
            END IF;
        END $$
    """)
    op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON {table} USING ({ADMITTED}) WITH CHECK ({ADMITTED})"
    )


def upgrade() -> None:
    dim = int(_vector_type().removeprefix("vector(").removesuffix(")"))
    op.create_table(
        "conversations",
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("turns", sa.Integer, nullable=False),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "user_id", "conversation_id", name="pk_conversations"),
    )
    op.create_index("ix_conversations_tenant_last_at", "conversations", ["tenant", "last_at"])
    _tenant_table("conversations")
    op.create_table(
        "conversation_turns",
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("turn_id", sa.String(128), nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("text_sha256", sa.String(64), nullable=False),
        sa.Column("embedding", Vector(dim)),
        sa.Column("tsv", TSVECTOR, sa.Computed(TSV, persisted=True)),
        sa.PrimaryKeyConstraint(
            "tenant", "user_id", "conversation_id", "seq", name="pk_conversation_turns"
        ),
        sa.ForeignKeyConstraint(
            ["tenant", "user_id", "conversation_id"],
            ["conversations.tenant", "conversations.user_id", "conversations.conversation_id"],
            ondelete="CASCADE",
            name="fk_conversation_turns_conversation",
        ),
        sa.CheckConstraint(
            "role IN ('user','assistant','system','tool')", name="ck_conversation_turns_role"
        ),
    )
    op.create_index(
        "uq_conversation_turns_turn_id",
        "conversation_turns",
        ["tenant", "user_id", "conversation_id", "turn_id"],
        unique=True,
    )
    op.create_index(
        "ix_conversation_turns_embedding_hnsw",
        "conversation_turns",
        ["embedding"],
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.create_index(
        "ix_conversation_turns_tsv", "conversation_turns", ["tsv"], postgresql_using="gin"
    )
    # A turn's vector stays in its row, as a memory's does (migration 0007).
    op.execute("ALTER TABLE conversation_turns SET (toast_tuple_target = 4080)")
    _tenant_table("conversation_turns")
    op.create_table(
        "conversation_settings",
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.Integer),
        sa.PrimaryKeyConstraint("tenant", "name", name="pk_conversation_settings"),
        sa.CheckConstraint("name IN ('retention_days')", name="ck_conversation_settings_name"),
        sa.CheckConstraint("value IS NULL OR value > 0", name="ck_conversation_settings_value"),
    )
    _tenant_table("conversation_settings")
    op.add_column("memories", sa.Column("source_conversation_id", sa.String(128)))
    op.add_column("memories", sa.Column("source_turn_id", sa.String(128)))
    op.drop_constraint("ck_cleanup_tasks_target", "cleanup_tasks", type_="check")
    op.create_check_constraint(
        "ck_cleanup_tasks_target", "cleanup_tasks", "target IN ('workflow','session','user')"
    )


def downgrade() -> None:
    op.execute("DELETE FROM cleanup_tasks WHERE target = 'user'")
    op.drop_constraint("ck_cleanup_tasks_target", "cleanup_tasks", type_="check")
    op.create_check_constraint(
        "ck_cleanup_tasks_target", "cleanup_tasks", "target IN ('workflow','session')"
    )
    op.drop_column("memories", "source_turn_id")
    op.drop_column("memories", "source_conversation_id")
    op.drop_table("conversation_settings")
    op.drop_table("conversation_turns")
    op.drop_table("conversations")
