"""RecallSet memos for MCP clients, addressed by opaque handles and bound to their owner.

The stateless MCP protocol (2026-07-28) has no session: every request stands alone, so a
memo cannot hang off a connection. Instead ``recallset_open`` (or the first
``recallset_add``) mints a handle and every RecallSet tool names it. A handle is
``secrets.token_urlsafe`` (128 bits), so it cannot be guessed, and it only opens a memo for
its owner, the caller that opened it with the same bearer token (:class:`MemoOwner`): any other
caller, or the same user with another token, gets "not found", exactly as for a made-up handle.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.errors import HarnessError
from harness.memory.domain.caller import Caller
from harness.recallset import RecallSet

__all__ = [
    "HANDLE_PREFIX",
    "MemoExpired",
    "MemoLimits",
    "MemoNotFound",
    "MemoOwner",
    "RecallSets",
    "cap_reason",
    "idle_reason",
    "memo_expired",
    "memo_not_found",
    "mint_handle",
    "token_key",
]

HANDLE_PREFIX = "memo_"


def token_key(token_sha256: str) -> str:
    """What a memo keeps of the bearer token that opened it: a SHA-256 of the token file's
    digest under a label of its own, so the memo table holds neither the token nor the value
    the token file checks it against."""
    return hashlib.sha256(b"harness-memo-owner\x1f" + token_sha256.encode()).hexdigest()


@dataclass(frozen=True)
class MemoOwner:
    """Whom a memo belongs to: the verified caller and the credential it came with.

    ``token`` is :func:`token_key` of the bearer token over HTTP, so a second token of the
    same tenant and user never reaches the memo (nor anyone once the first token is revoked:
    it no longer verifies); over stdio it is "" (one launch configuration, one agent).
    """

    caller: Caller
    token: str

    @classmethod
    def local(cls, caller: Caller) -> MemoOwner:
        """The owner over stdio, where the launch configuration is the only credential."""
        return cls(caller, "")


class MemoNotFound(HarnessError):
    """No memo with this handle for this caller (never opened, or someone else's)."""


class MemoExpired(HarnessError):
    """The memo existed for this caller but was dropped (idle too long or over the cap)."""


@dataclass(frozen=True)
class MemoLimits:
    """Per-caller memo limits: open memos, notes per memo, characters per note, idle
    seconds, remembered ends. A caller holds at most ``max_memos_per_caller * max_items *
    max_note_chars`` characters (6.4 M by default)."""

    max_memos_per_caller: int = 16
    max_items: int = 50
    max_note_chars: int = 8000
    idle_s: float = 3600.0
    max_ended_per_caller: int = 256


def mint_handle() -> str:
    """A new memo handle: ``memo_`` and 128 random bits, URL-safe. Every memo book mints
    them here, so a handle looks the same wherever the memo lives."""
    return HANDLE_PREFIX + secrets.token_urlsafe(16)


def idle_reason(limits: MemoLimits) -> str:
    """Why a memo idle longer than ``limits.idle_s`` ended (shown inside :func:`memo_expired`)."""
    return f"idle for more than {limits.idle_s:.0f} s, it expired"


def cap_reason(limits: MemoLimits) -> str:
    """Why a memo closed for the per-caller cap ended (shown inside :func:`memo_expired`)."""
    return (
        f"closed because more than {limits.max_memos_per_caller} memos were "
        "open (least recently used first)"
    )


def memo_expired(handle: str, why: str) -> MemoExpired:
    """The error for a use of this caller's memo ``handle`` that ended because of ``why``."""
    return MemoExpired(
        f"memo {handle!r} has ended ({why}); its notes are gone. "
        "Call recallset_open (or recallset_add without a memo) for a new one."
    )


def memo_not_found(handle: str) -> MemoNotFound:
    """The error for a handle this caller never opened (made up, or another caller's)."""
    return MemoNotFound(
        f"no memo {handle!r} for this caller; use the handle recallset_open or "
        "recallset_add returned, or open a new memo"
    )


@dataclass
class _Memo:
    recallset: RecallSet
    last_used: float


@dataclass
class _Caller:
    memos: OrderedDict[str, _Memo] = field(default_factory=OrderedDict)
    # handle -> why it ended; lets a model tell "expired, open a new one" from a typo.
    ended: OrderedDict[str, str] = field(default_factory=OrderedDict)


class RecallSets:
    """All open memos of one server process, grouped by owner (caller and token).

    Memos idle longer than ``idle_s`` expire; opening more than ``max_memos_per_caller``
    drops that owner's least recently used memo. Nothing here is written anywhere. Safe to
    call from several threads.
    """

    def __init__(
        self, limits: MemoLimits | None = None, clock: Callable[[], float] = time.monotonic
    ):
        self.limits = limits or MemoLimits()
        self._clock = clock
        self._callers: dict[MemoOwner, _Caller] = {}
        self._lock = threading.Lock()

    def open(self, owner: MemoOwner) -> tuple[str, RecallSet]:
        """Mint a new handle and its empty memo for ``owner``. Not idempotent."""
        handle = mint_handle()
        now = self._clock()
        with self._lock:
            entry = self._callers.setdefault(owner, _Caller())
            for each in self._callers.values():  # few callers; keeps idle ones from lingering
                self._expire(each, now)
            memo = _Memo(RecallSet(max_items=self.limits.max_items), now)
            entry.memos[handle] = memo
            while len(entry.memos) > self.limits.max_memos_per_caller:
                old_handle, old = entry.memos.popitem(last=False)
                old.recallset.clear()
                self._remember_end(entry, old_handle, cap_reason(self.limits))
            return handle, memo.recallset

    def get(self, handle: str, owner: MemoOwner) -> RecallSet:
        """The memo ``handle`` of ``owner``, refreshing its idle timer.

        Raises:
            MemoExpired: it was this owner's but has expired or was closed by the cap.
            MemoNotFound: never opened by this owner (including another caller's handle, or
                one opened with another token of the same caller).
        """
        now = self._clock()
        with self._lock:
            entry = self._callers.get(owner)
            if entry is not None:
                self._expire(entry, now)
                memo = entry.memos.get(handle)
                if memo is not None:
                    memo.last_used = now
                    entry.memos.move_to_end(handle)
                    return memo.recallset
                why = entry.ended.get(handle)
                if why is not None:
                    raise memo_expired(handle, why)
        raise memo_not_found(handle)

    def discard(self, handle: str, owner: MemoOwner) -> None:
        """Forget ``owner``'s memo ``handle`` without a trace (an open that did not take).
        Idempotent."""
        with self._lock:
            entry = self._callers.get(owner)
            if entry is not None and (memo := entry.memos.pop(handle, None)) is not None:
                memo.recallset.clear()

    def _expire(self, entry: _Caller, now: float) -> None:
        # memos are kept in least-recently-used order, so stale ones sit at the front
        while entry.memos:
            handle, memo = next(iter(entry.memos.items()))
            if now - memo.last_used <= self.limits.idle_s:
                break
            entry.memos.popitem(last=False)
            memo.recallset.clear()
            self._remember_end(entry, handle, idle_reason(self.limits))

    def _remember_end(self, entry: _Caller, handle: str, why: str) -> None:
        entry.ended[handle] = why
        while len(entry.ended) > self.limits.max_ended_per_caller:
            entry.ended.popitem(last=False)

    def sweep(self) -> int:
        """Expire idle memos of every owner now; returns how many remain open."""
        now = self._clock()
        with self._lock:
            for entry in self._callers.values():
                self._expire(entry, now)
            return sum(len(e.memos) for e in self._callers.values())

    def open_count(self, owner: MemoOwner | None = None) -> int:
        """Open memos (of one owner, or of all), for tests and status; does not expire."""
        with self._lock:
            if owner is not None:
                entry = self._callers.get(owner)
                return 0 if entry is None else len(entry.memos)
            return sum(len(e.memos) for e in self._callers.values())
