"""Values of the shared RecallSet memo table (the MCP server's worker processes): the rules
one memo call applies, and what a use found. Pure; the memo semantics live with the MCP
server, the rows in the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["MemoPolicy", "MemoUse"]

T = TypeVar("T")


@dataclass(frozen=True)
class MemoPolicy:
    """What every memo call of a caller enforces first: memos idle longer than ``idle_s``
    end (``idle_reason``); at most ``max_memos`` stay open (the least recently used close,
    ``cap_reason``); at most ``max_ended`` ended ones are remembered; an open sweeps up to
    ``sweep_batch`` abandoned rows of the tenant."""

    idle_s: float
    idle_reason: str
    max_memos: int
    cap_reason: str
    max_ended: int
    sweep_batch: int = 100


@dataclass(frozen=True)
class MemoUse(Generic[T]):
    """What a use found: ``found=False`` for a handle this caller never opened; ``ended_why``
    for an ended memo; else the action's ``value`` or the ``error`` it raised (the timer was
    restarted either way, the notes stored only when it returned)."""

    found: bool
    ended_why: str | None = None
    value: T | None = None
    error: Exception | None = None
