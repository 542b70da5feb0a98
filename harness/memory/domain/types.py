"""Domain values of the MemoryStore: enums, candidates, memories and recall requests.

All values are frozen pydantic models. Constructing one with bad input raises
:class:`harness.errors.InvalidInput` naming the field; nothing else happens (no IO).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.errors import InvalidInput
from harness.identifiers import MAX_CONTENT_CEILING, identifier_problem, text_problem
from harness.memory.domain.caller import Caller
from harness.memory.domain.lookalike import imitates_header

__all__ = [
    "SCOPE_BREADTH",
    "Approval",
    "Caller",
    "CallerFields",
    "FrozenModel",
    "Kind",
    "Memory",
    "MemoryCandidate",
    "Origin",
    "RecallRequest",
    "Scope",
    "Source",
    "Status",
    "WorkflowDeleted",
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
    #: A lesson an admin took out of recall (proposed when it kept misleading or fading);
    #: reversible (``store.restore``).
    RETIRED = "retired"


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

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """Like pydantic's, but bad input raises ``InvalidInput`` naming the field."""
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise InvalidInput.from_pydantic(cls.__name__, exc) from exc

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        """Like pydantic's, but bad input raises ``InvalidInput`` naming the field."""
        try:
            return super().model_validate_json(json_data, **kwargs)
        except ValidationError as exc:
            raise InvalidInput.from_pydantic(cls.__name__, exc) from exc


# PostgreSQL's timestamptz holds years up to 294276, Python's datetime up to 9999; the bound
# keeps arithmetic on the value (e.g. a time-zone shift) inside both.
_LATEST = datetime(9999, 1, 1, tzinfo=UTC)
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)


def _require_aware(value: datetime | None) -> datetime | None:
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise ValueError("datetime must be timezone-aware (naive datetimes are ambiguous)")
    if value is not None and not _EARLIEST <= value < _LATEST:
        raise ValueError("datetime must fall between the years 1 and 9998")
    return value


def _enum_name(value: Any) -> Any:
    """Before-validator body for enums: the member or its name as text (pydantic would decode
    bytes)."""
    if not isinstance(value, str):
        raise ValueError(f"must be one of its names as text, not {type(value).__name__}")
    return value


def _not_a_number(value: Any) -> Any:
    """Before-validator body for datetimes: a number or a flag is not a date (pydantic would
    read ``0`` as 1970-01-01)."""
    if isinstance(value, (bool, int, float)):
        raise ValueError(
            "must be a timezone-aware datetime or an ISO 8601 string with a zone, "
            f"not {type(value).__name__}"
        )
    return value


def _identifier(value: str | None) -> str | None:
    """Field validator body: identity strings are refused, never silently normalised."""
    if value is None:
        return None
    problem = identifier_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _storable(value: str | None) -> str | None:
    """Field validator body: free text PostgreSQL can store (no NUL, no lone surrogates)."""
    if value is None:
        return None
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


