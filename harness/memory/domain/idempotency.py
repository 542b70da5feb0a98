"""What an idempotent request finds in the store, in the store's terms (no HTTP here).

The store runs an attempt once per (tenant, key) and records its :class:`Answer` as given;
the caller (e.g. the ingest endpoint) decides what a code means. Pure values, no IO.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["Answer", "IdempotencyOutcome", "Idempotent"]


class IdempotencyOutcome(Enum):
    """``NEW``: this call ran the attempt. ``REPLAY``: an earlier call with the same body did;
    its answer is returned. ``CONFLICT``: the key was used with another body; nothing ran."""

    NEW = "new"
    REPLAY = "replay"
    CONFLICT = "conflict"


@dataclass(frozen=True)
class Answer:
    """What an attempt answered: a caller-defined code and a JSON payload, stored as given.

    ``record=False`` rolls the attempt back and keeps no record, so a retry runs it again
    (e.g. a transient failure the caller reports without raising).
    """

    code: int
    payload: dict[str, Any] = field(default_factory=dict)
    record: bool = True


@dataclass(frozen=True)
class Idempotent:
    """The result of an idempotent call: the outcome, and the answer (None on ``CONFLICT``)."""

    outcome: IdempotencyOutcome
    answer: Answer | None

    @property
    def replayed(self) -> bool:
        """True when the answer is an earlier call's."""
        return self.outcome is IdempotencyOutcome.REPLAY
