"""Statements of the MCP server's shared RecallSet memos (``mcp_memos``, migration 0008).

A memo belongs to one caller and the credential it came with: (tenant, user_id, workflow_id,
session_id, token_sha256), with '' standing for a missing workflow or session (identifiers are
never empty, so '' cannot collide with one); ``token_sha256`` (migration 0010) is the MCP
server's hash of the bearer token's identity, so a second token of the same user never reaches
the memo. Every statement filters by tenant first, then by the owner or the handle's digest. Times are
Unix seconds (double precision) from the memo book's clock; "idle" is ``now - last_used >
idle_s``, written exactly as the in-process book computes it, so both agree at the boundary.
Subqueries read the table through an alias: a subquery naming the statement's own table would
be correlated to it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    Delete,
    Double,
    Insert,
    Select,
    TextClause,
    Update,
    and_,
    delete,
    func,
    insert,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.sql.expression import ScalarSelect

from harness.memory.domain.caller import Caller
from harness.memory.store.sql.schema import mcp_memos

__all__ = [
    "close_memos_over_cap",
    "count_open_memos",
    "count_open_memos_of_all",
    "discard_memo",
    "expire_idle_memos",
    "forget_ended_memos",
    "insert_memo",
    "lock_memo_caller",
    "memo_for_update",
    "memo_lock_name",
    "next_touched",
    "sweep_abandoned_memos",
    "touch_memo",
]

c = mcp_memos.c


def memo_lock_name(caller: Caller, token: str) -> str:
    """The advisory lock name of one owner's memos (identifiers cannot hold \x1f)."""
    return "\x1f".join(
        (caller.tenant, caller.user_id, caller.workflow_id or "", caller.session_id or "", token)
    )


def lock_memo_caller(caller: Caller, token: str) -> TextClause:
    """Serialise one owner's memo operations until the transaction ends (its cap, its use
    order and its remembered ends change together)."""
    # seed 3: a key space of its own beside writers (0) and idempotency keys (1)
    return text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 3))").bindparams(
        k=memo_lock_name(caller, token)
    )


def _person(table: Any, caller: Caller) -> ColumnElement[bool]:
    """The caller's columns other than tenant (which every statement tests first)."""
    t = table.c
    return and_(
        t.user_id == caller.user_id,
        t.workflow_id == (caller.workflow_id or ""),
        t.session_id == (caller.session_id or ""),
    )


def _who(table: Any, caller: Caller, token: str) -> ColumnElement[bool]:
    """The owner's columns other than tenant: the caller's and the token's."""
    return and_(_person(table, caller), table.c.token_sha256 == token)


def _of_caller(table: Any, caller: Caller, token: str) -> ColumnElement[bool]:
    return and_(table.c.tenant == caller.tenant, _who(table, caller, token))


def _idle(table: Any, now: float, idle_s: float) -> ColumnElement[bool]:
    last_used: ColumnElement[float] = table.c.last_used
    return literal(now, Double) - last_used > literal(idle_s, Double)


def _next_touched(caller: Caller, token: str) -> ScalarSelect[Any]:
    """One above the owner's highest use order: this memo becomes the most recently used."""
    m2 = mcp_memos.alias("m2")
    return (
        select(func.coalesce(func.max(m2.c.touched), 0) + 1)
        .where(_of_caller(m2, caller, token))
        .scalar_subquery()
    )


def next_touched(caller: Caller, token: str) -> Select[Any]:
    """One above the owner's highest use order (read before :func:`insert_memo`, under the
    caller's memo lock)."""
    return select(func.coalesce(func.max(mcp_memos.c.touched), 0) + 1).where(
        _of_caller(mcp_memos, caller, token)
    )


def insert_memo(
    caller: Caller, token: str, handle_sha256: str, state: str, now: float, touched: int
) -> Insert:
    """A new open memo of ``caller`` holding ``token``, the most recently used (``touched``
    from :func:`next_touched`: Citus refuses a subquery inside ``INSERT ... VALUES``, and would
    run an ``INSERT ... SELECT`` with an aggregate as a COPY, which row-level security refuses)."""
    return insert(mcp_memos).values(
        tenant=caller.tenant,
        handle_sha256=handle_sha256,
        user_id=caller.user_id,
        workflow_id=caller.workflow_id or "",
        session_id=caller.session_id or "",
        token_sha256=token,
        state=state,
        last_used=now,
        touched=touched,
    )


