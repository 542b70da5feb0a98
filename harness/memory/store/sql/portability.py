"""Statements of export and import (``docs/export-format.md``): one tenant's rows read a page
at a time in a stable order (keyset pagination, never OFFSET), and written idempotently.

A scope filter is a sequence of (scope, scope id or None for every id of that scope); the
dependent tables (approvals, lesson events and scores) follow their memory's scope.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    ColumnElement,
    DateTime,
    Double,
    Insert,
    Integer,
    Select,
    String,
    Text,
    and_,
    bindparam,
    cast,
    exists,
    func,
    insert,
    or_,
    select,
    true,
    tuple_,
)
from sqlalchemy import (
    false as false_,
)
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.dialects.postgresql import insert as pg_insert

from harness.memory.domain.types import Scope
from harness.memory.store.sql.schema import (
    approvals,
    conversation_turns,
    conversations,
    lesson_events,
    lesson_scores,
    memories,
)

__all__ = [
    "export_approvals_page",
    "export_conversation_turns",
    "export_conversations_page",
    "export_events_page",
    "export_memories_page",
    "export_scores_page",
    "import_approvals",
    "import_events",
    "import_memories",
    "import_scores",
]

#: (scope, scope id) pairs; a None id selects every id of that scope. Empty: the whole tenant.
ScopeFilter = Sequence[tuple[Scope, str | None]]

#: Marks a vector column in the type maps below (sent as text, cast to ``vector``).
VECTOR = object()

m = memories.c
a = approvals.c
e = lesson_events.c
s = lesson_scores.c

_MEMORY_EXPORTED = tuple(c for c in memories.c if c.name not in ("tsv", "fingerprint"))
_NO_VECTORS = tuple(c for c in _MEMORY_EXPORTED if c.name not in ("embedding", "context_embedding"))
_EVENT_EXPORTED = tuple(c for c in lesson_events.c if c.name != "tenant")
_EVENT_NO_VECTORS = tuple(
    c for c in _EVENT_EXPORTED if c.name not in ("embedding", "feedback_embedding")
)


def _in_scopes(scopes: ScopeFilter) -> ColumnElement[bool]:
    if not scopes:
        return true()
    return or_(
        *(
            m.scope == scope.value
            if scope_id is None
            else and_(m.scope == scope.value, m.scope_id == scope_id)
            for scope, scope_id in scopes
        )
    )


def export_memories_page(
    tenant: str, scopes: ScopeFilter, after: uuid.UUID | None, limit: int, *, vectors: bool
) -> Select[Any]:
    """The next ``limit`` memories of the tenant in the filter, by id after ``after``."""
    stmt = (
        select(*(_MEMORY_EXPORTED if vectors else _NO_VECTORS))
        .where(m.tenant == tenant, _in_scopes(scopes))
        .order_by(m.id)
        .limit(limit)
    )
    return stmt if after is None else stmt.where(m.id > after)


def _of_exported_memories(
    stmt: Select[Any], table: Any, tenant: str, scopes: ScopeFilter
) -> Select[Any]:
    """``stmt`` over ``table``'s rows of the tenant whose memory is in the filter (a join on
    the memory, tenant first, when there is a filter)."""
    stmt = stmt.where(table.c.tenant == tenant)
    if not scopes:
        return stmt
    on = and_(m.tenant == table.c.tenant, m.id == table.c.memory_id)
    return stmt.select_from(table.join(memories, on)).where(_in_scopes(scopes))


def export_approvals_page(
    tenant: str, scopes: ScopeFilter, after: int | None, limit: int
) -> Select[Any]:
    """The next approval decisions of the tenant's memories in the filter, in decision order."""
    stmt = (
        _of_exported_memories(
            select(a.id, a.memory_id, a.decision, a.actor, a.reason, a.decided_at),
            approvals,
            tenant,
            scopes,
        )
        .order_by(a.id)
        .limit(limit)
    )
    return stmt if after is None else stmt.where(a.id > after)


def export_events_page(
    tenant: str, scopes: ScopeFilter, after: int | None, limit: int, *, vectors: bool
) -> Select[Any]:
    """The next lesson events of the tenant's memories in the filter, in the order recorded."""
    stmt = (
        _of_exported_memories(
            select(*(_EVENT_EXPORTED if vectors else _EVENT_NO_VECTORS)),
            lesson_events,
            tenant,
            scopes,
        )
        .order_by(e.id)
        .limit(limit)
    )
    return stmt if after is None else stmt.where(e.id > after)


def export_scores_page(
    tenant: str, scopes: ScopeFilter, after: uuid.UUID | None, limit: int
) -> Select[Any]:
    """The next lesson scores of the tenant's memories in the filter, by memory id."""
    stmt = (
        _of_exported_memories(select(s.memory_id, s.n, s.mean, s.m2), lesson_scores, tenant, scopes)
        .order_by(s.memory_id)
        .limit(limit)
    )
    return stmt if after is None else stmt.where(s.memory_id > after)


