"""Run records: which runs happened, with what outcome (provenance for memories)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from harness.identifiers import check_identifier, check_optional_identifier
from harness.memory.store import sql
from harness.memory.store.executors import Op, run_async, run_sync

__all__ = ["AsyncRunRecords", "RunRecords", "finish_run", "list_runs", "start_run"]

#: Opens one tenant-scoped transaction: ``transaction(action, tenant=...)``.
Transaction = Callable[..., AbstractContextManager[Connection]]
AsyncTransaction = Callable[..., AbstractAsyncContextManager[AsyncConnection]]


def start_run(
    *,
    run_id: str,
    tenant: str,
    user_id: str,
    workflow_id: str | None,
    session_id: str | None,
    at: datetime,
) -> Op[None]:
    """Insert a run as started (identifiers already checked)."""
    yield sql.insert_run(
        {
            "id": run_id,
            "tenant": tenant,
            "user_id": user_id,
            "workflow_id": workflow_id,
            "session_id": session_id,
            "status": "running",
            "attempts": 0,
            "started_at": at,
        }
    )


def finish_run(
    *, run_id: str, tenant: str, status: str, attempts: int, at: datetime, error: str | None
) -> Op[None]:
    """Record a run's outcome. Idempotent."""
    yield sql.finish_run(
        tenant,
        run_id,
        {"status": status, "attempts": attempts, "finished_at": at, "error": error},
    )


def list_runs(tenant: str, workflow_id: str | None) -> Op[list[dict[str, Any]]]:
    """Run records of a tenant (optionally one workflow), oldest first."""
    return [dict(r) for r in (yield sql.runs_of(tenant, workflow_id)).mappings()]


def _checked_start(
    tenant: str, user_id: str, workflow_id: str | None, session_id: str | None
) -> str:
    tenant = check_identifier(tenant, "tenant")
    check_identifier(user_id, "user_id")
    check_optional_identifier(workflow_id, "workflow_id")
    check_optional_identifier(session_id, "session_id")
    return tenant


class RunRecords:
    """Reads and writes the ``runs`` table, one transaction per call."""

    def __init__(self, transaction: Transaction):
        self._transaction = transaction

    def start(
        self,
        *,
        run_id: str,
        tenant: str,
        user_id: str,
        workflow_id: str | None,
        session_id: str | None,
        at: datetime,
    ) -> None:
        """Record a run as started. Side effect: one row inserted."""
        tenant = _checked_start(tenant, user_id, workflow_id, session_id)
        op = start_run(
            run_id=run_id,
            tenant=tenant,
            user_id=user_id,
            workflow_id=workflow_id,
            session_id=session_id,
            at=at,
        )
        with self._transaction("record run", tenant=tenant) as conn:
            run_sync(conn, op)

    def finish(
        self,
        *,
        run_id: str,
        tenant: str,
        status: str,
        attempts: int,
        at: datetime,
        error: str | None = None,
    ) -> None:
        """Record a run's outcome. Idempotent."""
        op = finish_run(
            run_id=run_id, tenant=tenant, status=status, attempts=attempts, at=at, error=error
        )
        with self._transaction("record run", tenant=tenant) as conn:
            run_sync(conn, op)

    def list(self, tenant: str, workflow_id: str | None = None) -> list[dict[str, Any]]:
        """Run records of a tenant (optionally one workflow), oldest first."""
        with self._transaction("list runs", tenant=tenant) as conn:
            return run_sync(conn, list_runs(tenant, workflow_id))


class AsyncRunRecords:
    """:class:`RunRecords` as coroutines, over the same operations."""

    def __init__(self, transaction: AsyncTransaction):
        self._transaction = transaction

    async def start(
        self,
        *,
        run_id: str,
        tenant: str,
        user_id: str,
        workflow_id: str | None,
        session_id: str | None,
        at: datetime,
    ) -> None:
        """Record a run as started. Side effect: one row inserted."""
        tenant = _checked_start(tenant, user_id, workflow_id, session_id)
        op = start_run(
            run_id=run_id,
            tenant=tenant,
            user_id=user_id,
            workflow_id=workflow_id,
            session_id=session_id,
            at=at,
        )
        async with self._transaction("record run", tenant=tenant) as conn:
            await run_async(conn, op)

    async def finish(
        self,
        *,
        run_id: str,
        tenant: str,
        status: str,
        attempts: int,
        at: datetime,
        error: str | None = None,
    ) -> None:
        """Record a run's outcome. Idempotent."""
        op = finish_run(
            run_id=run_id, tenant=tenant, status=status, attempts=attempts, at=at, error=error
        )
        async with self._transaction("record run", tenant=tenant) as conn:
            await run_async(conn, op)

    async def list(self, tenant: str, workflow_id: str | None = None) -> list[dict[str, Any]]:
        """Run records of a tenant (optionally one workflow), oldest first."""
        async with self._transaction("list runs", tenant=tenant) as conn:
            return await run_async(conn, list_runs(tenant, workflow_id))
