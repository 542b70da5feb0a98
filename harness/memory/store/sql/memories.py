"""Statements of the write path, reads, approvals, deletion and store metadata."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Delete,
    Insert,
    Select,
    Text,
    TextClause,
    Update,
    and_,
    bindparam,
    delete,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.sql.selectable import TableValuedAlias

from harness.memory.domain.types import Kind, Scope, Status
from harness.memory.store.sql.columns import MEMORY_COLUMNS, m
from harness.memory.store.sql.schema import approvals, cleanup_tasks, memories, store_meta

__all__ = [
    "active_for_key",
    "active_for_keys",
    "active_with_fingerprint",
    "active_with_fingerprints",
    "approval_audit",
    "by_id",
    "clear_vectors",
    "count_memories",
    "counts_by_tenant_status",
    "delete_by_id",
    "delete_scope",
    "fingerprint_lock_name",
    "history",
    "insert_approval",
    "insert_memories",
    "insert_memory",
    "key_lock_name",
    "lock_key",
    "lock_model",
    "lock_name",
    "lock_names",
    "meta_get",
    "meta_upsert",
    "missing_embeddings",
    "open_cleanups_by_tenant",
    "pending",
    "purge_expired",
    "retype_vectors",
    "set_embedding",
    "set_status",
    "supersede",
    "supersede_many",
    "tenants_with_expired",
    "unlink",
    "vector_column_type",
]


def key_lock_name(tenant: str, scope: Scope, scope_id: str, key: str) -> str:
    """The advisory lock name of one (tenant, scope, scope_id, key)."""
    return f"{tenant}\x1f{scope.value}\x1f{scope_id}\x1f{key}"


def fingerprint_lock_name(
    tenant: str, scope: Scope, scope_id: str, kind: Kind, fingerprint: str
) -> str:
    """The advisory lock name of one keyless content (keys cannot hold the \x1e separator)."""
    return f"{tenant}\x1f{scope.value}\x1f{scope_id}\x1e{kind.value}\x1e{fingerprint}"


def lock_name(name: str) -> TextClause:
    """Serialise writers of one lock name until the transaction ends."""
    return text("SELECT pg_advisory_xact_lock(hashtextextended(:lk, 0))").bindparams(lk=name)


def lock_names(names: Sequence[str]) -> TextClause:
    """:func:`lock_name` for many names in one round trip, taken in the order given (callers
    sort them, so concurrent writers cannot deadlock)."""
    return text(
        "SELECT count(pg_advisory_xact_lock(hashtextextended(n, 0))) "
        "FROM unnest(CAST(:names AS text[])) AS u(n)"
    ).bindparams(names=list(names))


def lock_key(tenant: str, scope: Scope, scope_id: str, key: str) -> TextClause:
    """Serialise writers of one (tenant, scope, scope_id, key) until the transaction ends."""
    return lock_name(key_lock_name(tenant, scope, scope_id, key))


def lock_model(*, shared: bool) -> TextClause:
    """Writers of vectors share this lock; recording another model takes it exclusively."""
    function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    return text(f"SELECT {function}(hashtextextended('harness.embedding_model', 2))")


def _scope_is(tenant: str, scope: Scope, scope_id: str) -> ColumnElement[bool]:
    return and_(m.tenant == tenant, m.scope == scope.value, m.scope_id == scope_id)


def active_for_key(tenant: str, scope: Scope, scope_id: str, key: str) -> Select[Any]:
    return (
        select(*MEMORY_COLUMNS)
        .where(
            _scope_is(tenant, scope, scope_id), m.memory_key == key, m.status == Status.ACTIVE.value
        )
        .with_for_update()
    )


def active_with_fingerprint(
    tenant: str, scope: Scope, scope_id: str, kind: Kind, fingerprint: str
) -> Select[Any]:
    return (
        select(*MEMORY_COLUMNS)
        .where(
            _scope_is(tenant, scope, scope_id),
            m.fingerprint == fingerprint,
            m.kind == kind.value,
            m.memory_key.is_(None),
            m.status.in_([Status.ACTIVE.value, Status.PENDING_APPROVAL.value]),
        )
        .order_by((m.status == Status.ACTIVE.value).desc())
        .limit(1)
    )


def _rows_of(name: str, **columns: Sequence[str]) -> TableValuedAlias:
    """``unnest`` of parallel text arrays as a derived table ``name`` (one row per position)."""
    arrays = [bindparam(f"{name}_{c}", list(v), type_=ARRAY(Text)) for c, v in columns.items()]
    return func.unnest(*arrays).table_valued(*columns).render_derived(name=name)


def active_for_keys(
    tenant: str, scopes: Sequence[str], scope_ids: Sequence[str], keys: Sequence[str]
) -> Select[Any]:
    """:func:`active_for_key` for many (scope, scope_id, key) of one tenant, in one round trip
    (the rows locked for update); parallel sequences, one position per key."""
    u = _rows_of("wk", scope=scopes, scope_id=scope_ids, memory_key=keys)
    return (
        select(*MEMORY_COLUMNS)
        .select_from(u)
        .join(
            memories,
            and_(
                m.scope == u.c.scope,
                m.scope_id == u.c.scope_id,
                m.memory_key == u.c.memory_key,
            ),
        )
        .where(m.tenant == tenant, m.status == Status.ACTIVE.value)
        .with_for_update(of=memories)
    )


def active_with_fingerprints(
    tenant: str,
    scopes: Sequence[str],
    scope_ids: Sequence[str],
    kinds: Sequence[str],
    fingerprints: Sequence[str],
) -> Select[Any]:
    """:func:`active_with_fingerprint` for many keyless contents of one tenant, in one round
    trip: every active or pending match (the caller prefers an active one per content)."""
    u = _rows_of("wf", scope=scopes, scope_id=scope_ids, kind=kinds, fingerprint=fingerprints)
    return (
        select(*MEMORY_COLUMNS)
        .select_from(u)
        .join(
            memories,
            and_(
                m.scope == u.c.scope,
                m.scope_id == u.c.scope_id,
                m.fingerprint == u.c.fingerprint,
                m.kind == u.c.kind,
            ),
        )
        .where(
            m.tenant == tenant,
            m.memory_key.is_(None),
            m.status.in_([Status.ACTIVE.value, Status.PENDING_APPROVAL.value]),
        )
        .order_by((m.status == Status.ACTIVE.value).desc(), m.created_at, m.id)
    )


def insert_memories() -> Insert:
    """Insert rows given as the execution's parameter list (SQLAlchemy sends them as multi-row
    ``VALUES``, a page per round trip) and return them."""
    return insert(memories).returning(*MEMORY_COLUMNS)


def supersede_many(tenant: str, pairs: Sequence[tuple[uuid.UUID, uuid.UUID]]) -> Update:
    """:func:`supersede` for many (old id, new id) pairs of one tenant, in one statement."""
    uuids = ARRAY(UUID(as_uuid=True))
    u = (
        func.unnest(
            bindparam("ss_old", [old for old, _ in pairs], type_=uuids),
            bindparam("ss_new", [new for _, new in pairs], type_=uuids),
        )
        .table_valued("old", "new")
        .render_derived(name="ss")
    )
    return (
        update(memories)
        .where(m.tenant == tenant, m.id == u.c.old)
        .values(status=Status.SUPERSEDED.value, superseded_by=u.c.new)
    )


def insert_memory(row: dict[str, Any]) -> Insert:
    return insert(memories).values(**row).returning(*MEMORY_COLUMNS)


def supersede(tenant: str, old_id: uuid.UUID, new_id: uuid.UUID) -> Update:
    return (
        update(memories)
        .where(m.tenant == tenant, m.id == old_id)
        .values(status=Status.SUPERSEDED.value, superseded_by=new_id)
    )


def by_id(tenant: str, memory_id: uuid.UUID, *, for_update: bool = False) -> Select[Any]:
    stmt = select(*MEMORY_COLUMNS).where(m.tenant == tenant, m.id == memory_id)
    return stmt.with_for_update() if for_update else stmt


def history(tenant: str, scope: Scope, scope_id: str, key: str) -> Select[Any]:
    return (
        select(*MEMORY_COLUMNS)
        .where(_scope_is(tenant, scope, scope_id), m.memory_key == key)
        .order_by(m.created_at, m.id)
    )


def pending(tenant: str) -> Select[Any]:
    return (
        select(*MEMORY_COLUMNS)
        .where(m.tenant == tenant, m.status == Status.PENDING_APPROVAL.value)
        .order_by(m.created_at, m.id)
    )


def set_status(tenant: str, memory_id: uuid.UUID, values: dict[str, Any]) -> Update:
    return update(memories).where(m.tenant == tenant, m.id == memory_id).values(**values)


def insert_approval(row: dict[str, Any]) -> Insert:
    return insert(approvals).values(**row)


def approval_audit(tenant: str) -> Select[Any]:
    a = approvals.c
    return select(approvals).where(a.tenant == tenant).order_by(a.decided_at, a.id)


def delete_by_id(tenant: str, memory_id: uuid.UUID) -> Delete:
    return delete(memories).where(m.tenant == tenant, m.id == memory_id)


def unlink(tenant: str, memory_id: uuid.UUID) -> list[Update]:
    """Clear supersession links that point at a memory about to be forgotten."""
    return [
        update(memories)
        .where(m.tenant == tenant, m.supersedes == memory_id)
        .values(supersedes=None),
        update(memories)
        .where(m.tenant == tenant, m.superseded_by == memory_id)
        .values(superseded_by=None),
    ]


def delete_scope(tenant: str, scope: Scope, scope_id: str) -> Delete:
    return delete(memories).where(_scope_is(tenant, scope, scope_id))


def tenants_with_expired(now: datetime) -> Select[Any]:
    return select(m.tenant).where(m.expires_at <= now).distinct()


def purge_expired(tenant: str, now: datetime) -> Delete:
    return delete(memories).where(m.tenant == tenant, m.expires_at <= now)


def counts_by_tenant_status() -> Select[Any]:
    return (
        select(m.tenant, m.status, func.count().label("n"))
        .group_by(m.tenant, m.status)
        .order_by(m.tenant, m.status)
    )


def missing_embeddings(batch: int, after: uuid.UUID | None, *, all_rows: bool) -> Select[Any]:
    stmt = select(m.tenant, m.id, m.content, m.context).order_by(m.id).limit(batch)
    if not all_rows:
        stmt = stmt.where(m.embedding.is_(None))
    if after is not None:
        stmt = stmt.where(m.id > after)
    return stmt


def set_embedding() -> Update:
    return (
        update(memories)
        .where(m.tenant == bindparam("b_tenant"), m.id == bindparam("b_id"))
        .values(
            embedding=bindparam("b_embedding"),
            context_embedding=bindparam("b_context_embedding"),
        )
    )


def meta_get() -> Select[Any]:
    return select(store_meta.c.name, store_meta.c.value)


def meta_upsert(name: str, value: str, *, overwrite: bool) -> Insert:
    stmt = pg_insert(store_meta).values(name=name, value=value)
    if overwrite:
        return stmt.on_conflict_do_update(index_elements=["name"], set_={"value": value})
    return stmt.on_conflict_do_nothing(index_elements=["name"])


# --- vectors and status -------------------------------------------------------------------------


def vector_column_type() -> TextClause:
    """The declared type of the embedding column, e.g. ``vector(384)``."""
    return text(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
    )


def retype_vectors(dim: int) -> list[TextClause]:
    """Statements that clear every vector and re-declare the vector columns at ``dim``."""
    size = int(dim)
    return [
        text("DROP INDEX IF EXISTS ix_memories_embedding_hnsw"),
        text("UPDATE memories SET embedding = NULL, context_embedding = NULL"),
        text(f"ALTER TABLE memories ALTER COLUMN embedding TYPE vector({size})"),
        text(f"ALTER TABLE memories ALTER COLUMN context_embedding TYPE vector({size})"),
        text("UPDATE lesson_events SET embedding = NULL, feedback_embedding = NULL"),
        text(f"ALTER TABLE lesson_events ALTER COLUMN embedding TYPE vector({size})"),
        text(f"ALTER TABLE lesson_events ALTER COLUMN feedback_embedding TYPE vector({size})"),
        text(
            "CREATE INDEX ix_memories_embedding_hnsw ON memories "
            "USING hnsw (embedding vector_cosine_ops)"
        ),
    ]


def clear_vectors() -> list[TextClause]:
    """Every stored vector of memories and lesson events set to NULL (a model change: a NULL
    is what ``reembed`` still has to build, and recall reads that row by its words meanwhile)."""
    return [
        text(
            "UPDATE memories SET embedding = NULL, context_embedding = NULL "
            "WHERE embedding IS NOT NULL OR context_embedding IS NOT NULL"
        ),
        text(
            "UPDATE lesson_events SET embedding = NULL, feedback_embedding = NULL "
            "WHERE embedding IS NOT NULL OR feedback_embedding IS NOT NULL"
        ),
    ]


def count_memories(*, missing_vector_only: bool) -> Select[Any]:
    stmt = select(func.count()).select_from(memories)
    return stmt.where(m.embedding.is_(None)) if missing_vector_only else stmt


def open_cleanups_by_tenant() -> Select[Any]:
    c = cleanup_tasks.c
    return (
        select(c.tenant, func.count())
        .where(c.done_at.is_(None))
        .group_by(c.tenant)
        .order_by(c.tenant)
    )
