"""Statements of lessons that learn: their events (teachings, outcomes, retirements), the
lessons a run's learning compares feedback with, and the retirement queue's statistics."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Delete,
    Insert,
    Select,
    String,
    Update,
    and_,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy import tuple_ as sa_tuple
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.dialects.postgresql import insert as pg_insert

from harness.memory.domain.types import Kind, Scope, Status
from harness.memory.store.sql.columns import MEMORY_COLUMNS, m
from harness.memory.store.sql.schema import lesson_events, lesson_scores, memories

__all__ = [
    "CONTEXT_EVENTS",
    "OUTCOME_EVENTS",
    "RECORD_TABLES",
    "WORDING_EVENTS",
    "add_scores",
    "delete_records_in_scope",
    "delete_records_of",
    "delete_records_of_expired",
    "events_of",
    "events_to_embed",
    "insert_events",
    "lesson_stats",
    "lessons_for_learning",
    "set_event_vectors",
    "wordings_of",
]

e = lesson_events.c

#: Events recording what a later run did with a lesson.
OUTCOME_EVENTS = ("repeated", "missed", "misled", "clear", "recalled")


def insert_events() -> Insert:
    """Insert event rows (executemany): tenant, memory_id, event, polarity, run_id,
    verdict_id, actor, task, feedback, embedding, at."""
    return insert(lesson_events)


def lessons_for_learning(
    tenant: str,
    scope: Scope,
    scope_id: str,
    ids: Sequence[uuid.UUID],
    user_id: str | None = None,
) -> Select[Any]:
    """Active lessons a run's feedback may restate: those of its lesson scope (and of
    ``user_id``'s user scope), and those among ``ids`` (what its recall placed, of any scope),
    with their content vectors."""
    in_scope = and_(m.scope == scope.value, m.scope_id == scope_id)
    if user_id is not None:
        in_scope = in_scope | and_(m.scope == Scope.USER.value, m.scope_id == user_id)
    placed = m.id == func.any(bindparam("placed", list(ids), type_=ARRAY(UUID(as_uuid=True))))
    return (
        select(*MEMORY_COLUMNS, m.embedding)
        .where(
            m.tenant == tenant,
            m.kind == Kind.LESSON.value,
            m.status == Status.ACTIVE.value,
            in_scope | placed if ids else in_scope,
        )
        .order_by(m.created_at, m.id)
    )


def wordings_of(tenant: str, ids: Sequence[uuid.UUID]) -> Select[Any]:
    """The feedback vectors of every teaching of the lessons ``ids`` (each wording a rule was
    taught in)."""
    return (
        select(e.memory_id, e.feedback_embedding)
        .where(
            e.tenant == tenant,
            e.memory_id == func.any(bindparam("ids", list(ids), type_=ARRAY(UUID(as_uuid=True)))),
            e.feedback_embedding.is_not(None),
        )
        .order_by(e.memory_id, e.id)
    )


#: Events whose task is a context (its vector recall matches) and whose feedback is a later
#: wording of the lesson (its vector learning compares): a lesson's first teaching is its row.
CONTEXT_EVENTS = ("missed", "misled")
WORDING_EVENTS = ("missed", "repeated")


def events_to_embed(batch: int, after: tuple[str, int] | None, *, all_rows: bool) -> Select[Any]:
    """The next events (every tenant) whose vectors reembed writes, in (tenant, id) order
    after ``after``: all that have a text to embed, or only those missing a vector."""
    needs_task = and_(e.event.in_(CONTEXT_EVENTS), e.task.is_not(None))
    needs_feedback = and_(e.event.in_(WORDING_EVENTS), e.feedback.is_not(None))
    if not all_rows:
        needs_task = and_(needs_task, e.embedding.is_(None))
        needs_feedback = and_(needs_feedback, e.feedback_embedding.is_(None))
    stmt = select(e.tenant, e.id, e.event, e.task, e.feedback).where(needs_task | needs_feedback)
    if after is not None:
        stmt = stmt.where(sa_tuple(e.tenant, e.id) > sa_tuple(*after))
    return stmt.order_by(e.tenant, e.id).limit(batch)


def set_event_vectors() -> Update:
    """Write one event's vectors (executemany): ``b_tenant``, ``b_id``, ``b_embedding``,
    ``b_feedback_embedding``."""
    return (
        update(lesson_events)
        .where(
            e.tenant == bindparam("b_tenant", type_=String),
            e.id == bindparam("b_id", type_=BigInteger),
        )
        .values(
            embedding=bindparam("b_embedding", type_=e.embedding.type),
            feedback_embedding=bindparam("b_feedback_embedding", type_=e.feedback_embedding.type),
        )
    )


def events_of(tenant: str, memory_id: uuid.UUID) -> Select[Any]:
    """One lesson's events, oldest first (vectors left out)."""
    return (
        select(*(c for c in lesson_events.c if c.name not in ("embedding", "feedback_embedding")))
        .where(e.tenant == tenant, e.memory_id == memory_id)
        .order_by(e.at, e.id)
    )


