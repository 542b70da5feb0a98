"""Argument checks shared by both store facades (pure; typed ``InvalidInput`` errors)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from harness.errors import InvalidInput, MemoryRejected
from harness.identifiers import check_identifier, check_text
from harness.memory.domain.types import MemoryCandidate, Scope
from harness.memory.guard import Guard
from harness.settings import Settings

__all__ = [
    "as_scope",
    "as_uuid",
    "check_batch_size",
    "check_index_memory",
    "check_lock_wait",
    "check_now",
    "check_reason",
    "check_whole",
    "scope_key",
    "validate_candidates",
]


def validate_candidates(
    candidates: Sequence[MemoryCandidate | Mapping[str, Any]],
    settings: Settings,
    guard: Guard,
    *,
    single: bool = False,
    now: datetime | None = None,
) -> list[MemoryCandidate]:
    """Candidates parsed, size-checked and guarded; the first bad one raises (nothing written).

    With ``now``, an ``expires_at`` at or before it is refused: such a write would supersede the
    live value of its key and then recall nothing.

    Raises:
        InvalidInput: a malformed candidate (a batch's error also names its position).
        MemoryRejected: the guard refused one.
    """
    if not isinstance(candidates, (list, tuple)):
        raise InvalidInput(
            f"candidates: write_many takes a list of candidates, not {type(candidates).__name__}",
            fields=("candidates",),
        )
    out: list[MemoryCandidate] = []
    for index, raw in enumerate(candidates):
        # A single write's errors name fields only; a batch's also say which candidate.
        where = "" if single else f"candidate {index}: "
        if not isinstance(raw, (MemoryCandidate, Mapping)):
            raise InvalidInput(
                f"{where}a MemoryCandidate or a mapping, not {type(raw).__name__}",
                fields=("candidate",),
            )
        content = raw.content if isinstance(raw, MemoryCandidate) else raw.get("content")
        # the length first: a huge text is refused before any validator walks it
        if isinstance(content, str) and len(content) > settings.max_content_chars:
            raise InvalidInput(
                f"{where}content: {len(content)} characters exceeds the "
                f"maximum of {settings.max_content_chars}",
                fields=("content",),
            )
        try:
            cand = raw if isinstance(raw, MemoryCandidate) else MemoryCandidate(**dict(raw))
        except InvalidInput as exc:
            raise InvalidInput(f"{where}{exc}", fields=exc.fields, errors=exc.errors) from exc
        except (TypeError, ValidationError) as exc:
            raise InvalidInput(f"{where}{exc}", fields=("candidate",)) from exc
        if now is not None and cand.expires_at is not None and cand.expires_at <= now:
            raise InvalidInput(
                f"{where}expires_at: {cand.expires_at.isoformat()} is not after now "
                f"({now.isoformat()}); a memory that has already expired would be stored only "
                "to recall nothing",
                fields=("expires_at",),
            )
        try:
            guard.check(cand)
        except MemoryRejected as exc:
            raise MemoryRejected(
                exc.reason,
                rule=exc.rule,
                index=None if single else index,
                field=exc.field,
                position=exc.position,
                excerpt=exc.excerpt,
            ) from None
        out.append(cand)
    return out


def as_uuid(value: uuid.UUID | str) -> uuid.UUID:
    """A memory id from a UUID or its string."""
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str):
        raise InvalidInput(
            f"memory_id: an id is a UUID or its string, not {type(value).__name__}",
            fields=("memory_id",),
        )
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidInput(
            f"memory_id: {value!r} is not a valid id", fields=("memory_id",)
        ) from None


def scope_key(scope: Scope, scope_id: str | None) -> str:
    """``scope_id`` as stored; platform is "" and every other scope needs a valid id."""
    if scope is Scope.PLATFORM:
        if scope_id:
            raise InvalidInput("scope_id: must be empty for platform scope", fields=("scope_id",))
        return ""
    return check_identifier(scope_id, "scope_id")


def as_scope(value: Scope | str) -> Scope:
    """A scope from its value."""
    try:
        return Scope(value)
    except ValueError:
        raise InvalidInput(
            f"scope: {value!r} is not one of session, workflow, user, platform", fields=("scope",)
        ) from None


def check_reason(reason: str) -> str:
    """A rejection's reason: text, not blank."""
    reason = check_text(reason, "reason", max_length=4000)
    if not reason.strip():
        raise InvalidInput("reason: a rejection needs a reason", fields=("reason",))
    return reason


def check_lock_wait(seconds: float) -> int:
    """``cluster``'s wait for the table lock, in seconds (> 0, at most an hour); returns ms."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not (0 < seconds <= 3600)
    ):
        raise InvalidInput(
            "lock_wait_s: seconds to wait for the table's lock, more than 0 and at most 3600",
            fields=("lock_wait_s",),
        )
    return max(1, round(seconds * 1000))


def check_index_memory(megabytes: int | None) -> int | None:
    """``cluster``'s memory for rebuilding indexes, in MB (1 to 1,048,576), or None."""
    if megabytes is None:
        return None
    if (
        isinstance(megabytes, bool)
        or not isinstance(megabytes, int)
        or not (1 <= megabytes <= 1_048_576)
    ):
        raise InvalidInput(
            "index_memory_mb: whole megabytes for rebuilding indexes, 1 to 1048576 (or None: "
            "the server's maintenance_work_mem)",
            fields=("index_memory_mb",),
        )
    return megabytes


def check_whole(value: Any, field: str, low: int, high: int) -> int:
    """``value`` when it is a whole number from ``low`` to ``high`` (not a flag, a float or
    its text); else ``InvalidInput`` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(
            f"{field}: a whole number from {low} to {high}, not {value!r}", fields=(field,)
        )
    return value


def check_batch_size(batch_size: Any) -> int:
    """``reembed``'s rows per transaction: a whole number from 1 to 100,000."""
    return check_whole(batch_size, "batch_size", 1, 100_000)


def check_now(now: datetime | None, field: str = "now") -> None:
    """An optional instant (``purge_expired``'s ``now``, a run's ``at``): timezone-aware."""
    if now is not None and (
        not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None
    ):
        # the same rule as a write's datetimes: a naive one is ambiguous
        raise InvalidInput(
            f"{field}: a timezone-aware datetime, not {now!r}"
            if isinstance(now, datetime)
            else f"{field}: a timezone-aware datetime, not {type(now).__name__}",
            fields=(field,),
        )
