"""Every store call the console makes, each checked against the admin's tenant.

This is the one place to switch to the store's ``tenant=`` keyword API (SPEC section 11) once
it lands: until then the tenant check is done here (fetch, compare, "not found" otherwise), so
an id of another tenant is indistinguishable from an id that does not exist.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from harness.errors import InvalidInput, MemoryNotFound
from harness.memory import MemoryStore
from harness.memory.domain.learning import RetirementProposal
from harness.memory.domain.listing import BrowseFilter, Cursor, PendingReview
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import Memory, RecallRequest, Status
from product_adapter import ProductAdapter

__all__ = [
    "SIMILAR_FLOOR",
    "ConsoleBackend",
    "Cursor",
    "StatusReport",
    "format_cursor",
    "parse_cursor",
    "parse_memory_id",
]


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


#: Cosine similarity below which an active memory is not shown as "similar" to a pending one:
#: with MiniLM, unrelated sentences of one tenant score 0.05-0.25 and restatements 0.6 and
#: more; listing the former only hides the look-alikes an admin has to compare.
SIMILAR_FLOOR = 0.4


class ConsoleBackend:
    """The console's view of one :class:`MemoryStore`; every method names the tenant."""

    def __init__(
        self, store: MemoryStore, *, similar_limit: int = 3, similar_floor: float = SIMILAR_FLOOR
    ):
        self.store = store
        self.similar_limit = similar_limit
        self.similar_floor = similar_floor

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

    def retirement_proposals(self, tenant: str) -> list[RetirementProposal]:
        """Lessons of ``tenant`` proposed for retirement, with why."""
        return self.store.retirement_proposals(tenant=tenant)

    def retired(self, tenant: str, *, limit: int) -> list[Memory]:
        """The newest retired memories of ``tenant``."""
        return self.store.browse(tenant, BrowseFilter(status=Status.RETIRED), limit=limit)

    def retire(self, tenant: str, memory_id: uuid.UUID, admin: str, reason: str | None) -> Memory:
        """Retire an active lesson of ``tenant``; recorded under ``admin``."""
        self.memory(tenant, memory_id)
        return self.store.retire(memory_id, admin, reason, tenant=tenant)

    def restore(self, tenant: str, memory_id: uuid.UUID, admin: str) -> Memory:
        """Bring a retired lesson of ``tenant`` back; recorded under ``admin``."""
        self.memory(tenant, memory_id)
        return self.store.restore(memory_id, admin, tenant=tenant)

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
        return self.store.audit_of(memory_id, tenant=tenant)

    # --- listings ------------------------------------------------------------------------------

    def pending(
        self, tenant: str, *, after: Cursor | None, limit: int
    ) -> tuple[list[PendingReview], Cursor | None]:
        """One page of the approval queue, oldest first, and the cursor of the next page."""
        page = self.store.pending_reviews(
            tenant, after=after, limit=limit + 1, similar_limit=self.similar_limit
        )
        more = len(page) > limit
        page = [
            dataclasses.replace(
                review, similar=[(m, s) for m, s in review.similar if s >= self.similar_floor]
            )
            for review in page[:limit]
        ]
        nxt = (page[-1].memory.created_at, page[-1].memory.id) if more and page else None
        return page, nxt

    def browse(
        self, tenant: str, flt: BrowseFilter, *, before: Cursor | None, limit: int
    ) -> tuple[list[Memory], Cursor | None]:
        """One page of the tenant's memories, newest first, and the cursor of the next page."""
        page = self.store.browse(tenant, flt, before=before, limit=limit + 1)
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
        seen = self.store.activity(tenants, since=since)
        counts, cleanups, per_day = seen.counts, dict(seen.cleanups), seen.per_day
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
            stored_model=seen.stored_model,
            lexical_reason=self.store.lexical_reason,
            revision=seen.revision,
            days=[since.replace(tzinfo=None) + timedelta(days=i) for i in range(days)],
        )