def lesson_stats(tenant: str) -> Select[Any]:
    """Every active lesson of the tenant with its counts by event and its last activity."""
    counts = {
        name: func.count().filter(e.event == name).label(name)
        for name in ("taught", *OUTCOME_EVENTS)
    }
    per_lesson = (
        select(
            e.memory_id,
            *counts.values(),
            func.count().filter(e.polarity == "positive").label("contexts"),
            func.count().filter(e.polarity == "negative").label("negative_contexts"),
            func.max(e.at)
            .filter(e.event.in_(("taught", "restored", *OUTCOME_EVENTS)))
            .label("last_seen"),
        )
        .where(e.tenant == tenant)
        .group_by(e.memory_id)
        .subquery("per_lesson")
    )
    return (
        select(*MEMORY_COLUMNS, *(c for c in per_lesson.c if c.name != "memory_id"))
        .select_from(memories.outerjoin(per_lesson, per_lesson.c.memory_id == m.id))
        .where(m.tenant == tenant, m.kind == Kind.LESSON.value, m.status == Status.ACTIVE.value)
        .order_by(m.created_at, m.id)
    )


def add_scores() -> Insert:
    """Fold one cosine ``x`` (given as ``mean``, with ``n`` = 1, ``m2`` = 0) into a lesson's
    running mean and spread (Welford's update; executemany)."""
    stmt = pg_insert(lesson_scores)
    old, x = lesson_scores.c, stmt.excluded.mean
    new_mean = old.mean + (x - old.mean) / (old.n + 1)
    return stmt.on_conflict_do_update(
        index_elements=[old.tenant, old.memory_id],
        set_={"n": old.n + 1, "mean": new_mean, "m2": old.m2 + (x - old.mean) * (x - new_mean)},
    )


#: The tables holding a lesson's record: what is deleted with the lesson (task texts, vectors).
RECORD_TABLES = (lesson_events, lesson_scores)


def _delete_records(tenant: str, memory_ids: Any) -> list[Delete]:
    return [
        delete(t).where(t.c.tenant == tenant, t.c.memory_id.in_(memory_ids)) for t in RECORD_TABLES
    ]


def delete_records_of(tenant: str, memory_id: uuid.UUID) -> list[Delete]:
    """One memory's lesson record: its events and its scale (before the memory goes)."""
    return _delete_records(tenant, [memory_id])


def delete_records_in_scope(tenant: str, scope: Scope, scope_id: str) -> list[Delete]:
    """The lesson records of every memory of one scope (before the memories go)."""
    ids = select(m.id).where(m.tenant == tenant, m.scope == scope.value, m.scope_id == scope_id)
    return _delete_records(tenant, ids)


def delete_records_of_expired(tenant: str, now: datetime) -> list[Delete]:
    """The lesson records of the tenant's expired memories (before the memories go)."""
    return _delete_records(tenant, select(m.id).where(m.tenant == tenant, m.expires_at <= now))
