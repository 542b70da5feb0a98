"""Lessons that learn: their teaching and outcome events, the runs' recalled ids, ``retired``.

``lesson_events`` holds one row per thing that happened to a lesson: each teaching (the task
that taught it, the feedback's wording), each outcome of a later run that placed it or should
have (``repeated``, ``missed``, ``misled``, ``clear``, ``recalled``), and each retirement
decision (who, why). A teaching or missed task is a **positive context** of the lesson and a
misled task a **negative context**: those rows carry the task's vector, which recall matches a
new task against; a teaching also keeps its feedback's vector, which a later feedback is
compared with (one rule, one lesson, however it is worded). ``runs.recalled`` lists the memories a run's recall placed. A lesson an admin
retires gets status ``retired`` (reversible). ``lesson_scores`` keeps, per lesson, the running
mean and spread of its content's cosine to the tasks of its scope that later runs brought (a
lesson's own scale: recall asks how far a task stands out for it). Row-level security as
migration 0003 sets it.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, UUID

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "harness_app"
TABLE = "lesson_events"
# The policy expression of migration 0003, for the same settings.
ADMITTED = (
    "tenant = current_setting('harness.tenant', true) "
    "OR current_setting('harness.all_tenants', true) = 'on'"
)
EVENTS = "'taught','repeated','missed','misled','clear','recalled','retired','restored'"
STATUSES = "'active','pending_approval','rejected','superseded','retired'"
OLD_STATUSES = "'active','pending_approval','rejected','superseded'"


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
        TABLE,
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("id", sa.BigInteger, sa.Identity(), nullable=False),
        sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
        sa.Column("event", sa.String(16), nullable=False),
        sa.Column("polarity", sa.String(8)),
        sa.Column("run_id", sa.String(200)),
        sa.Column("verdict_id", sa.String(200)),
        sa.Column("actor", sa.String(200)),
        sa.Column("task", sa.Text),
        sa.Column("feedback", sa.Text),
        sa.Column("embedding", Vector(dim)),
        sa.Column("feedback_embedding", Vector(dim)),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "id", name="pk_lesson_events"),
        sa.CheckConstraint(f"event IN ({EVENTS})", name="ck_lesson_events_event"),
        sa.CheckConstraint(
            "polarity IS NULL OR polarity IN ('positive','negative')",
            name="ck_lesson_events_polarity",
        ),
    )
    op.create_index(
        "ix_lesson_events_tenant_memory_id", TABLE, ["tenant", "memory_id", "event", "at"]
    )
    _tenant_table(TABLE)
    op.create_table(
        "lesson_scores",
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
        sa.Column("n", sa.Integer, nullable=False),
        sa.Column("mean", sa.Double, nullable=False),
        sa.Column("m2", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("tenant", "memory_id", name="pk_lesson_scores"),
    )
    _tenant_table("lesson_scores")
    op.add_column("runs", sa.Column("recalled", ARRAY(UUID(as_uuid=True))))
    op.drop_constraint("ck_memories_status", "memories", type_="check")
    op.create_check_constraint("ck_memories_status", "memories", f"status IN ({STATUSES})")


def downgrade() -> None:
    op.execute("UPDATE memories SET status = 'superseded' WHERE status = 'retired'")
    op.drop_constraint("ck_memories_status", "memories", type_="check")
    op.create_check_constraint("ck_memories_status", "memories", f"status IN ({OLD_STATUSES})")
    op.drop_column("runs", "recalled")
    op.drop_table("lesson_scores")
    op.drop_table(TABLE)
