"""Server-side console sessions: a random id in the cookie, everything else in memory.

The cookie carries nothing but an unguessable id, so there is nothing to sign or decrypt; a
session dies with the process, at its expiry, or when its admin token leaves the token file.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from harness.clock import Clock, SystemClock

__all__ = ["COOKIE_NAME", "Session", "SessionStore"]

COOKIE_NAME = "hm_console"


@dataclass
class Session:
    """One signed-in admin: which token opened it, its CSRF token, messages to show once."""

    sid: str
    token_sha256: str
    csrf: str
    expires_at: datetime
    flashes: list[tuple[str, str]] = field(default_factory=list)

    def flash(self, level: str, message: str) -> None:
        """Queue a message for the next page this session renders."""
        self.flashes.append((level, message))

    def take_flashes(self) -> list[tuple[str, str]]:
        """The queued messages, emptied."""
        out, self.flashes = self.flashes, []
        return out


class SessionStore:
    """Thread-safe map of session id -> :class:`Session` with a fixed lifetime."""

    def __init__(self, lifetime: timedelta = timedelta(hours=8), clock: Clock | None = None):
        self.lifetime = lifetime
        self.clock = clock or SystemClock()
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open(self, token_sha256: str) -> Session:
        """A new session for the admin whose token hashes to ``token_sha256``."""
        now = self.clock.now()
        session = Session(
            sid=secrets.token_urlsafe(32),
            token_sha256=token_sha256,
            csrf=secrets.token_urlsafe(32),
            expires_at=now + self.lifetime,
        )
        with self._lock:
            self._sessions = {k: s for k, s in self._sessions.items() if s.expires_at > now}
            self._sessions[session.sid] = session
        return session

    def get(self, sid: str | None) -> Session | None:
        """The live session with that id, or None (unknown or expired)."""
        if not sid:
            return None
        with self._lock:
            session = self._sessions.get(sid)
            if session is None:
                return None
            if session.expires_at <= self.clock.now():
                del self._sessions[sid]
                return None
            return session

    def close(self, sid: str) -> None:
        """Forget a session (sign out). Idempotent."""
        with self._lock:
            self._sessions.pop(sid, None)
