"""How the console words values for people: dates, relevance, trace lines. Pure."""

from __future__ import annotations

from datetime import UTC, datetime

from harness.memory.domain.recall import RecalledItem
from harness.memory.domain.types import Kind

__all__ = ["relevance_label", "when"]

#: Kinds recall always offers, whatever the query (SPEC section 5: candidates).
_ALWAYS_KINDS = (Kind.CONSTRAINT, Kind.PREFERENCE)


def when(at: datetime | None, *, seconds: bool = True) -> str:
    """``2026-03-02 09:30:17 UTC`` (no microseconds, no ``T``); "—" for None."""
    if at is None:
        return "—"
    shown = at.astimezone(UTC) if at.tzinfo is not None else at
    return shown.strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC")


def relevance_label(item: RecalledItem) -> str:
    """The relevance of a kept item, or why it needed none: constraints and preferences, and
    a narrow scope's lessons, facts and decisions, are included whatever the query, and a
    score of 0.000 would read as "irrelevant"."""
    if item.relevance > 0.0:
        return f"{item.relevance:.3f}"
    kind = item.memory.kind
    if kind in _ALWAYS_KINDS:
        return f"always: {kind.value}"
    return f"always: {item.memory.scope.value} scope"
