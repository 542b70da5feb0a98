"""The shared memo table (``mcp_memos``, UNLOGGED): one memo call, one transaction.

A memo's owner is a caller and a ``token`` (the MCP server's hash of the bearer token's
identity, '' over stdio): every call names both, and another token of the same caller finds
nothing. Each call first locks the owner's memos (an advisory lock) and ends the idle ones, so
a cap, an idle expiry or a concurrent use sees what the previous call left. A row holds the
SHA-256 of its handle and the memo's state as JSON text; the store never reads the state itself, the
caller's ``edit`` does. Plans for both facades.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Select

from harness.memory.domain.caller import Caller
from harness.memory.domain.memos import MemoPolicy, MemoUse
from harness.memory.store.base import StoreBase
from harness.memory.store.executors import Op
from harness.memory.store.plans import Plan, in_transaction
from harness.memory.store.sql import memos as memo_sql

__all__ = ["memo_count", "memo_discard", "memo_open", "memo_use"]

T = TypeVar("T")


def _settle(caller: Caller, token: str, now: float, policy: MemoPolicy) -> Op[None]:
    """Lock the owner's memos and end the idle ones (the owner's every call does, first)."""
    yield memo_sql.lock_memo_caller(caller, token)
    yield memo_sql.expire_idle_memos(caller, token, now, policy.idle_s, policy.idle_reason)


def memo_open(
    store: StoreBase,
    caller: Caller,
    digest: str,
    state: str,
    *,
    token: str,
    now: float,
    policy: MemoPolicy,
    sweep_before: float,
) -> Plan[None]:
    """Insert the new memo of ``caller`` and ``token`` (handle digest ``digest``, JSON
    ``state``), then close the
    least recently used over the cap, then sweep up to ``policy.sweep_batch`` rows of the
    tenant last used before ``sweep_before``. Not idempotent (a digest is new each time).

    The sweep comes last and skips locked rows: a transaction holding rows of other callers
    never waits afterwards, so two opens sweeping each other's rows cannot deadlock.
    """
    op = _open(caller, token, digest, state, now, policy, sweep_before)
    yield from in_transaction("open memo", op, caller.tenant)


def _open(
    caller: Caller,
    token: str,
    digest: str,
    state: str,
    now: float,
    policy: MemoPolicy,
    sweep_before: float,
) -> Op[None]:
    yield from _settle(caller, token, now, policy)
    touched = (yield memo_sql.next_touched(caller, token)).scalar_one()
    yield memo_sql.insert_memo(caller, token, digest, state, now, int(touched))
    yield memo_sql.close_memos_over_cap(caller, token, policy.max_memos, now, policy.cap_reason)
    yield memo_sql.forget_ended_memos(caller, token, policy.max_ended)
    yield memo_sql.sweep_abandoned_memos(caller.tenant, sweep_before, policy.sweep_batch)


def memo_use(
    store: StoreBase,
    caller: Caller,
    digest: str,
    edit: Callable[[str], tuple[T, str]],
    *,
    token: str,
    now: float,
    policy: MemoPolicy,
) -> Plan[MemoUse[T]]:
    """Run ``edit(state)`` on the memo ``digest`` of ``caller`` and ``token`` (another owner's
    digest is not found) in one transaction holding its
    row, storing the state it returns when changed; restarts the memo's idle timer even when
    ``edit`` raises (its error is returned, not raised, once that is committed)."""
    return (
        yield from in_transaction(
            "use memo", _use(caller, token, digest, edit, now, policy), caller.tenant
        )
    )


def _use(
    caller: Caller,
    token: str,
    digest: str,
    edit: Callable[[str], tuple[T, str]],
    now: float,
    policy: MemoPolicy,
) -> Op[MemoUse[T]]:
    yield from _settle(caller, token, now, policy)
    yield memo_sql.forget_ended_memos(caller, token, policy.max_ended)
    row = (yield memo_sql.memo_for_update(caller, token, digest)).one_or_none()
    if row is None:
        return MemoUse(found=False)
    if row.ended_why is not None:
        return MemoUse(found=True, ended_why=row.ended_why)
    try:
        value, state = edit(row.state)
    except Exception as exc:  # the caller's action: returned once the restarted timer commits
        yield memo_sql.touch_memo(caller, token, digest, now, None)
        return MemoUse(found=True, error=exc)
    yield memo_sql.touch_memo(caller, token, digest, now, None if state == row.state else state)
    return MemoUse(found=True, value=value)


def memo_discard(store: StoreBase, caller: Caller, digest: str, *, token: str) -> Plan[None]:
    """Delete the memo ``digest`` of ``caller`` and ``token`` unless it has ended. Idempotent."""
    yield from in_transaction("discard memo", _discard(caller, token, digest), caller.tenant)


def _discard(caller: Caller, token: str, digest: str) -> Op[None]:
    yield memo_sql.discard_memo(caller, token, digest)


def memo_count(
    store: StoreBase,
    caller: Caller | None = None,
    *,
    token: str | None = None,
    now: float,
    idle_s: float,
) -> Plan[int]:
    """Open memos (not ended, not idle longer than ``idle_s``) of one caller (held by
    ``token``, or by any token when None), or of every caller of every tenant (a maintenance
    transaction). Read-only."""
    if caller is None:
        op = _count(memo_sql.count_open_memos_of_all(now, idle_s))
        return (yield from in_transaction("count memos", op, admits="everyone"))
    op = _count(memo_sql.count_open_memos(caller, token, now, idle_s))
    return (yield from in_transaction("count memos", op, caller.tenant))


def _count(stmt: Select[Any]) -> Op[int]:
    return int((yield stmt).scalar_one())
