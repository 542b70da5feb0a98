"""Product lifecycle hooks: best-effort cleanup with a durable retry queue, and approvals."""

from __future__ import annotations

import contextlib
import logging
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from sqlalchemy.engine import Connection

from harness.errors import HarnessError, InvalidInput
from harness.identifiers import check_identifier
from harness.memory import sql as memory_sql
from harness.memory.store import MemoryStore
from harness.memory.types import Memory, Scope
from product_adapter import sql
from product_adapter.spool import CleanupSpool

__all__ = ["ProductAdapter"]

log = logging.getLogger(__name__)

Target = Literal["workflow", "session"]


class ProductAdapter:
    """Maps product events to memory cleanup. Hooks never raise because of the memory store:
    a failed cleanup is queued durably (database table, or a spool file while the database is
    unreachable) and finished by :meth:`reconcile`."""

    def __init__(self, store: MemoryStore, spool_path: Path | str | None = None):
        self.store = store
        self.spool = CleanupSpool(
            Path(spool_path) if spool_path else store.settings.home / "cleanup-spool.jsonl"
        )

    # --- lifecycle hooks -----------------------------------------------------------------------

    def workflow_deleted(self, tenant: str, workflow_id: str) -> bool:
        """Delete the workflow's memories and run records in one transaction.

        Returns True when done now, False when queued for :meth:`reconcile`. Never raises
        because of the memory store.
        """
        return self._hook(tenant, "workflow", workflow_id)

    def session_ended(self, tenant: str, session_id: str) -> bool:
        """Delete the session's memories in one transaction; queued when the store fails."""
        return self._hook(tenant, "session", session_id)

    def _hook(self, tenant: str, target: Target, target_id: str) -> bool:
        check_identifier(tenant, "tenant")
        check_identifier(target_id, f"{target}_id")
        task = {
            "id": uuid.uuid4().hex,
            "tenant": tenant,
            "target": target,
            "target_id": target_id,
            "created_at": self.store.clock.now().isoformat(),
        }
        try:
            with self.store.transaction(f"{target} cleanup", tenant=tenant) as conn:
                _cleanup(conn, tenant, target, target_id)
            return True
        except Exception as exc:  # best-effort: the product's own operation must go on
            log.warning(
                "memory cleanup of %s %s/%s failed, queued for reconcile: %s",
                target,
                tenant,
                target_id,
                exc,
            )
        self._queue(task)
        return False

    def _queue(self, task: dict[str, Any]) -> None:
        try:
            with self.store.transaction("queue cleanup", tenant=task["tenant"]) as conn:
                conn.execute(sql.enqueue(_row(task)))
            return
        except Exception as exc:  # database still down: the spool keeps it across restarts
            log.info("cleanup queue unreachable (%s); spooling to %s", exc, self.spool.path)
        try:
            self.spool.append(task)
        except OSError as exc:
            log.error("cleanup could not be queued anywhere (%s): %s", exc, task)

    # --- reconcile -----------------------------------------------------------------------------

    def drain_spool(self) -> int:
        """Move spooled cleanups into the database queue. Returns how many moved."""

        def sink(entries: list[dict[str, Any]]) -> None:
            with self.store.maintenance("drain spool") as conn:
                for entry in entries:
                    conn.execute(sql.enqueue(_row(entry)))

        return self.spool.drain(sink)

    def reconcile(self, limit: int | None = None) -> int:
        """Finish queued cleanups; safe from several processes at once (``SKIP LOCKED``).

        Returns how many cleanups this call finished. Raises ``StoreUnavailable`` when the
        database is still unreachable (nothing is lost: the queue stays).
        """
        self.drain_spool()
        finished = 0
        while limit is None or finished < limit:
            if not self._finish_one():
                break
            finished += 1
        return finished

    def _finish_one(self) -> bool:
        with self.store.maintenance("reconcile") as conn:
            task = conn.execute(sql.claim_next()).mappings().first()
            if task is None:
                return False
            _cleanup(conn, task["tenant"], task["target"], task["target_id"])
            conn.execute(sql.mark_done(task["tenant"], task["id"], self.store.clock.now()))
        return True

    def pending_cleanups(self, tenant: str | None = None) -> int:
        """Cleanups not yet finished: queued in the database plus still in the spool."""
        spooled = sum(1 for e in self.spool.entries() if tenant is None or e["tenant"] == tenant)
        try:
            with self._count_transaction(tenant) as conn:
                queued = sum(int(n) for _, n in conn.execute(sql.count_open(tenant)))
        except HarnessError:
            queued = 0
            log.warning("database unreachable; counting spooled cleanups only")
        return spooled + queued

    def _count_transaction(
        self, tenant: str | None
    ) -> contextlib.AbstractContextManager[Connection]:
        if tenant is None:
            return self.store.maintenance("count cleanups")
        return self.store.transaction("count cleanups", tenant=check_identifier(tenant, "tenant"))

    def spooled_by_tenant(self) -> dict[str, int]:
        """Spooled (not yet in the database) cleanups per tenant."""
        counts: dict[str, int] = {}
        for entry in self.spool.entries():
            counts[entry["tenant"]] = counts.get(entry["tenant"], 0) + 1
        return counts

    # --- approvals -----------------------------------------------------------------------------

    def pending_approvals(self, tenant: str) -> list[Memory]:
        """Platform memories waiting for an admin."""
        return self.store.pending(tenant)

    def approve(self, memory_id: uuid.UUID | str, approver: str, *, tenant: str) -> Memory:
        """Approve the tenant's pending memory (audited). Unknown ids, ids of another tenant
        (``MemoryNotFound``) and non-pending items raise typed errors."""
        return self.store.approve(memory_id, approver, tenant=tenant)

    def reject(
        self, memory_id: uuid.UUID | str, approver: str, reason: str, *, tenant: str
    ) -> Memory:
        """Reject the tenant's pending memory with a reason (audited)."""
        return self.store.reject(memory_id, approver, reason, tenant=tenant)

    def audit(self, tenant: str) -> list[dict[str, Any]]:
        """Every approval decision of the tenant."""
        return self.store.audit(tenant)


def _row(task: dict[str, Any]) -> dict[str, Any]:
    return {**task, "created_at": datetime.fromisoformat(task["created_at"])}


def _cleanup(conn: Connection, tenant: str, target: str, target_id: str) -> None:
    if target == "workflow":
        conn.execute(memory_sql.delete_scope(tenant, Scope.WORKFLOW, target_id))
        conn.execute(memory_sql.delete_runs_of_workflow(tenant, target_id))
    elif target == "session":
        conn.execute(memory_sql.delete_scope(tenant, Scope.SESSION, target_id))
    else:
        raise InvalidInput(f"unknown cleanup target {target!r}", fields=("target",))
