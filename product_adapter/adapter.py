"""Product lifecycle hooks: best-effort cleanup with a durable retry queue, and approvals.

The memory deletions are the store's public operations (``delete_workflow``,
``delete_scope``); the adapter owns only its cleanup queue (``cleanup_tasks``, see
:mod:`product_adapter.sql`) and the spool used while the database is unreachable.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from harness.clock import Clock
from harness.errors import InvalidInput, StoreUnavailable
from harness.identifiers import check_identifier
from harness.memory import MemoryStore
from harness.memory.domain.listing import CleanupTask
from harness.memory.domain.types import Memory
from product_adapter.spool import CleanupSpool

__all__ = ["Backoff", "ProductAdapter"]

log = logging.getLogger(__name__)

Target = Literal["workflow", "session", "user"]


@dataclass(frozen=True)
class Backoff:
    """How long a failed cleanup waits before its next try: ``first`` after the first
    failure, doubling per failure, never more than ``cap``. Pure."""

    first: timedelta = timedelta(seconds=30)
    cap: timedelta = timedelta(hours=1)

    def __post_init__(self) -> None:
        if self.first <= timedelta(0) or self.cap < self.first:
            raise InvalidInput("backoff: need 0 < first <= cap", fields=("backoff",))

    def after(self, failures: int) -> timedelta:
        """The wait after the ``failures``-th consecutive failure (1 = the first)."""
        doublings = min(max(failures - 1, 0), 32)  # 2**32 * first is past any cap
        return min(self.first * (1 << doublings), self.cap)


class ProductAdapter:
    """Maps product events to memory cleanup. Hooks never raise because of the memory store:
    a failed cleanup is queued durably (database table, or a spool file while the database is
    unreachable) and finished by :meth:`reconcile`; a cleanup that keeps failing backs off
    (``backoff``, timed by ``clock``) while the others go ahead."""

    def __init__(
        self,
        store: MemoryStore,
        spool_path: Path | str | None = None,
        *,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
    ):
        self.store = store
        self.clock = clock or store.clock
        self.backoff = backoff or Backoff()
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

    def user_deleted(self, tenant: str, user_id: str) -> bool:
        """Delete the user's user-scope memories and their conversation archive (text and
        vectors) in one transaction; queued when the store fails. Never raises because of
        the memory store."""
        return self._hook(tenant, "user", user_id)

    def _hook(self, tenant: str, target: Target, target_id: str) -> bool:
        check_identifier(tenant, "tenant")
        check_identifier(target_id, f"{target}_id")
        task = {
            "id": uuid.uuid4().hex,
            "tenant": tenant,
            "target": target,
            "target_id": target_id,
            "created_at": self.clock.now().isoformat(),
        }
        try:
            self.store.cleanup_now(tenant, target, target_id)
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
            self.store.queue_cleanup(_task(task))
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
            self.store.queue_cleanups([_task(entry) for entry in entries])

        return self.spool.drain(sink)

    def reconcile(self, limit: int | None = None) -> int:
        """Finish the queued cleanups that are due; safe from several processes at once
        (``SKIP LOCKED``).

        A cleanup that fails is recorded (attempts, last error) and deferred by the backoff;
        the others go ahead, and it is tried again by a later call once due. Returns how many
        cleanups this call finished (at most ``limit``). Raises ``StoreUnavailable`` when the
        database is unreachable (nothing is lost: the queue stays).
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidInput(
                f"limit: a whole number >= 0 or None, not {limit!r}", fields=("limit",)
            )
        self.drain_spool()
        finished = 0
        while limit is None or finished < limit:
            outcome = self.store.reconcile_next_cleanup(
                now=self.clock.now(), retry_delay=self.backoff.after
            )
            if outcome.task is None:
                break
            if outcome.error is not None:
                task = outcome.task
                log.warning(
                    "cleanup %s of %s %s/%s failed (attempt %d), retry at %s: %s",
                    task.id,
                    task.target,
                    task.tenant,
                    task.target_id,
                    outcome.attempts,
                    outcome.retry_at.isoformat() if outcome.retry_at else "?",
                    outcome.error,
                )
            finished += outcome.done
        return finished

    def pending_cleanups(self, tenant: str | None = None) -> int:
        """Cleanups not yet finished (backing-off ones included): queued in the database plus
        still in the spool."""
        if tenant is not None:
            check_identifier(tenant, "tenant")
        spooled = sum(1 for e in self.spool.entries() if tenant is None or e["tenant"] == tenant)
        try:
            queued = self.store.count_open_cleanups(tenant)
        except StoreUnavailable:
            queued = 0
            log.warning("database unreachable; counting spooled cleanups only")
        return spooled + queued

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


def _task(entry: dict[str, Any]) -> CleanupTask:
    """A spool entry (or a hook's task) as the store's value."""
    return CleanupTask(
        id=entry["id"],
        tenant=entry["tenant"],
        target=entry["target"],
        target_id=entry["target_id"],
        created_at=datetime.fromisoformat(entry["created_at"]),
    )