class Source(FrozenModel):
    """Provenance of a memory: origin, and the run and verdict that produced it; for a memory
    extracted from a conversation of the archive, that conversation's id and the turn's."""

    origin: Origin = Origin.API
    run_id: StrictStr | None = Field(default=None, max_length=200)
    verdict_id: StrictStr | None = Field(default=None, max_length=200)
    conversation_id: StrictStr | None = Field(
        default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$"
    )
    turn_id: StrictStr | None = Field(
        default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$"
    )

    @field_validator("origin", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        return _enum_name(value)

    @field_validator("run_id", "verdict_id")
    @classmethod
    def _storable_ids(cls, value: str | None) -> str | None:
        return _storable(value)


class MemoryCandidate(FrozenModel):
    """Something proposed for long-term storage; it becomes a :class:`Memory` via ``write``.

    ``scope_id`` is required for session, workflow and user scopes and must be empty for
    platform. ``context`` is optional retrieval context (for a lesson: the task input that
    taught it). Content length against the configured maximum is checked by the store.
    """

    tenant: StrictStr = Field(min_length=1, max_length=200)
    scope: Scope
    scope_id: StrictStr | None = Field(default=None, max_length=200)
    kind: Kind
    key: StrictStr | None = Field(default=None, min_length=1, max_length=200)
    # a ceiling before any validator walks the text; the store's own limit is lower
    content: StrictStr = Field(max_length=MAX_CONTENT_CEILING)
    context: StrictStr | None = Field(default=None, max_length=4000)
    priority: StrictInt = Field(default=0, ge=-1_000_000, le=1_000_000)
    expires_at: datetime | None = None
    source: Source = Field(default_factory=Source)

    @field_validator("tenant", "key")
    @classmethod
    def _identity(cls, value: str | None) -> str | None:
        return _identifier(value)

    @field_validator("scope", "kind", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        return _enum_name(value)

    @field_validator("scope_id")
    @classmethod
    def _scope_identity(cls, value: str | None) -> str | None:
        # "" is how platform scope is stored; every other value follows the identity rule.
        return value if value == "" else _identifier(value)

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be empty")
        if imitates_header(value):
            # compared as a reader sees it: look-alike letters, invisible characters, other
            # brackets and bars, any line separator (harness.memory.domain.lookalike)
            raise ValueError("content must not imitate the recall item header '[scope kind |'")
        return _storable(value) or value

    @field_validator("context")
    @classmethod
    def _storable_context(cls, value: str | None) -> str | None:
        return _storable(value)

    @field_validator("expires_at", mode="before")
    @classmethod
    def _a_date(cls, value: Any) -> Any:
        return _not_a_number(value)

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


class WorkflowDeleted(FrozenModel):
    """What deleting a workflow removed: its memories (all statuses) and run records."""

    memories: int
    runs: int


_CALLER_FIELDS = ("tenant", "user_id", "workflow_id", "session_id")


class CallerFields(FrozenModel):
    """The identity fields of a :class:`Caller`, flat (the stable keywords), for values that
    carry one: ``tenant``, ``user_id``, optional ``workflow_id`` and ``session_id``.

    Build from a caller with ``for_caller(caller, ...)`` (or ``caller=`` in a mapping);
    ``.caller`` gives it back.
    """

    tenant: StrictStr = Field(min_length=1, max_length=200)
    user_id: StrictStr = Field(min_length=1, max_length=200)
    workflow_id: StrictStr | None = Field(default=None, min_length=1, max_length=200)
    session_id: StrictStr | None = Field(default=None, min_length=1, max_length=200)

    @model_validator(mode="before")
    @classmethod
    def _from_caller(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "caller" not in data:
            return data
        caller = data["caller"]
        if not isinstance(caller, Caller):
            raise ValueError("caller: must be a Caller")
        if given := [f for f in _CALLER_FIELDS if f in data]:
            raise ValueError(f"give caller or {', '.join(given)}, not both")
        rest = {k: v for k, v in data.items() if k != "caller"}
        return {f: getattr(caller, f) for f in _CALLER_FIELDS} | rest

    @field_validator("tenant", "user_id", "workflow_id", "session_id")
    @classmethod
    def _identity(cls, value: str | None) -> str | None:
        return _identifier(value)

    @classmethod
    def for_caller(cls, caller: Caller, **values: Any) -> Self:
        """This value for ``caller`` (identity from the caller, the rest from ``values``)."""
        return cls.model_validate({"caller": caller, **values})

    @property
    def caller(self) -> Caller:
        """The identity this value carries."""
        return Caller(self.tenant, self.user_id, self.workflow_id, self.session_id)


class RecallRequest(CallerFields):
    """What a run may read and how much context it can afford.

    Identity (tenant, user, workflow, session) comes from the caller's verified context,
    never from the query text.
    """

    query: StrictStr = Field(default="", max_length=20_000)
    budget_chars: StrictInt = Field(default=2000, ge=0, le=1_000_000)
    max_items: StrictInt = Field(default=20, ge=0, le=10_000)
    max_item_chars: StrictInt = Field(default=500, ge=1, le=1_000_000)
    now: datetime | None = None
    strict: StrictBool = False
    #: Probability a relevance-ranked item needs to be recalled (None: the judge's default).
    relevance_threshold: StrictFloat | None = Field(
        default=None, ge=0.0, le=1.0, allow_inf_nan=False
    )

    @field_validator("query")
    @classmethod
    def _storable_query(cls, value: str) -> str:
        return _storable(value) or value

    @field_validator("now", mode="before")
    @classmethod
    def _a_date(cls, value: Any) -> Any:
        return _not_a_number(value)

    @field_validator("now")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return _require_aware(value)
