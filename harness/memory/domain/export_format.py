"""The export file's lines as values: a versioned JSON-lines schema (``docs/export-format.md``).

A file is one JSON object a line: a :class:`Header` first, then records of the tenant in the
header (memories, approval decisions, lesson events, lesson scores, and later conversations).
Pure: parsing and serialising lines, and the checks that need no database. Every check
raises :class:`ExportLineError` (an ``InvalidInput``) naming the line and the field.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic import Field, field_validator

from harness.errors import InvalidInput
from harness.identifiers import identifier_problem, text_problem
from harness.memory.domain.types import FrozenModel, Kind, Origin, Scope, Status

__all__ = [
    "FORMAT",
    "VERSION",
    "ApprovalRecord",
    "ApprovalState",
    "ConversationRecord",
    "ExportLineError",
    "ExportReport",
    "Header",
    "ImportReport",
    "LessonEventRecord",
    "LessonScoreRecord",
    "MemoryRecord",
    "Record",
    "UnsupportedExportVersion",
    "dump_line",
    "parse_header",
    "parse_line",
    "read_records",
]

#: The ``format`` of every header: a file of another program is refused at line 1.
FORMAT: Final = "harness-memory-export"
#: The schema version this build writes and the newest it reads.
VERSION: Final = 1

Vector = list[float]


class ExportLineError(InvalidInput):
    """A line of an export file failed validation; ``line`` is its 1-based number."""

    def __init__(self, line: int, field: str, message: str) -> None:
        super().__init__(f"line {line}: {field}: {message}", fields=(field,))
        self.line = line


class UnsupportedExportVersion(InvalidInput):
    """The file's schema is newer than this build reads."""

    def __init__(self, found: int, supported: int) -> None:
        super().__init__(
            f"line 1: version: the file is export format version {found}; this build reads "
            f"versions up to {supported} (upgrade harness-memory to import it)",
            fields=("version",),
        )
        self.found = found
        self.supported = supported


def _utc(value: datetime | None) -> datetime | None:
    """Field validator: aware datetimes only, stored in UTC so a line is written one way."""
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("datetime must be timezone-aware")
    return value.astimezone(UTC)


def _identifier(value: str | None) -> str | None:
    """Field validator: an identity string as a write accepts it ('' is the platform's id)."""
    if value:
        problem = identifier_problem(value)
        if problem is not None:
            raise ValueError(problem)
    return value


def _text(value: str | None) -> str | None:
    """Field validator: free text PostgreSQL can store."""
    if value is not None and (problem := text_problem(value)) is not None:
        raise ValueError(problem)
    return value


def _finite(value: Vector | None) -> Vector | None:
    if value is not None and not all(math.isfinite(x) for x in value):
        raise ValueError("a vector holds finite numbers only")
    return value


class _Line(FrozenModel):
    """Base of every line: frozen, no unknown fields, datetimes in UTC."""


class Header(_Line):
    """Line 1: what the file holds. ``model``/``dim``: the model that built the vectors, when
    the file carries vectors (``vectors``)."""

    type: Literal["header"] = "header"
    format: Literal["harness-memory-export"] = FORMAT
    version: int = Field(default=VERSION, ge=1)
    tenant: str = Field(min_length=1, max_length=200)
    exported_at: datetime
    vectors: bool = False
    model: str | None = None
    dim: int | None = Field(default=None, ge=1)

    _at = field_validator("exported_at")(_utc)


class ApprovalState(_Line):
    """The decision a memory row carries (the last one; the trail is in ``approval`` lines)."""

    decision: Literal["approved", "rejected"]
    by: str = Field(min_length=1, max_length=200)
    at: datetime
    reason: str | None = None

    _at = field_validator("at")(_utc)


class MemoryRecord(_Line):
    """One memory, whatever its status, with its place in its key's history chain."""

    type: Literal["memory"] = "memory"
    id: uuid.UUID
    scope: Scope
    scope_id: str = Field(max_length=200)
    kind: Kind
    key: str | None = Field(default=None, min_length=1, max_length=200)
    content: str = Field(min_length=1)
    context: str | None = None
    priority: int = Field(default=0, ge=-2_147_483_648, le=2_147_483_647)
    status: Status
    origin: Origin
    run_id: str | None = Field(default=None, max_length=200)
    verdict_id: str | None = Field(default=None, max_length=200)
    created_at: datetime
    expires_at: datetime | None = None
    supersedes: uuid.UUID | None = None
    superseded_by: uuid.UUID | None = None
    approval: ApprovalState | None = None
    embedding: Vector | None = None
    context_embedding: Vector | None = None

    _at = field_validator("created_at", "expires_at")(_utc)
    _vec = field_validator("embedding", "context_embedding")(_finite)
    _ids = field_validator("key", "run_id", "verdict_id")(_identifier)
    _texts = field_validator("content", "context")(_text)

    @field_validator("scope_id")
    @classmethod
    def _scope_id(cls, value: str, info: Any) -> str:
        scope = info.data.get("scope")
        if scope is not None and (scope is Scope.PLATFORM) != (value == ""):
            raise ValueError("'' for the platform scope and only there")
        return _identifier(value) or value


class ApprovalRecord(_Line):
    """One approval decision of the audit trail (``memory_approvals``)."""

    type: Literal["approval"] = "approval"
    memory_id: uuid.UUID
    decision: Literal["approved", "rejected"]
    actor: str = Field(min_length=1, max_length=200)
    reason: str | None = None
    decided_at: datetime

    _at = field_validator("decided_at")(_utc)
    _ids = field_validator("actor")(_identifier)
    _texts = field_validator("reason")(_text)


