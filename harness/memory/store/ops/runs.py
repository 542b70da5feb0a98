"""Run records: which runs happened, with what outcome (provenance for memories).

The statements' operations, and the three plans ``store.runs`` binds on both facades.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from harness.errors import InvalidInput
from harness.identifiers import check_identifier, check_optional_identifier, check_text
from harness.memory.store import sql
from harness.memory.store.checks import as_uuid, check_now, check_whole
from harness.memory.store.executors import Op
from harness.memory.store.plans import Plan, in_transaction

# What a run record's status may be (the run flow writes these).
RUN_STATUSES = frozenset({"running", "accepted", "rejected", "failed"})

__all__ = ["RUN_STATUSES", "finish", "finish_run", "list_of", "list_runs", "start", "start_run"]


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
    *,
    run_id: str,
    tenant: str,
    status: str,
    attempts: int,
    at: datetime,
    error: str | None,
    recalled: Sequence[uuid.UUID] | None = None,
) -> Op[None]:
    """Record a run's outcome (and the memories its recall placed). Idempotent."""
    values: dict[str, Any] = {
        "status": status,
        "attempts": attempts,
        "finished_at": at,
        "error": error,
    }
    if recalled is not None:
        values["recalled"] = list(recalled)
    yield sql.finish_run(tenant, run_id, values)


def list_runs(tenant: str, workflow_id: str | None) -> Op[list[dict[str, Any]]]:
    """Run records of a tenant (optionally one workflow), oldest first."""
    return [dict(r) for r in (yield sql.runs_of(tenant, workflow_id)).mappings()]


def start(
    *,
    run_id: str,
    tenant: str,
    user_id: str,
    workflow_id: str | None,
    session_id: str | None,
    at: datetime,
) -> Plan[None]:
    """Record a run as started. Side effect: one row inserted."""
    _check_run(run_id, at)
    tenant = check_identifier(tenant, "tenant")
    check_identifier(user_id, "user_id")
    check_optional_identifier(workflow_id, "workflow_id")
    check_optional_identifier(session_id, "session_id")
    op = start_run(
        run_id=run_id,
        tenant=tenant,
        user_id=user_id,
        workflow_id=workflow_id,
        session_id=session_id,
        at=at,
    )
    yield from in_transaction("record run", op, tenant)


def finish(
    *,
    run_id: str,
    tenant: str,
    status: str,
    attempts: int,
    at: datetime,
    error: str | None = None,
    recalled: Sequence[uuid.UUID | str] | None = None,
) -> Plan[None]:
    """Record a run's outcome and (``recalled``) the memories its recall placed. Idempotent."""
    _check_run(run_id, at)
    tenant = check_identifier(tenant, "tenant")
    if status not in RUN_STATUSES:
        raise InvalidInput(
            f"status: one of {', '.join(sorted(RUN_STATUSES))}, not {status!r}",
            fields=("status",),
        )
    check_whole(attempts, "attempts", 0, 2_147_483_647)
    if error is not None:
        check_text(error, "error")
    if recalled is not None and not isinstance(recalled, (list, tuple)):
        raise InvalidInput("recalled: a list of memory ids or None", fields=("recalled",))
    ids = None if recalled is None else [as_uuid(r) for r in recalled]
    op = finish_run(
        run_id=run_id,
        tenant=tenant,
        status=status,
        attempts=attempts,
        at=at,
        error=error,
        recalled=ids,
    )
    yield from in_transaction("record run", op, tenant)


def _check_run(run_id: Any, at: Any) -> None:
    check_identifier(run_id, "run_id")
    if at is None:
        raise InvalidInput("at: a timezone-aware datetime, not None", fields=("at",))
    check_now(at, "at")


def list_of(tenant: str, workflow_id: str | None = None) -> Plan[list[dict[str, Any]]]:
    """Run records of a tenant (optionally one workflow), oldest first."""
    tenant = check_identifier(tenant, "tenant")
    check_optional_identifier(workflow_id, "workflow_id")
    return (yield from in_transaction("list runs", list_runs(tenant, workflow_id), tenant))