_MEMORY_TYPES: dict[str, Any] = {
    "id": UUID(as_uuid=True),
    "tenant": String(200),
    "scope": String(16),
    "scope_id": String(200),
    "kind": String(16),
    "memory_key": String(200),
    "content": Text(),
    "context": Text(),
    "priority": Integer(),
    "status": String(20),
    "origin": String(16),
    "run_id": String(200),
    "verdict_id": String(200),
    "created_at": DateTime(timezone=True),
    "expires_at": DateTime(timezone=True),
    "supersedes": UUID(as_uuid=True),
    "superseded_by": UUID(as_uuid=True),
    "fingerprint": String(64),
    "embedding": VECTOR,
    "context_embedding": VECTOR,
    "approved_by": String(200),
    "approved_at": DateTime(timezone=True),
    "approval_decision": String(16),
    "approval_reason": Text(),
}
_APPROVAL_TYPES: dict[str, Any] = {
    "tenant": String(200),
    "memory_id": UUID(as_uuid=True),
    "decision": String(16),
    "actor": String(200),
    "reason": Text(),
    "decided_at": DateTime(timezone=True),
}
_EVENT_TYPES: dict[str, Any] = {
    "tenant": String(200),
    "memory_id": UUID(as_uuid=True),
    "event": String(16),
    "polarity": String(8),
    "run_id": String(200),
    "verdict_id": String(200),
    "actor": String(200),
    "task": Text(),
    "feedback": Text(),
    "embedding": VECTOR,
    "feedback_embedding": VECTOR,
    "at": DateTime(timezone=True),
}
_SCORE_TYPES: dict[str, Any] = {
    "tenant": String(200),
    "memory_id": UUID(as_uuid=True),
    "n": Integer(),
    "mean": Double(),
    "m2": Double(),
}


def _vector_text(value: Sequence[float] | None) -> str | None:
    return None if value is None else "[" + ",".join(map(repr, map(float, value))) + "]"


def _unnest(name: str, types: dict[str, Any], rows: Sequence[dict[str, Any]]) -> list[Any]:
    """The columns of ``rows`` as ``unnest`` of one array parameter each (a batch is a few
    parameters, not one per value), each cast back to its type. Vectors travel as text."""
    arrays = []
    for column, kind in types.items():
        if kind is VECTOR:
            values = [_vector_text(r[column]) for r in rows]
            arrays.append(bindparam(f"{name}_{column}", values, type_=ARRAY(Text())))
        else:
            values = [r[column] for r in rows]
            arrays.append(bindparam(f"{name}_{column}", values, type_=ARRAY(kind)))
    u = func.unnest(*arrays).table_valued(*types).render_derived(name=name)
    return [
        (cast(u.c[c], Vector()) if kind is VECTOR else u.c[c]).label(c) for c, kind in types.items()
    ]


def import_memories(rows: Sequence[dict[str, Any]]) -> Insert:
    """Insert ``rows``; a row whose (tenant, id) exists is left as it is (import is
    idempotent by id). Returns the ids inserted."""
    new = select(*_unnest("im", _MEMORY_TYPES, rows))
    return (
        pg_insert(memories)
        .from_select(list(_MEMORY_TYPES), new)
        .on_conflict_do_nothing(index_elements=[m.tenant, m.id])
        .returning(m.id)
    )


def import_approvals(rows: Sequence[dict[str, Any]]) -> Insert:
    """Insert the decisions the tenant does not hold already (the same decision on that
    memory at that time by that actor): a re-import adds nothing. Returns their ids."""
    cols = _unnest("ia", _APPROVAL_TYPES, rows)
    v = select(*cols).subquery("v")
    new = select(*v.c).where(
        ~exists().where(
            a.tenant == v.c.tenant,
            a.memory_id == v.c.memory_id,
            a.decision == v.c.decision,
            a.actor == v.c.actor,
            a.decided_at == v.c.decided_at,
        )
    )
    return insert(approvals).from_select(list(_APPROVAL_TYPES), new).returning(a.id)


def import_events(rows: Sequence[dict[str, Any]]) -> Insert:
    """Insert the lesson events the tenant does not hold already (the same event of that
    memory at that time from that run): a re-import adds nothing. Returns their ids."""
    v = select(*_unnest("ie", _EVENT_TYPES, rows)).subquery("v")
    new = select(*v.c).where(
        ~exists().where(
            e.tenant == v.c.tenant,
            e.memory_id == v.c.memory_id,
            e.event == v.c.event,
            e.at == v.c.at,
            e.run_id.is_not_distinct_from(v.c.run_id),
        )
    )
    return insert(lesson_events).from_select(list(_EVENT_TYPES), new).returning(e.id)


def import_scores(rows: Sequence[dict[str, Any]]) -> Insert:
    """Insert the lesson scores of lessons that have none (idempotent by memory id).
    Returns their memory ids."""
    new = select(*_unnest("isc", _SCORE_TYPES, rows))
    return (
        pg_insert(lesson_scores)
        .from_select(list(_SCORE_TYPES), new)
        .on_conflict_do_nothing(index_elements=[s.tenant, s.memory_id])
        .returning(s.memory_id)
    )


def export_conversations_page(
    tenant: str, wanted: ScopeFilter, after: tuple[str, str] | None, limit: int
) -> Select[Any]:
    """The tenant's archived conversations in (user, id) order after ``after``: all of them
    without a filter, else those of the users the filter's user scopes name (a conversation
    is its user's); none when the filter has no user scope."""
    c = conversations.c
    stmt = select(c.user_id, c.conversation_id).where(c.tenant == tenant)
    if wanted:
        users = [scope_id for scope, scope_id in wanted if scope is Scope.USER]
        if not users:
            return stmt.where(false_()).limit(0)
        if None not in users:
            stmt = stmt.where(c.user_id.in_([u for u in users if u is not None]))
    if after is not None:
        stmt = stmt.where(tuple_(c.user_id, c.conversation_id) > tuple_(*after))
    return stmt.order_by(c.user_id, c.conversation_id).limit(limit)


def export_conversation_turns(tenant: str, user_id: str, conversation_id: str) -> Select[Any]:
    """Every turn of one conversation, in order."""
    t = conversation_turns.c
    return (
        select(t.seq, t.ts, t.role, t.text, t.turn_id)
        .where(t.tenant == tenant, t.user_id == user_id, t.conversation_id == conversation_id)
        .order_by(t.seq)
    )
