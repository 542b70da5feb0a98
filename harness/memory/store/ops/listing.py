"""Listings of a tenant's memories for the admin console and the LangGraph mapping: keyset
pages, the approval queue with what each decision replaces, the audit of one memory, and
the activity counts of the console's status page. Plans for both facades; all read-only."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from harness.identifiers import check_identifier
from harness.memory.domain.listing import Activity, BrowseFilter, Cursor, PendingReview
from harness.memory.domain.types import Memory, Scope
from harness.memory.store.base import StoreBase
from harness.memory.store.checks import as_uuid, check_whole
from harness.memory.store.executors import OnConnection, Op
from harness.memory.store.migrate import current_revision
from harness.memory.store.ops.vectors import stored_model_op
from harness.memory.store.plans import Plan, in_transaction
from harness.memory.store.rows import memory_from_row
from harness.memory.store.sql import console as console_sql

__all__ = ["activity", "audit_of", "browse", "pending_reviews"]


def _check_limit(limit: int) -> int:
    return check_whole(limit, "limit", 1, 10_000)


def browse(
    store: StoreBase,
    tenant: str,
    where: BrowseFilter | None = None,
    *,
    before: Cursor | None = None,
    limit: int = 50,
) -> Plan[list[Memory]]:
    """Up to ``limit`` of the tenant's memories (any status) matching ``where``, newest
    first, strictly older than ``before`` (the last row of the previous page). Read-only."""
    tenant = check_identifier(tenant, "tenant")
    limit = _check_limit(limit)
    op = _browse(tenant, where or BrowseFilter(), before, limit)
    return (yield from in_transaction("browse", op, tenant))


def _browse(
    tenant: str, where: BrowseFilter, before: Cursor | None, limit: int
) -> Op[list[Memory]]:
    rows = yield console_sql.browse(tenant, where, before=before, limit=limit)
    return [memory_from_row(r) for r in rows.mappings().all()]


def pending_reviews(
    store: StoreBase,
    tenant: str,
    *,
    after: Cursor | None = None,
    limit: int = 50,
    similar_limit: int = 3,
) -> Plan[list[PendingReview]]:
    """Up to ``limit`` pending memories of the tenant, oldest first, strictly after
    ``after``; each with the active item of its key it would replace and up to
    ``similar_limit`` look-alike active memories of its scope. Read-only, one transaction."""
    tenant = check_identifier(tenant, "tenant")
    limit = _check_limit(limit)
    check_whole(similar_limit, "similar_limit", 0, 100)
    op = _pending(tenant, after, limit, similar_limit)
    return (yield from in_transaction("pending reviews", op, tenant))


def _pending(
    tenant: str, after: Cursor | None, limit: int, similar_limit: int
) -> Op[list[PendingReview]]:
    rows = yield console_sql.pending_page(tenant, after=after, limit=limit)
    page = [memory_from_row(r) for r in rows.mappings().all()]
    similar: dict[uuid.UUID, list[tuple[Memory, float]]] = {}
    groups: dict[tuple[Scope, str], list[uuid.UUID]] = {}
    for mem in page:
        if mem.has_embedding:
            groups.setdefault((mem.scope, mem.scope_id), []).append(mem.id)
    for (scope, scope_id), ids in groups.items():
        found = yield console_sql.similar_active(tenant, ids, scope, scope_id, similar_limit)
        for r in found.mappings():
            similar.setdefault(r["probe_id"], []).append(
                (memory_from_row(r), float(r["similarity"]))
            )
    reviews = []
    for mem in page:
        would_supersede = None
        if mem.key is not None:
            stmt = console_sql.active_for_key_readonly(tenant, mem.scope, mem.scope_id, mem.key)
            row = (yield stmt).mappings().first()
            would_supersede = memory_from_row(row) if row else None
        reviews.append(PendingReview(mem, would_supersede, similar.get(mem.id, [])))
    return reviews


def audit_of(
    store: StoreBase, memory_id: uuid.UUID | str, *, tenant: str
) -> Plan[list[dict[str, Any]]]:
    """The approval decisions recorded for one of the tenant's memories, oldest first (an
    id of another tenant has none). Read-only."""
    mid = as_uuid(memory_id)
    tenant = check_identifier(tenant, "tenant")
    return (yield from in_transaction("audit of memory", _audit_of(tenant, mid), tenant))


def _audit_of(tenant: str, memory_id: uuid.UUID) -> Op[list[dict[str, Any]]]:
    rows = yield console_sql.audit_of_memory(tenant, memory_id)
    return [dict(r) for r in rows.mappings().all()]


def activity(store: StoreBase, tenants: Sequence[str], *, since: datetime) -> Plan[Activity]:
    """Memory counts (tenant, scope, kind, status), open cleanups and writes per day since
    ``since`` of ``tenants`` (each statement filtered by them), the schema revision and the
    recorded model, in one maintenance transaction. Read-only."""
    checked = tuple(check_identifier(t, "tenants") for t in tenants)
    return (yield from in_transaction("activity", _activity(checked, since), admits="everyone"))


def _activity(tenants: Sequence[str], since: datetime) -> Op[Activity]:
    revision = yield OnConnection(current_revision)
    stored, _ = yield from stored_model_op()
    counts = [dict(r) for r in (yield console_sql.counts_by_dimension(tenants)).mappings()]
    cleanups = {
        r["tenant"]: int(r["n"]) for r in (yield console_sql.open_cleanups(tenants)).mappings()
    }
    per_day: dict[str, list[dict[str, Any]]] = {}
    for tenant in tenants:
        rows = yield console_sql.written_per_day(tenant, since)
        per_day[tenant] = [dict(r) for r in rows.mappings()]
    return Activity(counts, cleanups, per_day, revision, stored)
