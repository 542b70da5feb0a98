"""Values of the store's listing operations (the console's queue and browser, the LangGraph
mapping's listing, the cleanup queue): filters, cursors and what a page holds. Pure."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.memory.domain.types import Kind, Memory, Scope, Status

__all__ = [
    "Activity",
    "BrowseFilter",
    "CleanupOutcome",
    "CleanupTask",
    "Cursor",
    "PendingReview",
]

#: A keyset position in a listing: (created_at, id) of the last row of the previous page.
Cursor = tuple[datetime, uuid.UUID]


@dataclass(frozen=True)
class BrowseFilter:
    """What a listing narrows a tenant's memories to; None means any."""

    scope: Scope | None = None
    scope_id: str | None = None
    kind: Kind | None = None
    status: Status | None = None
    text: str | None = None


@dataclass(frozen=True)
class PendingReview:
    """A pending memory with what an admin needs to decide: the active item of its key it
    would replace, and active memories of its scope that look alike (with similarity)."""

    memory: Memory
    would_supersede: Memory | None
    similar: list[tuple[Memory, float]] = field(default_factory=list)


@dataclass(frozen=True)
class Activity:
    """What the console's status page reads in one transaction: memory counts by tenant,
    scope, kind and status; open cleanups per tenant; writes per day per tenant; the schema
    revision and the model recorded as having built the vectors."""

    counts: list[dict[str, Any]]
    cleanups: dict[str, int]
    per_day: dict[str, list[dict[str, Any]]]
    revision: str | None
    stored_model: str | None


@dataclass(frozen=True)
class CleanupTask:
    """A queued cleanup: delete a workflow's memories and runs, or a session's memories."""

    id: str
    tenant: str
    target: str
    target_id: str
    created_at: datetime


@dataclass(frozen=True)
class CleanupOutcome:
    """What one reconcile step did: ``task`` is None when nothing was due; ``error`` is why
    the task failed (it is then deferred until ``retry_at``)."""

    task: CleanupTask | None
    attempts: int = 0
    error: str | None = None
    retry_at: datetime | None = None

    @property
    def done(self) -> bool:
        return self.task is not None and self.error is None
