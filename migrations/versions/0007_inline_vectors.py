"""Keep a memory's vectors in its row: ``toast_tuple_target = 4080`` on ``memories``.

A 384-dimension vector is 1,544 bytes and pgvector stores it EXTERNAL, so a row a little over
PostgreSQL's default 2,032-byte target (a short fact with its full-text vector is ~2,000 bytes;
a lesson with a context vector ~3,300) had its vector moved out of line: every row an exact
recall ranks then cost a TOAST index lookup and a TOAST page besides its heap page (at 100k
memories, 2,000 per user: 10,222 buffers for 2,002 rows). With a 4,080-byte target such rows
stay whole (two or more rows per page). Rows written from now on are stored this way; existing
rows move when rewritten (``VACUUM FULL memories`` or pg_repack in a quiet hour; BENCHMARKS.md
section 11).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE memories SET (toast_tuple_target = 4080)")


def downgrade() -> None:
    op.execute("ALTER TABLE memories RESET (toast_tuple_target)")
