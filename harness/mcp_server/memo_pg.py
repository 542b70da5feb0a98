"""RecallSet memos in PostgreSQL, shared by the MCP server's worker processes.

The same rules as the in-process book (:class:`~harness.mcp_server.memos.RecallSets`), kept
in the UNLOGGED table ``mcp_memos`` (migration 0008) instead of process memory: a caller's next
request may land on another worker. Each call is one named store operation (``memo_open``,
``memo_use``, ``memo_discard``, ``memo_count``): one transaction on the primary, under the
tenant's row-level security, serialised with the owner's other memo calls. A row holds the
SHA-256 of its handle (never the handle), the owner's caller and :func:`~harness.mcp_server.memos.token_key`
of its token (never the token), and the memo's
:meth:`~harness.recallset.RecallSet.to_state` as JSON text.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import TypeVar, cast

from harness.mcp_server.memos import (
    MemoLimits,
    MemoOwner,
    cap_reason,
    idle_reason,
    memo_expired,
    memo_not_found,
    mint_handle,
)
from harness.memory import AsyncMemoryStore
from harness.memory.domain.memos import MemoPolicy
from harness.recallset import RecallSet

__all__ = [
    "DEFAULT_RETENTION_S",
    "SWEEP_BATCH",
    "PostgresMemoBook",
    "dump_state",
    "editing",
    "handle_digest",
    "memo_policy",
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


def memo_policy(limits: MemoLimits) -> MemoPolicy:
    """The store's rules for one memo call, from the server's limits."""
    return MemoPolicy(
        idle_s=limits.idle_s,
        idle_reason=idle_reason(limits),
        max_memos=limits.max_memos_per_caller,
        cap_reason=cap_reason(limits),
        max_ended=limits.max_ended_per_caller,
        sweep_batch=SWEEP_BATCH,
    )


def editing(action: Callable[[RecallSet], T]) -> Callable[[str], tuple[T, str]]:
    """``action`` on a memo's stored state: the state loaded, acted on and dumped again."""

    def edit(state: str) -> tuple[T, str]:
        rs = RecallSet.from_state(json.loads(state))
        value = action(rs)
        return value, dump_state(rs)

    return edit


class PostgresMemoBook:
    """Memos in PostgreSQL (the table ``mcp_memos``): for several server processes.

    Observably the same as :class:`~harness.mcp_server.memo_book.LocalMemoBook` over
    :class:`~harness.mcp_server.memos.RecallSets` with the same limits and clock, except:

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

    async def open(self, owner: MemoOwner) -> str:
        """Mint a handle for a new, empty memo of ``owner`` (one transaction). Not
        idempotent; ends the owner's idle memos and closes its least recently used over the
        cap, and sweeps abandoned rows of the tenant (see the class)."""
        handle = mint_handle()
        state = dump_state(RecallSet(max_items=self._limits.max_items))
        now = self._now()
        sweep_before = now - self._limits.idle_s - self.retention_s
        await self.store.memo_open(
            owner.caller,
            handle_digest(handle),
            state,
            token=owner.token,
            now=now,
            policy=memo_policy(self._limits),
            sweep_before=sweep_before,
        )
        return handle

    async def use(self, handle: str, owner: MemoOwner, action: Callable[[RecallSet], T]) -> T:
        """Run ``action`` on ``owner``'s memo ``handle`` in one transaction holding the row
        (calls on one memo, from any worker, run one at a time) and store what it changed;
        restarts the memo's idle timer.

        Raises:
            MemoExpired: the memo was this owner's but has ended (idle, or closed by the cap);
                an idle memo's end is committed before this is raised.
            MemoNotFound: never opened by this owner (including another caller's handle, or
                one opened with another token of the same caller).
            Exception: whatever ``action`` raised (its changes are not stored).
        """
        used = await self.store.memo_use(
            owner.caller,
            handle_digest(handle),
            editing(action),
            token=owner.token,
            now=self._now(),
            policy=memo_policy(self._limits),
        )
        # committed: the idle ends and the refreshed timer stay, whatever the answer
        if not used.found:
            raise memo_not_found(handle)
        if used.ended_why is not None:
            raise memo_expired(handle, used.ended_why)
        if used.error is not None:
            raise used.error
        return cast(T, used.value)

    async def discard(self, handle: str, owner: MemoOwner) -> None:
        """Delete ``owner``'s memo ``handle`` unless it has ended (an ended memo keeps
        saying why, as in process). Idempotent."""
        await self.store.memo_discard(owner.caller, handle_digest(handle), token=owner.token)

    async def open_count(self, owner: MemoOwner | None = None) -> int:
        """Open memos (not ended, not idle longer than ``idle_s``) of one owner, or of every
        owner of every tenant (a maintenance transaction). Read-only."""
        if owner is None:
            return await self.store.memo_count(now=self._now(), idle_s=self._limits.idle_s)
        return await self.store.memo_count(
            owner.caller, token=owner.token, now=self._now(), idle_s=self._limits.idle_s
        )