def expire_idle_memos(caller: Caller, token: str, now: float, idle_s: float, why: str) -> Update:
    """End every open memo of ``caller`` and ``token`` idle longer than ``idle_s``: notes dropped, ``why``
    kept. Idempotent."""
    return (
        update(mcp_memos)
        .where(
            _of_caller(mcp_memos, caller, token),
            c.ended_why.is_(None),
            _idle(mcp_memos, now, idle_s),
        )
        .values(state=None, ended_why=why, ended_at=now)
    )


def close_memos_over_cap(caller: Caller, token: str, keep: int, now: float, why: str) -> Update:
    """End the open memos of ``caller`` and ``token`` beyond the ``keep`` most recently used."""
    m2 = mcp_memos.alias("m2")
    over = (
        select(m2.c.handle_sha256)
        .where(_of_caller(m2, caller, token), m2.c.ended_why.is_(None))
        .order_by(m2.c.touched.desc())
        .offset(keep)
    )
    return (
        update(mcp_memos)
        .where(
            _of_caller(mcp_memos, caller, token),
            c.ended_why.is_(None),
            c.handle_sha256.in_(over),
        )
        .values(state=None, ended_why=why, ended_at=now)
    )


def forget_ended_memos(caller: Caller, token: str, keep: int) -> Delete:
    """Forget the ended memos of ``caller`` and ``token`` beyond the ``keep`` that ended last (ends in one
    statement are ordered by use: the least recently used ended first)."""
    m2 = mcp_memos.alias("m2")
    older = (
        select(m2.c.handle_sha256)
        .where(_of_caller(m2, caller, token), m2.c.ended_why.is_not(None))
        .order_by(m2.c.ended_at.desc(), m2.c.touched.desc())
        .offset(keep)
    )
    return delete(mcp_memos).where(
        _of_caller(mcp_memos, caller, token),
        c.ended_why.is_not(None),
        c.handle_sha256.in_(older),
    )


def memo_for_update(caller: Caller, token: str, handle_sha256: str) -> Select[Any]:
    """The memo of ``caller`` and ``token`` with this digest (state, ended_why), locked until
    the transaction ends; no row for another owner's digest."""
    return (
        select(c.state, c.ended_why)
        .where(
            c.tenant == caller.tenant,
            c.handle_sha256 == handle_sha256,
            _who(mcp_memos, caller, token),
        )
        .with_for_update()
    )


def touch_memo(
    caller: Caller, token: str, handle_sha256: str, now: float, state: str | None
) -> Update:
    """Restart the memo's idle timer and make it the owner's most recently used; store
    ``state`` unless None (the notes did not change)."""
    values: dict[str, Any] = {"last_used": now, "touched": _next_touched(caller, token)}
    if state is not None:
        values["state"] = state
    return (
        update(mcp_memos)
        .where(c.tenant == caller.tenant, c.handle_sha256 == handle_sha256)
        .values(**values)
    )


def discard_memo(caller: Caller, token: str, handle_sha256: str) -> Delete:
    """Delete the memo of ``caller`` and ``token`` unless it has ended (an ended memo keeps saying why).
    Idempotent."""
    return delete(mcp_memos).where(
        c.tenant == caller.tenant,
        c.handle_sha256 == handle_sha256,
        _who(mcp_memos, caller, token),
        c.ended_why.is_(None),
    )


def sweep_abandoned_memos(tenant: str, before: float, limit: int) -> Delete:
    """Delete up to ``limit`` memos of ``tenant`` last used before ``before``, open or ended,
    skipping rows another transaction holds (a sweep never waits, so it cannot deadlock)."""
    m2 = mcp_memos.alias("m2")
    old = (
        select(m2.c.handle_sha256)
        .where(m2.c.tenant == tenant, m2.c.last_used < before)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return delete(mcp_memos).where(c.tenant == tenant, c.handle_sha256.in_(old))


def count_open_memos(caller: Caller, token: str | None, now: float, idle_s: float) -> Select[Any]:
    """How many memos of ``caller`` (held by ``token``, or by any token when None) are open:
    not ended, not idle longer than ``idle_s``."""
    owner = (
        _of_caller(mcp_memos, caller, token)
        if token is not None
        else and_(c.tenant == caller.tenant, _person(mcp_memos, caller))
    )
    return (
        select(func.count())
        .select_from(mcp_memos)
        .where(owner, c.ended_why.is_(None), ~_idle(mcp_memos, now, idle_s))
    )


def count_open_memos_of_all(now: float, idle_s: float) -> Select[Any]:
    """:func:`count_open_memos` over every caller of every tenant (a maintenance
    transaction)."""
    return (
        select(func.count())
        .select_from(mcp_memos)
        .where(c.ended_why.is_(None), ~_idle(mcp_memos, now, idle_s))
    )
