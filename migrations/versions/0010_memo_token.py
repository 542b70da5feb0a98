"""RecallSet memos are bound to the bearer token that opened them, not only to its caller.

``mcp_memos.token_sha256`` holds the MCP server's SHA-256 of the token's identity (never the
token, nor the digest the token file keeps), so a second token of the same tenant and user,
or anyone after the first token is revoked, finds no memo. Rows from before have no token:
they are deleted (memos are scratch state; such a handle answers "not found", as after a
restart of a one-process server). Grants and row-level security stay as migration 0008 set
them (a new column inherits both).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "mcp_memos"


def upgrade() -> None:
    # The lock first: a server of the previous version inserting between the delete and the
    # new NOT NULL column would make the column fail on its row.
    op.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
    op.execute(f"DELETE FROM {TABLE}")
    op.add_column(TABLE, sa.Column("token_sha256", sa.String(64), nullable=False))


def downgrade() -> None:
    # The memos of every token of a caller become that caller's again: end them instead.
    op.execute(f"DELETE FROM {TABLE}")
    op.drop_column(TABLE, "token_sha256")
