"""Shard-ready keys: every primary key leads with ``tenant`` (the id-only keys go).

A distributed PostgreSQL sharded by tenant (Citus) requires every primary key and unique index
of a distributed table to contain the distribution column; with these keys the four tenant
tables can be distributed by ``tenant`` as they are (docs/scale-out.md). ``store_meta`` holds
no tenant data: it stays a reference table. Ids stay globally unique (UUIDs, a sequence, run
and task ids made by the store); lookups by id always name the tenant too.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("memories", "memory_approvals", "runs", "cleanup_tasks")


def upgrade() -> None:
    for table in TABLES:
        op.drop_constraint(f"pk_{table}", table, type_="primary")
        op.create_primary_key(f"pk_{table}", table, ["tenant", "id"])


def downgrade() -> None:
    for table in TABLES:
        op.drop_constraint(f"pk_{table}", table, type_="primary")
        op.create_primary_key(f"pk_{table}", table, ["id"])
