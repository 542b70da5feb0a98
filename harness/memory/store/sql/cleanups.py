"""The cleanup task queue (the product adapter's lifecycle hooks, retried by reconcile)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Insert, Select, Update, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from harness.memory.store.sql.schema import cleanup_tasks

__all__ = ["claim_next", "count_open", "due_tenants", "enqueue", "mark_done", "mark_failed"]

c = cleanup_tasks.c


def enqueue(row: dict[str, Any]) -> Insert:
    """Insert a task; a task id seen before is ignored (spool drains are idempotent)."""
    return (
        pg_insert(cleanup_tasks)
        .values(**row)
        .on_conflict_do_nothing(index_elements=["tenant", "id"])
    )


def claim_next(now: datetime, tenant: str | None = None) -> Select[Any]:
    """The oldest open task due at ``now`` (not backing off) that no other process holds;
    locked until the transaction ends. Without ``tenant`` it scans every tenant (the reconcile
    sweep; multi-shard on Citus)."""
    stmt = select(cleanup_tasks)
    if tenant is not None:
        stmt = stmt.where(c.tenant == tenant)
    stmt = stmt.where(
        c.done_at.is_(None), or_(c.next_attempt_at.is_(None), c.next_attempt_at <= now)
    )
    return stmt.order_by(c.created_at, c.id).limit(1).with_for_update(skip_locked=True)


def due_tenants(now: datetime) -> Select[Any]:
    """The tenants with an open task due at ``now``, the one with the oldest such task first
    (no lock: the reconcile sweep then claims per tenant with :func:`claim_next`, a
    single-shard ``FOR UPDATE`` that Citus can run, where a lock across shards it cannot)."""
    due = select(c.tenant, func.min(c.created_at).label("oldest")).where(
        c.done_at.is_(None), or_(c.next_attempt_at.is_(None), c.next_attempt_at <= now)
    )
    return due.group_by(c.tenant).order_by("oldest", c.tenant)


def mark_done(tenant: str, task_id: str, at: datetime) -> Update:
    return (
        update(cleanup_tasks)
        .where(c.tenant == tenant, c.id == task_id)
        .values(done_at=at, attempts=c.attempts + 1)
    )


def mark_failed(tenant: str, task_id: str, error: str, retry_at: datetime) -> Update:
    """Count a failed attempt, keep its error, and defer the task until ``retry_at``."""
    return (
        update(cleanup_tasks)
        .where(c.tenant == tenant, c.id == task_id)
        .values(attempts=c.attempts + 1, last_error=error[:2000], next_attempt_at=retry_at)
    )


def count_open(tenant: str | None = None) -> Select[Any]:
    stmt = select(c.tenant, func.count())
    if tenant is not None:
        stmt = stmt.where(c.tenant == tenant)
    return stmt.where(c.done_at.is_(None)).group_by(c.tenant)
