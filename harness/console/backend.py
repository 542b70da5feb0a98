"""Every store call the console makes, each checked against the admin's tenant.

This is the one place to switch to the store's ``tenant=`` keyword API (SPEC section 11) once
it lands: until then the tenant check is done here (fetch, compare, "not found" otherwise), so
an id of another tenant is indistinguishable from an id that does not exist.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from harness.errors import InvalidInput, MemoryNotFound
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import Memory, RecallRequest, Scope
from harness.memory.store.migrate import current_revision
from harness.memory.store.ops.vectors import stored_model
from harness.memory.store.rows import memory_from_row
from harness.memory.store.sql import console as csql
from harness.memory.store.sync import MemoryStore
from product_adapter import ProductAdapter

__all__ = [
    "ConsoleBackend",
    "Cursor",
    "PendingItem",
    "StatusReport",
    "format_cursor",
    "parse_cursor",
    "parse_memory_id",
]

Cursor = tuple[datetime, uuid.UUID]


def parse_memory_id(raw: str) -> uuid.UUID:
    """An id from a URL or form; a malformed one is simply "not found"."""
    try:
        return uuid.UUID(raw.strip())
    except (ValueError, AttributeError):
        raise MemoryNotFound(f"no memory with id {raw!r}") from None


def format_cursor(cursor: Cursor) -> str:
    """``<iso timestamp>~<uuid>``: opaque to the admin, stable in a URL."""
    return f"{cursor[0].isoformat()}~{cursor[1]}"


def parse_cursor(raw: str | None, field_name: str) -> Cursor | None:
    """Inverse of :func:`format_cursor`; a malformed cursor is ``InvalidInput``."""
    if not raw:
        return None
    stamp, sep, ident = raw.partition("~")
    try:
        if not sep:
            raise ValueError("no separator")
        at = datetime.fromisoformat(stamp)
        if at.tzinfo is None:
            raise ValueError("naive timestamp")
        return at, uuid.UUID(ident)
    except ValueError:
        raise InvalidInput(
            f"{field_name}: {raw!r} is not a page cursor", fields=(field_name,)
        ) from None


@dataclass(frozen=True)
class PendingItem:
    """A pending memory with what it would replace and its nearest active neighbours."""

    memory: Memory
    would_supersede: Memory | None
    similar: list[tuple[Memory, float]]


@dataclass(frozen=True)
class StatusReport:
    """What the status page shows for the admin's tenants."""

    counts: list[dict[str, Any]]
    totals: dict[str, dict[str, int]]
    cleanups: dict[str, int]
    per_day: dict[str, list[dict[str, Any]]]
    embedder_mode: str
    embed_model: str | None
    embed_dim: int | None
    stored_model: str | None
    lexical_reason: str | None
    revision: str | None
    days: list[datetime] = field(default_factory=list)


