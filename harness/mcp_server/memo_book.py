"""Where the MCP server keeps RecallSet memos: one interface, kept in the process or in PostgreSQL.

One server process keeps its memos in memory (:class:`LocalMemoBook`, nothing written
anywhere). Several worker processes behind one port cannot: a caller's next request may land
on another worker, so they share the memos through the database
(:class:`~harness.mcp_server.memo_pg.PostgresMemoBook`). Both keep the same rules
(:class:`~harness.mcp_server.memos.MemoLimits`): a handle opens a memo only for its owner (the
caller that opened it, with the same token: :class:`~harness.mcp_server.memos.MemoOwner`), idle
memos expire, an owner's least recently used memo closes past the cap, and an ended memo says
why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from harness.mcp_server.memos import MemoLimits, MemoOwner, RecallSets
from harness.recallset import RecallSet

__all__ = ["LocalMemoBook", "MemoBook"]

T = TypeVar("T")


class MemoBook(Protocol):
    """The RecallSet memos of the server's callers, addressed by opaque handles."""

    @property
    def limits(self) -> MemoLimits:
        """The per-caller limits this book enforces."""
        ...

    async def open(self, owner: MemoOwner) -> str:
        """Mint a handle for a new, empty memo of ``owner``. Not idempotent; may close the
        owner's least recently used memo (over the cap) and expire idle ones."""
        ...

    async def use(self, handle: str, owner: MemoOwner, action: Callable[[RecallSet], T]) -> T:
        """Run ``action`` on ``owner``'s memo ``handle`` and keep what it changed; refreshes
        the memo's idle timer. Calls on one memo run one at a time.

        Raises:
            MemoExpired: the memo was this owner's but has ended (idle, or closed by the cap).
            MemoNotFound: never opened by this owner (including another caller's handle, or
                one opened with another token of the same caller).
        """
        ...

    async def discard(self, handle: str, owner: MemoOwner) -> None:
        """Forget ``owner``'s memo ``handle`` without a trace (an open that did not take).
        Idempotent."""
        ...

    async def open_count(self, owner: MemoOwner | None = None) -> int:
        """Open memos (of one owner, or of all); for status and tests."""
        ...


class LocalMemoBook:
    """Memos in this process (:class:`RecallSets`): for a server that is one process."""

    def __init__(self, recallsets: RecallSets) -> None:
        self.recallsets = recallsets

    @property
    def limits(self) -> MemoLimits:
        return self.recallsets.limits

    async def open(self, owner: MemoOwner) -> str:
        handle, _ = self.recallsets.open(owner)
        return handle

    async def use(self, handle: str, owner: MemoOwner, action: Callable[[RecallSet], T]) -> T:
        return action(self.recallsets.get(handle, owner))

    async def discard(self, handle: str, owner: MemoOwner) -> None:
        self.recallsets.discard(handle, owner)

    async def open_count(self, owner: MemoOwner | None = None) -> int:
        return self.recallsets.open_count(owner)
