"""Clocks: the Protocol and the system clock. Tests inject a fixed or stepping clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

__all__ = ["Clock", "FixedClock", "SystemClock"]


class Clock(Protocol):
    """Source of the current time (timezone-aware)."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A settable clock for tests and replays."""

    def __init__(self, at: datetime):
        self.at = at

    def now(self) -> datetime:
        return self.at
