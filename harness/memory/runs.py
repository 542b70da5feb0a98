"""Run records: which runs happened, with what outcome (provenance for memories)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.identifiers import check_identifier, check_optional_identifier
from harness.memory import sql

if TYPE_CHECKING:
    from harness.memory.store import MemoryStore

__all__ = ["RunRecords"]


class RunRecords:
    """Reads and writes the ``runs`` table through a store's connection pool."""

    def __init__(self, store: MemoryStore):
        self._store = store

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
        tenant = check_identifier(tenant, "tenant")
        check_identifier(user_id, "user_id")
        check_optional_identifier(workflow_id, "workflow_id")
        check_optional_identifier(session_id, "session_id")
        with self._store.transaction("record run", tenant=tenant) as conn:
            conn.execute(
                sql.insert_run(
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
            )

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
        with self._store.transaction("record run", tenant=tenant) as conn:
            conn.execute(
                sql.finish_run(
                    tenant,
                    run_id,
                    {"status": status, "attempts": attempts, "finished_at": at, "error": error},
                )
            )

    def list(self, tenant: str, workflow_id: str | None = None) -> list[dict[str, Any]]:
        """Run records of a tenant (optionally one workflow), oldest first."""
        with self._store.transaction("list runs", tenant=tenant) as conn:
            return [dict(r) for r in conn.execute(sql.runs_of(tenant, workflow_id)).mappings()]