class ConsoleBackend:
    """The console's view of one :class:`MemoryStore`; every method names the tenant."""

    def __init__(self, store: MemoryStore, *, similar_limit: int = 3):
        self.store = store
        self.similar_limit = similar_limit

    # --- single memories -----------------------------------------------------------------------

    def memory(self, tenant: str, memory_id: uuid.UUID) -> Memory:
        """The memory, when it belongs to ``tenant``; otherwise ``MemoryNotFound``."""
        found = self.store.get(memory_id, tenant=tenant)
        if found is None or found.tenant != tenant:
            raise MemoryNotFound(f"no memory with id {memory_id}")
        return found

    def approve(self, tenant: str, memory_id: uuid.UUID, admin: str) -> Memory:
        """Approve a pending memory of ``tenant``; audited under ``admin``."""
        self.memory(tenant, memory_id)
        return self.store.approve(memory_id, approver=admin, tenant=tenant)

    def reject(self, tenant: str, memory_id: uuid.UUID, admin: str, reason: str) -> Memory:
        """Reject a pending memory of ``tenant`` with a reason; audited under ``admin``."""
        if not reason.strip():
            raise InvalidInput("reason: a rejection needs a reason", fields=("reason",))
        self.memory(tenant, memory_id)
        return self.store.reject(memory_id, approver=admin, reason=reason, tenant=tenant)

    def forget(self, tenant: str, memory_id: uuid.UUID) -> None:
        """Delete one memory of ``tenant`` for good."""
        self.memory(tenant, memory_id)
        if not self.store.forget(memory_id, tenant=tenant):
            raise MemoryNotFound(f"no memory with id {memory_id}")

    def history(self, memory: Memory) -> list[Memory]:
        """Every version of the memory's key, oldest first; a keyless memory is its own history."""
        if memory.key is None:
            return [memory]
        return self.store.history(memory.tenant, memory.scope, memory.scope_id, memory.key)

    def audit_of(self, tenant: str, memory_id: uuid.UUID) -> list[dict[str, Any]]:
        """Approval decisions recorded for one memory of ``tenant``."""
        with self.store.transaction("console audit", tenant=tenant) as conn:
            rows = conn.execute(csql.audit_of_memory(tenant, memory_id)).mappings().all()
        return [dict(r) for r in rows]

    # --- listings ------------------------------------------------------------------------------

    def pending(
        self, tenant: str, *, after: Cursor | None, limit: int
    ) -> tuple[list[PendingItem], Cursor | None]:
        """One page of the approval queue, oldest first, and the cursor of the next page."""
        with self.store.transaction("console pending", tenant=tenant) as conn:
            rows = conn.execute(csql.pending_page(tenant, after=after, limit=limit + 1)).mappings()
            page = [memory_from_row(r) for r in rows.all()]
            more = len(page) > limit
            page = page[:limit]
            similar: dict[uuid.UUID, list[tuple[Memory, float]]] = {}
            groups: dict[tuple[Scope, str], list[uuid.UUID]] = {}
            for mem in page:
                if mem.has_embedding:
                    groups.setdefault((mem.scope, mem.scope_id), []).append(mem.id)
            for (scope, scope_id), ids in groups.items():
                for r in conn.execute(
                    csql.similar_active(tenant, ids, scope, scope_id, self.similar_limit)
                ).mappings():
                    similar.setdefault(r["probe_id"], []).append(
                        (memory_from_row(r), float(r["similarity"]))
                    )
            items = []
            for mem in page:
                replaced = None
                if mem.key is not None:
                    row = (
                        conn.execute(
                            csql.active_for_key_readonly(tenant, mem.scope, mem.scope_id, mem.key)
                        )
                        .mappings()
                        .first()
                    )
                    replaced = memory_from_row(row) if row else None
                items.append(PendingItem(mem, replaced, similar.get(mem.id, [])))
        nxt = (page[-1].created_at, page[-1].id) if more and page else None
        return items, nxt

    def browse(
        self, tenant: str, flt: csql.BrowseFilter, *, before: Cursor | None, limit: int
    ) -> tuple[list[Memory], Cursor | None]:
        """One page of the tenant's memories, newest first, and the cursor of the next page."""
        with self.store.transaction("console browse", tenant=tenant) as conn:
            rows = conn.execute(csql.browse(tenant, flt, before=before, limit=limit + 1))
            page = [memory_from_row(r) for r in rows.mappings().all()]
        more = len(page) > limit
        page = page[:limit]
        nxt = (page[-1].created_at, page[-1].id) if more and page else None
        return page, nxt

    # --- recall and status ---------------------------------------------------------------------

    def recall(self, request: RecallRequest) -> RecallResult:
        """Exactly the recall a run with this identity would get (read-only)."""
        return self.store.recall(request)

    def status(self, tenants: Sequence[str], *, days: int = 30) -> StatusReport:
        """Counts, cleanups (queued in the database or still spooled) and writes per day of
        ``tenants``; embedder facts of the store. Read-only."""
        now = self.store.clock.now()
        since = (now - timedelta(days=days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
        # Several tenants at once: the admin's own list, each statement filtered by it.
        with self.store.maintenance("console status") as conn:
            revision = current_revision(conn)
            stored, _ = stored_model(conn)
            counts = [dict(r) for r in conn.execute(csql.counts_by_dimension(tenants)).mappings()]
            cleanups = {
                r["tenant"]: int(r["n"])
                for r in conn.execute(csql.open_cleanups(tenants)).mappings()
            }
            per_day: dict[str, list[dict[str, Any]]] = {}
            for tenant in tenants:
                per_day[tenant] = [
                    dict(r) for r in conn.execute(csql.written_per_day(tenant, since)).mappings()
                ]
        embedder = self.store.embedder
        for tenant, n in ProductAdapter(self.store).spooled_by_tenant().items():
            if tenant in tenants:
                cleanups[tenant] = cleanups.get(tenant, 0) + n
        totals: dict[str, dict[str, int]] = {}
        for row in counts:
            bucket = totals.setdefault(row["tenant"], {})
            bucket[row["status"]] = bucket.get(row["status"], 0) + int(row["n"])
        return StatusReport(
            counts=counts,
            totals=totals,
            cleanups=cleanups,
            per_day=per_day,
            embedder_mode="lexical-only" if embedder is None else "hybrid",
            embed_model=embedder.model_name if embedder else None,
            embed_dim=embedder.dim if embedder else None,
            stored_model=stored,
            lexical_reason=self.store.lexical_reason,
            revision=revision,
            days=[since.replace(tzinfo=None) + timedelta(days=i) for i in range(days)],
        )
