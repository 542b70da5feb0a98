"""The cleanup queue: lifecycle cleanups that failed at once, finished later by reconcile.

Plans for both facades. A reconcile step claims the oldest due task (``SKIP LOCKED``, so
several processes share the queue), runs its cleanup inside a savepoint of the same
transaction and marks it done, or rolls the savepoint back, records the error and defers the
task: a failing head never holds up the tasks behind it, and a task is done exactly once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from harness.errors import HarnessError, InvalidInput
from harness.identifiers import check_identifier
from harness.memory.domain.listing import CleanupOutcome, CleanupTask
from harness.memory.domain.types import Scope
from harness.memory.store.base import StoreBase
from harness.memory.store.executors import OnConnection, Op, run_sync
from harness.memory.store.ops import conversations as conversation_ops
from harness.memory.store.ops import memories as memory_ops
from harness.memory.store.plans import Plan, in_transaction
from harness.memory.store.sql import cleanups as cleanup_sql

__all__ = [
    "TARGETS",
    "cleanup_now",
    "cleanup_op",
    "count_open_cleanups",
    "queue_cleanup",
    "queue_cleanups",
    "reconcile_next_cleanup",
]

#: What a cleanup deletes: a workflow (its memories and runs), a session (its memories) or a
#: user (their user-scope memories and conversation archive).
TARGETS = ("workflow", "session", "user")


def cleanup_op(tenant: str, target: str, target_id: str) -> Op[Any]:
    """The cleanup itself (idempotent), in the caller's transaction."""
    if target == "workflow":
        return memory_ops.delete_workflow(tenant, target_id)
    if target == "session":
        return memory_ops.delete_scope(tenant, Scope.SESSION, target_id)
    if target == "user":
        return _delete_user(tenant, target_id)
    raise InvalidInput(f"target: unknown cleanup target {target!r}", fields=("target",))


def _delete_user(tenant: str, user_id: str) -> Op[int]:
    yield from memory_ops.delete_scope(tenant, Scope.USER, user_id)
    return (yield from conversation_ops.delete_user_op(tenant, user_id))


def _row(task: CleanupTask) -> dict[str, Any]:
    return {
        "id": task.id,
        "tenant": task.tenant,
        "target": task.target,
        "target_id": task.target_id,
        "created_at": task.created_at,
    }


def _checked(task: CleanupTask) -> CleanupTask:
    check_identifier(task.tenant, "tenant")
    check_identifier(task.target_id, "target_id")
    if task.target not in TARGETS:
        raise InvalidInput(f"target: unknown cleanup target {task.target!r}", fields=("target",))
    return task


def cleanup_now(store: StoreBase, tenant: str, target: str, target_id: str) -> Plan[None]:
    """Run one cleanup at once, in one transaction of its tenant: a workflow's memories and
    run records, or a session's memories. Idempotent (a second call deletes nothing)."""
    task = _checked(CleanupTask("now", tenant, target, target_id, store.clock.now()))
    op = cleanup_op(task.tenant, task.target, task.target_id)
    yield from in_transaction(f"{target} cleanup", op, task.tenant)


def queue_cleanup(store: StoreBase, task: CleanupTask) -> Plan[None]:
    """Queue one cleanup under its tenant. Idempotent by task id."""
    task = _checked(task)
    yield from in_transaction("queue cleanup", _enqueue([task]), task.tenant)


def queue_cleanups(store: StoreBase, tasks: Sequence[CleanupTask]) -> Plan[None]:
    """Queue several cleanups of any tenants in one maintenance transaction (a spool
    drained). Idempotent by task id."""
    checked = [_checked(t) for t in tasks]
    yield from in_transaction("drain spool", _enqueue(checked), admits="everyone")


def _enqueue(tasks: Sequence[CleanupTask]) -> Op[None]:
    for task in tasks:
        yield cleanup_sql.enqueue(_row(task))


def reconcile_next_cleanup(
    store: StoreBase, *, now: datetime, retry_delay: Callable[[int], timedelta]
) -> Plan[CleanupOutcome]:
    """Finish the oldest cleanup of any tenant due at ``now``, or defer it by
    ``retry_delay(failures)`` when it fails (its error recorded). Safe from several processes
    at once; a task is finished exactly once."""
    op = _reconcile_one(now, retry_delay)
    return (yield from in_transaction("reconcile", op, admits="everyone"))


def _reconcile_one(now: datetime, retry_delay: Callable[[int], timedelta]) -> Op[CleanupOutcome]:
    row = None
    for tenant, _oldest in (yield cleanup_sql.due_tenants(now)).all():
        row = (yield cleanup_sql.claim_next(now, tenant)).mappings().first()
        if row is not None:
            break
    if row is None:
        return CleanupOutcome(None)
    task = CleanupTask(row["id"], row["tenant"], row["target"], row["target_id"], row["created_at"])
    attempts = int(row["attempts"]) + 1
    error = yield OnConnection(lambda conn: _in_savepoint(conn, task))
    if error is not None:
        retry_at = now + retry_delay(attempts)
        yield cleanup_sql.mark_failed(task.tenant, task.id, error, retry_at)
        return CleanupOutcome(task, attempts, error, retry_at)
    yield cleanup_sql.mark_done(task.tenant, task.id, now)
    return CleanupOutcome(task, attempts)


def _in_savepoint(conn: Connection, task: CleanupTask) -> str | None:
    """Run the task's cleanup in a savepoint; its error (rolled back) or None."""
    try:
        with conn.begin_nested():
            run_sync(conn, cleanup_op(task.tenant, task.target, task.target_id))
    except (DBAPIError, HarnessError) as exc:  # a failing cleanup must not hold up the others
        return str(exc)
    return None


def count_open_cleanups(store: StoreBase, tenant: str | None = None) -> Plan[int]:
    """Cleanups queued and not yet finished (backing-off ones included), of one tenant or of
    every tenant. Read-only."""
    if tenant is None:
        return (yield from in_transaction("count cleanups", _count(None), admits="everyone"))
    tenant = check_identifier(tenant, "tenant")
    return (yield from in_transaction("count cleanups", _count(tenant), tenant))


def _count(tenant: str | None) -> Op[int]:
    return sum(int(n) for _, n in (yield cleanup_sql.count_open(tenant)))
