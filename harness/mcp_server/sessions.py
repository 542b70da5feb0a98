"""One RecallSet per MCP session and caller; gone when the session goes."""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from typing import Any

from harness.mcp_server.identity import Identity
from harness.recallset import RecallSet

__all__ = ["RecallSets"]


class RecallSets:
    """Session-scoped RecallSets.

    A session is a live connection object (stdio, handshake-era HTTP, in-process clients):
    its RecallSet is cleared the moment the connection is released. HTTP sessions known only
    by their ``Mcp-Session-Id`` expire after ``idle_s`` or when more than ``max_sessions``
    are open (least recently used first). Every key also carries the caller's identity, so
    two callers never share one.
    """

    def __init__(self, max_items: int = 50, idle_s: float = 3600.0, max_sessions: int = 1000):
        self.max_items = max_items
        self.idle_s = idle_s
        self.max_sessions = max_sessions
        self._by_object: weakref.WeakKeyDictionary[Any, dict[Identity, RecallSet]] = (
            weakref.WeakKeyDictionary()
        )
        self._by_id: OrderedDict[tuple[str, Identity], tuple[float, RecallSet]] = OrderedDict()
        self._lock = threading.Lock()

    def for_connection(self, connection: Any, identity: Identity) -> RecallSet:
        """The RecallSet of this connection and caller (created on first use)."""
        with self._lock:
            per_caller = self._by_object.get(connection)
            if per_caller is None:
                per_caller = {}
                self._by_object[connection] = per_caller
                weakref.finalize(connection, _clear_all, per_caller)
            if identity not in per_caller:
                per_caller[identity] = RecallSet(max_items=self.max_items)
            return per_caller[identity]

    def for_session_id(self, session_id: str, identity: Identity) -> RecallSet:
        """The RecallSet of an HTTP session id and caller, refreshing its idle timer."""
        now = time.monotonic()
        key = (session_id, identity)
        with self._lock:
            self._expire(now)
            _, rs = self._by_id.pop(key, (now, RecallSet(max_items=self.max_items)))
            self._by_id[key] = (now, rs)
            while len(self._by_id) > self.max_sessions:
                _, (_, old) = self._by_id.popitem(last=False)
                old.clear()
            return rs

    def _expire(self, now: float) -> None:
        for key in [k for k, (seen, _) in self._by_id.items() if now - seen > self.idle_s]:
            self._by_id.pop(key)[1].clear()

    def open_count(self) -> int:
        """How many RecallSets are alive (for tests and status)."""
        with self._lock:
            return sum(len(v) for v in self._by_object.values()) + len(self._by_id)


def _clear_all(per_caller: dict[Identity, RecallSet]) -> None:
    for rs in per_caller.values():
        rs.clear()
    per_caller.clear()
