"""Domain values of the MemoryStore: enums, candidates, memories and recall requests.

All values are frozen pydantic models. Constructing one with bad input raises
:class:`harness.errors.InvalidInput` naming the field; nothing else happens (no IO).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.errors import InvalidInput

__all__ = [
    "SCOPE_BREADTH",
    "Approval",
    "FrozenModel",
    "Kind",
    "Memory",
    "MemoryCandidate",
    "Origin",
    "RecallRequest",
    "Scope",
    "Source",
    "Status",
]


class Scope(StrEnum):
    """Who may read an item. Narrowest first: session < workflow < user < platform."""

    SESSION = "session"
    WORKFLOW = "workflow"
    USER = "user"
    PLATFORM = "platform"


#: Breadth of each scope: 0 is the narrowest.
SCOPE_BREADTH: dict[Scope, int] = {
    Scope.SESSION: 0,
    Scope.WORKFLOW: 1,
    Scope.USER: 2,
    Scope.PLATFORM: 3,
}


class Kind(StrEnum):
    """What an item is; constraints follow different precedence (SPEC section 4)."""

    CONSTRAINT = "constraint"
    PREFERENCE = "preference"
    LESSON = "lesson"
    FACT = "fact"
    DECISION = "decision"


class Status(StrEnum):
    """Lifecycle state of a stored memory."""

    ACTIVE = "active"
    PENDING_APPROVAL = "pending_approval"
    REJECTED = "rejected"
    SUPERSEDED = "superseded"


class Origin(StrEnum):
    """Where a candidate came from; verdict/completion are automatic, admin/api deliberate."""

    VERDICT = "verdict"
    COMPLETION = "completion"
    ADMIN = "admin"
    API = "api"


AUTOMATIC_ORIGINS = frozenset({Origin.VERDICT, Origin.COMPLETION})


class FrozenModel(BaseModel):
    """Base of every value type: frozen, no extra fields, bad input -> ``InvalidInput``."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidInput.from_pydantic(type(self).__name__, exc) from exc


def _require_aware(value: datetime | None) -> datetime | None:
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise ValueError("datetime must be timezone-aware (naive datetimes are ambiguous)")
    return value


class Source(FrozenModel):
    """Provenance of a memory: origin, and the run and verdict that produced it."""

    origin: Origin = Origin.API
    run_id: str | None = Field(default=None, max_length=200)
    verdict_id: str | None = Field(default=None, max_length=200)


class MemoryCandidate(FrozenModel):
    """Something proposed for long-term storage; it becomes a :class:`Memory` via ``write``.

    ``scope_id`` is required for session, workflow and user scopes and must be empty for
    platform. ``context`` is optional retrieval context (for a lesson: the task input that
    taught it). Content length against the configured maximum is checked by the store.
    """

    tenant: str = Field(min_length=1, max_length=200)
    scope: Scope
    scope_id: str | None = Field(default=None, max_length=200)
    kind: Kind
    key: str | None = Field(default=None, min_length=1, max_length=200)
    content: str
    context: str | None = Field(default=None, max_length=4000)
    priority: int = Field(default=0, ge=-1_000_000, le=1_000_000)
    expires_at: datetime | None = None
    source: Source = Field(default_factory=Source)

    @field_validator("tenant", "scope_id", "key", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("tenant")
    @classmethod
    def _tenant_not_blank(cls, value: str) -> str:
        if not value:
            raise ValueError("tenant must not be empty")
        return value

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be empty")
        return value

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return _require_aware(value)

    @model_validator(mode="after")
    def _scope_id_matches_scope(self) -> MemoryCandidate:
        if self.scope is Scope.PLATFORM:
            if self.scope_id:
                raise ValueError("scope_id must be empty for platform scope")
        elif not self.scope_id:
            raise ValueError(f"scope_id is required for {self.scope.value} scope")
        return self

    @property
    def scope_key(self) -> str:
        """``scope_id`` as stored: the empty string for platform."""
        return self.scope_id or ""


class Approval(FrozenModel):
    """The admin decision on a pending platform memory."""

    decision: Literal["approved", "rejected"]
    by: str
    at: datetime
    reason: str | None = None


class Memory(FrozenModel):
    """A stored memory, as read back from the store."""

    id: uuid.UUID
    tenant: str
    scope: Scope
    scope_id: str
    kind: Kind
    key: str | None
    content: str
    context: str | None
    priority: int
    status: Status
    source: Source
    created_at: datetime
    expires_at: datetime | None
    supersedes: uuid.UUID | None
    superseded_by: uuid.UUID | None
    fingerprint: str
    approval: Approval | None = None
    has_embedding: bool = False


class RecallRequest(FrozenModel):
    """What a run may read and how much context it can afford.

    Identity (tenant, user, workflow, session) comes from the caller's verified context,
    never from the query text.
    """

    tenant: str = Field(min_length=1, max_length=200)
    user_id: str = Field(min_length=1, max_length=200)
    workflow_id: str | None = Field(default=None, min_length=1, max_length=200)
    session_id: str | None = Field(default=None, min_length=1, max_length=200)
    query: str = Field(default="", max_length=20_000)
    budget_chars: int = Field(default=2000, ge=0, le=1_000_000)
    max_items: int = Field(default=20, ge=0, le=10_000)
    max_item_chars: int = Field(default=500, ge=1, le=1_000_000)
    now: datetime | None = None
    strict: bool = False
    #: Probability a relevance-ranked item needs to be recalled (None: the judge's default).
    relevance_threshold: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)

    @field_validator("now")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return _require_aware(value)