LessonEvent = Literal[
    "taught", "repeated", "missed", "misled", "clear", "recalled", "retired", "restored"
]


class LessonEventRecord(_Line):
    """One event of a lesson (``lesson_events``): a context (with a polarity) or an outcome."""

    type: Literal["lesson_event"] = "lesson_event"
    memory_id: uuid.UUID
    event: LessonEvent
    polarity: Literal["positive", "negative"] | None = None
    run_id: str | None = Field(default=None, max_length=200)
    verdict_id: str | None = Field(default=None, max_length=200)
    actor: str | None = Field(default=None, max_length=200)
    task: str | None = None
    feedback: str | None = None
    at: datetime
    embedding: Vector | None = None
    feedback_embedding: Vector | None = None

    _at = field_validator("at")(_utc)
    _vec = field_validator("embedding", "feedback_embedding")(_finite)
    _ids = field_validator("run_id", "verdict_id", "actor")(_identifier)
    _texts = field_validator("task", "feedback")(_text)


class LessonScoreRecord(_Line):
    """A lesson's running similarity statistics (``lesson_scores``, Welford's n, mean, m2)."""

    type: Literal["lesson_score"] = "lesson_score"
    memory_id: uuid.UUID
    n: int = Field(ge=0, le=2_147_483_647)
    mean: float = Field(allow_inf_nan=False)
    m2: float = Field(ge=0, allow_inf_nan=False)


class ConversationTurn(_Line):
    """One turn of an archived conversation, verbatim."""

    seq: int = Field(ge=0)
    ts: datetime
    role: str
    text: str
    turn_id: str


class ConversationRecord(_Line):
    """A conversation of the archive with its turns, in order (``id`` is the conversation
    id, unique per user). Imported like a post of the whole conversation: the turns replace
    what the store holds under that id, and are embedded unless the store has them unchanged."""

    type: Literal["conversation"] = "conversation"
    id: str = Field(min_length=1, max_length=128)
    user_id: str = Field(min_length=1, max_length=200)
    turns: tuple[ConversationTurn, ...] = Field(min_length=1)


class ExportReport(FrozenModel):
    """How many lines of each type an export wrote (the header not counted)."""

    memories: int = 0
    approvals: int = 0
    lesson_events: int = 0
    lesson_scores: int = 0
    conversations: int = 0


class ImportReport(FrozenModel):
    """What an import did. ``existing``: memories whose id the tenant already had (left as
    they were); ``embedded``: memories given vectors by this store's model; ``skipped``: one
    line per record not imported, with its line number and why."""

    tenant: str
    lines: int
    memories: int = 0
    existing: int = 0
    approvals: int = 0
    lesson_events: int = 0
    lesson_scores: int = 0
    conversations: int = 0
    embedded: int = 0
    skipped: tuple[str, ...] = ()


#: Every record type after the header, told apart by ``type``.
Record = MemoryRecord | ApprovalRecord | LessonEventRecord | LessonScoreRecord | ConversationRecord
_RECORDS: dict[str, type[Record]] = {
    "memory": MemoryRecord,
    "approval": ApprovalRecord,
    "lesson_event": LessonEventRecord,
    "lesson_score": LessonScoreRecord,
    "conversation": ConversationRecord,
}


def dump_line(value: Header | Record) -> str:
    """One line (no newline) for ``value``: keys in schema order, ``None`` fields left out."""
    return value.model_dump_json(exclude_none=True)


def _object(text: str, line: int) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExportLineError(line, "line", f"not JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise ExportLineError(line, "line", f"a JSON object, not {type(data).__name__}")
    return data


def _first_error(exc: InvalidInput, line: int) -> ExportLineError:
    field, message = exc.details[0] if exc.details else ("line", str(exc))
    return ExportLineError(line, field, message.removeprefix(f"{field}: "))


def parse_header(text: str) -> Header:
    """Line 1 as a :class:`Header`. The version is checked before any other field, so a newer
    file is refused with both versions named, whatever else it changed.

    Raises:
        UnsupportedExportVersion: a newer schema. ExportLineError: anything else wrong.
    """
    data = _object(text, 1)
    if data.get("type") != "header" or data.get("format") != FORMAT:
        raise ExportLineError(1, "format", f"line 1 is the header of a {FORMAT!r} file")
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise UnsupportedExportVersion(version, VERSION)
    try:
        return Header.model_validate(data)
    except InvalidInput as exc:
        raise _first_error(exc, 1) from exc


def parse_line(text: str, line: int) -> Record:
    """A record line (line 2 on) as its record value.

    Raises:
        ExportLineError: not JSON, an unknown ``type``, or a field that fails its rule.
    """
    data = _object(text, line)
    kind = data.get("type")
    if kind == "header":
        raise ExportLineError(line, "type", "a second header")
    model = _RECORDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ExportLineError(line, "type", f"unknown record type {kind!r}")
    try:
        return model.model_validate(data)
    except InvalidInput as exc:
        raise _first_error(exc, line) from exc


def read_records(lines: Iterable[str]) -> Iterator[tuple[int, Header | Record]]:
    """Each non-blank line parsed, with its number: the header first, then the records.
    Streams: one line in memory at a time. Raises like :func:`parse_header`/:func:`parse_line`;
    an empty file raises ``ExportLineError`` for line 1."""
    seen_header = False
    number = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        if not seen_header:
            if number != 1:
                raise ExportLineError(number, "type", "the header is line 1")
            seen_header = True
            yield number, parse_header(text)
        else:
            yield number, parse_line(text, number)
    if not seen_header:
        raise ExportLineError(max(number, 1), "line", "an empty file (no header)")
