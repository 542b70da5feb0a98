"""RecallSet memos in PostgreSQL, shared by the MCP server's worker processes.

The same rules as the in-process book (:class:`~harness.mcp_server.sessions.RecallSets`), kept
in the UNLOGGED table ``mcp_memos`` (migration 0008) instead of process memory: a caller's next
request may land on another worker. Each call is one transaction on the primary, under the
tenant's row-level security, and serialised with the caller's other memo calls by an advisory
lock, so a cap, an idle expiry or a concurrent use sees what the previous call left. A row
holds the SHA-256 of its handle (never the handle) and the memo's
:meth:`~harness.recallset.RecallSet.to_state` as JSON text.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from harness.mcp_server.identity import Identity
from harness.mcp_server.sessions import (
    MemoLimits,
    cap_reason,
    idle_reason,
    memo_expired,
    memo_not_found,
    mint_handle,
)
from harness.memory.store import sql
from harness.memory.store.aio import AsyncMemoryStore
from harness.memory.store.executors import Op, run_async
from harness.recallset import RecallSet

__all__ = [
    "DEFAULT_RETENTION_S",
    "SWEEP_BATCH",
    "PostgresMemoBook",
    "dump_state",
    "handle_digest",
    "open_memo",
    "use_memo",
]

T = TypeVar("T")

#: How long after its idle expiry an abandoned memo's row is kept (it answers "ended, why"
#: until then, "not found" after): one day.
DEFAULT_RETENTION_S = 86400.0
#: The most abandoned rows one ``open`` deletes (the sweep stays cheap; the next open goes on).
SWEEP_BATCH = 100


def handle_digest(handle: str) -> str:
    """The SHA-256 (hex) of a handle, the only form the table keeps. Any string hashes, even
    one PostgreSQL could not store (a made-up handle must answer "not found", not fail)."""
    return hashlib.sha256(handle.encode("utf-8", "surrogatepass")).hexdigest()


def dump_state(rs: RecallSet) -> str:
    """``rs`` as the JSON text of a row. The encoder escapes NUL (``\\u0000``), which
    PostgreSQL text cannot hold; a note holding a lone surrogate (which UTF-8 cannot carry)
    makes the whole document ASCII-escaped instead."""
    state = rs.to_state()
    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(state, separators=(",", ":"))
    return text


@dataclass(frozen=True)
class _Outcome(Generic[T]):
    """What a use returns once its transaction has committed: a value, or an error to raise
    (the idle marks and the refreshed timer are kept either way)."""

    value: T | None = None
    error: Exception | None = None


def _settle(caller: Identity, now: float, limits: MemoLimits) -> Op[None]:
    """Lock the caller's memos and end the idle ones (the caller's every call does, first)."""
    yield sql.lock_memo_caller(caller)
    yield sql.expire_idle_memos(caller, now, limits.idle_s, idle_reason(limits))


def open_memo(
    caller: Identity,
    digest: str,
    state: str,
    now: float,
    limits: MemoLimits,
    sweep_before: float,
) -> Op[None]:
    """Insert ``caller``'s new memo, then close the least recently used over the cap, then
    sweep up to :data:`SWEEP_BATCH` rows of the tenant last used before ``sweep_before``.

    The sweep comes last and skips locked rows: a transaction holding rows of other callers
    never waits afterwards, so two opens sweeping each other's rows cannot deadlock.
    """
    yield from _settle(caller, now, limits)
    yield sql.insert_memo(caller, digest, state, now)
    yield sql.close_memos_over_cap(caller, limits.max_memos_per_caller, now, cap_reason(limits))
    yield sql.forget_ended_memos(caller, limits.max_ended_per_caller)
    yield sql.sweep_abandoned_memos(caller.tenant, sweep_before, SWEEP_BATCH)


def use_memo(
    caller: Identity,
    handle: str,
    now: float,
    limits: MemoLimits,
    action: Callable[[RecallSet], T],
) -> Op[_Outcome[T]]:
    """Run ``action`` on ``caller``'s memo ``handle`` and store what it changed.

    As the in-process book: the caller's idle memos end first; an unknown or foreign handle
    is "not found", an ended one says why; a use (even one whose action raises) restarts the
    idle timer. The notes are stored only when the action returned and changed them.
    """
    digest = handle_digest(handle)
    yield from _settle(caller, now, limits)
    yield sql.forget_ended_memos(caller, limits.max_ended_per_caller)
    row = (yield sql.memo_for_update(caller, digest)).one_or_none()
    if row is None:
        return _Outcome(error=memo_not_found(handle))
    if row.ended_why is not None:
        return _Outcome(error=memo_expired(handle, row.ended_why))
    rs = RecallSet.from_state(json.loads(row.state))
    try:
        value = action(rs)
    except Exception as exc:  # raised again once the restarted timer is committed
        yield sql.touch_memo(caller, digest, now, None)
        return _Outcome(error=exc)
    state = dump_state(rs)
    yield sql.touch_memo(caller, digest, now, None if state == row.state else state)
    return _Outcome(value=value)


class PostgresMemoBook:
    """Memos in PostgreSQL (the table ``mcp_memos``): for several server processes.

    Observably the same as :class:`~harness.mcp_server.memo_book.LocalMemoBook` over
    :class:`~harness.mcp_server.sessions.RecallSets` with the same limits and clock, except:

    * ``open`` also deletes (up to :data:`SWEEP_BATCH` per call) rows of its tenant last used
      more than ``idle_s + retention_s`` ago, open or ended, so callers who never come back
      leave nothing behind; such a handle then answers "not found" instead of "ended".
    * Idle memos of one caller end at that caller's next call (the in-process book also ends
      them when another caller opens a memo); :meth:`open_count` counts idle memos as ended.
    * A crash of PostgreSQL empties the table (UNLOGGED): every handle is then "not found", as
      after a restart of a one-process server.

    ``clock`` gives Unix seconds: every worker's clock must agree (the idle timer is shared).
    """

    def __init__(
        self,
        store: AsyncMemoryStore,
        limits: MemoLimits | None = None,
        clock: Callable[[], float] = time.time,
        *,
        retention_s: float = DEFAULT_RETENTION_S,
    ) -> None:
        self.store = store
        self._limits = limits or MemoLimits()
        self._clock = clock
        self.retention_s = retention_s

    @property
    def limits(self) -> MemoLimits:
        return self._limits

    def _now(self) -> float:
        return float(self._clock())

    async def open(self, caller: Identity) -> str:
        """Mint a handle for a new, empty memo of ``caller`` (one transaction). Not
        idempotent; ends the caller's idle memos and closes its least recently used over the
        cap, and sweeps abandoned rows of the tenant (see the class)."""
        handle = mint_handle()
        state = dump_state(RecallSet(max_items=self._limits.max_items))
        now = self._now()
        sweep_before = now - self._limits.idle_s - self.retention_s
        op = open_memo(caller, handle_digest(handle), state, now, self._limits, sweep_before)
        async with self.store.transaction("open memo", tenant=caller.tenant) as conn:
            await run_async(conn, op)
        return handle

    async def use(self, handle: str, caller: Identity, action: Callable[[RecallSet], T]) -> T:
        """Run ``action`` on ``caller``'s memo ``handle`` in one transaction holding the row
        (calls on one memo, from any worker, run one at a time) and store what it changed;
        restarts the memo's idle timer.

        Raises:
            MemoExpired: the memo was this caller's but has ended (idle, or closed by the cap);
                an idle memo's end is committed before this is raised.
            MemoNotFound: never opened by this caller (including another caller's handle).
            Exception: whatever ``action`` raised (its changes are not stored).
        """
        op = use_memo(caller, handle, self._now(), self._limits, action)
        async with self.store.transaction("use memo", tenant=caller.tenant) as conn:
            outcome = await run_async(conn, op)
        # committed: the idle ends and the refreshed timer stay, whatever the answer
        if outcome.error is not None:
            raise outcome.error
        return cast(T, outcome.value)

    async def discard(self, handle: str, caller: Identity) -> None:
        """Delete ``caller``'s memo ``handle`` unless it has ended (an ended memo keeps
        saying why, as in process). Idempotent."""
        async with self.store.transaction("discard memo", tenant=caller.tenant) as conn:
            await conn.execute(sql.discard_memo(caller, handle_digest(handle)))

    async def open_count(self, caller: Identity | None = None) -> int:
        """Open memos (not ended, not idle longer than ``idle_s``) of one caller, or of every
        caller of every tenant (a maintenance transaction). Read-only."""
        now, idle_s = self._now(), self._limits.idle_s
        if caller is None:
            async with self.store.maintenance("count memos") as conn:
                result = await conn.execute(sql.count_open_memos_of_all(now, idle_s))
        else:
            async with self.store.transaction("count memos", tenant=caller.tenant) as conn:
                result = await conn.execute(sql.count_open_memos(caller, now, idle_s))
        return int(result.scalar_one())
