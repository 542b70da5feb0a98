"""Statements of run records and ingest idempotency records."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Delete,
    Insert,
    Select,
    TextClause,
    Update,
    delete,
    insert,
    select,
    text,
    update,
)

from harness.memory.store.sql.schema import ingest_requests, runs

__all__ = [
    "delete_runs_of_workflow",
    "finish_run",
    "idempotency_record",
    "insert_idempotency_record",
    "insert_run",
    "lock_idempotency",
    "runs_of",
]


# --- ingest idempotency ------------------------------------------------------------------------


def lock_idempotency(tenant: str, key: str) -> TextClause:
    """Transaction-level lock serialising requests that share an idempotency key."""
    return text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 1))").bindparams(
        k=f"{tenant}\x1f{key}"
    )


def idempotency_record(tenant: str, key: str) -> Select[Any]:
    r = ingest_requests.c
    return select(ingest_requests).where(r.tenant == tenant, r.idempotency_key == key)


def insert_idempotency_record(row: dict[str, Any]) -> Insert:
    return insert(ingest_requests).values(**row)


# --- run records ------------------------------------------------------------------------------


def insert_run(row: dict[str, Any]) -> Insert:
    return insert(runs).values(**row)


def finish_run(tenant: str, run_id: str, values: dict[str, Any]) -> Update:
    return update(runs).where(runs.c.tenant == tenant, runs.c.id == run_id).values(**values)


def runs_of(tenant: str, workflow_id: str | None = None) -> Select[Any]:
    stmt = select(runs).where(runs.c.tenant == tenant)
    if workflow_id is not None:
        stmt = stmt.where(runs.c.workflow_id == workflow_id)
    return stmt.order_by(runs.c.started_at, runs.c.id)


def delete_runs_of_workflow(tenant: str, workflow_id: str) -> Delete:
    return delete(runs).where(runs.c.tenant == tenant, runs.c.workflow_id == workflow_id)
