"""mem0's export shape mapped onto this store's export format (pure).

mem0 returns memories as JSON objects (``get_all`` / ``GET /v1/memories/``: ``{"results":
[...]}`` or a list; one object a line is read too)::

    {"id": "<uuid>", "memory": "<text>", "user_id": "...", "agent_id": "...", "run_id": "...",
     "app_id": "...", "hash": "...", "metadata": {...}, "categories": [...],
     "created_at": "2024-07-20T01:02:03-07:00", "updated_at": "...", "expiration_date": "..."}

Mapping (``docs/export-format.md``): a ``run_id`` is a session (scope ``session``); else a
``user_id`` is a user (``user``); else an ``agent_id`` is a workflow (``workflow``); else the
memory is the platform's. The kind is ``metadata.kind`` when it names one of this store's
kinds, else ``fact``. The id is kept when it is a UUID (a second import finds it), else a
UUID derived from it. What has no place here is counted in :attr:`Mem0Mapping.unmapped`.
A record without text, or one the guard or a write's checks refuse, is skipped with its line.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness.errors import HarnessError
from harness.memory.domain.export_format import Header, MemoryRecord, dump_line
from harness.memory.domain.types import Kind, MemoryCandidate, Origin, Scope, Status

__all__ = ["MEM0_NAMESPACE", "UNMAPPED_FIELDS", "Mem0Mapping", "mem0_export_lines"]

#: The namespace of the UUIDs derived from mem0 ids that are not UUIDs.
MEM0_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://mem0.ai/memory")

#: mem0 fields this store has no place for (dropped, counted per field).
UNMAPPED_FIELDS = ("hash", "updated_at", "app_id", "categories", "immutable", "score")

_KINDS = {k.value for k in Kind}


@dataclass
class Mem0Mapping:
    """What a mapping did: memories written, records skipped (with line and why), and how
    many records carried each field that could not be mapped."""

    memories: int = 0
    skipped: list[str] = field(default_factory=list)
    unmapped: Counter[str] = field(default_factory=Counter)


def _records(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """(where, record) pairs: "line N" for one object a line; "record N" (its index in
    ``results``) for one JSON document, which is read whole."""
    it = iter(lines)
    first: list[str] = []
    for text in it:
        if text.strip():
            first.append(text)
            break
    if not first:
        return
    head = first[0].strip()
    try:
        whole_line = json.loads(head)
    except json.JSONDecodeError:
        whole_line = None
    if isinstance(whole_line, dict) and "results" not in whole_line:
        number = 0
        for number, text in enumerate([first[0], *it], start=1):
            if not text.strip():
                continue
            try:
                yield f"line {number}", json.loads(text)
            except json.JSONDecodeError as exc:
                yield f"line {number}", exc
        return
    document = json.loads("".join([first[0], *it]))
    items = document.get("results", []) if isinstance(document, dict) else document
    for index, item in enumerate(items if isinstance(items, list) else [], start=1):
        yield f"record {index}", item


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _when(value: Any, default: datetime) -> datetime:
    if not isinstance(value, str):
        return default
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return default
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)  # mem0 writes UTC


def _id(raw: Any, fallback: str) -> uuid.UUID:
    if isinstance(raw, str):
        try:
            return uuid.UUID(raw)
        except ValueError:
            return uuid.uuid5(MEM0_NAMESPACE, raw)
    return uuid.uuid5(MEM0_NAMESPACE, fallback)


def _place(rec: dict[str, Any], mapping: Mem0Mapping) -> tuple[Scope, str]:
    run, user, agent = (_text(rec.get(k)) for k in ("run_id", "user_id", "agent_id"))
    if run is not None:
        mapping.unmapped.update(k for k, v in (("user_id", user), ("agent_id", agent)) if v)
        return Scope.SESSION, run
    if user is not None:
        mapping.unmapped.update(["agent_id"] if agent else [])
        return Scope.USER, user
    if agent is not None:
        return Scope.WORKFLOW, agent
    return Scope.PLATFORM, ""


def mem0_export_lines(
    lines: Iterable[str],
    *,
    tenant: str,
    now: datetime,
    check: Callable[[MemoryCandidate], object] | None = None,
    mapping: Mem0Mapping | None = None,
) -> Iterator[str]:
    """The lines of an export file (header first) holding the mem0 records of ``lines``
    as ``tenant``'s memories. ``check`` (e.g. the guard's) runs on each as a candidate;
    what it or a write's checks refuse is skipped. Counts land in ``mapping``.
    Lazy: a file of one object a line streams; a JSON document is read whole.
    """
    report = mapping if mapping is not None else Mem0Mapping()
    yield dump_line(Header(tenant=tenant, exported_at=now))
    for where, rec in _records(lines):
        if isinstance(rec, Exception) or not isinstance(rec, dict):
            report.skipped.append(f"{where}: not a JSON object")
            continue
        content = _text(rec.get("memory")) or _text(rec.get("text"))
        if content is None:
            report.skipped.append(f"{where}: no memory text")
            continue
        scope, scope_id = _place(rec, report)
        raw_metadata = rec.get("metadata")
        metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
        kind_name = metadata.get("kind")
        kind = Kind(kind_name) if kind_name in _KINDS else Kind.FACT
        report.unmapped.update(k for k in UNMAPPED_FIELDS if rec.get(k) not in (None, "", []))
        if set(metadata) - {"kind"}:
            report.unmapped["metadata"] += 1
        expires = rec.get("expiration_date")
        try:
            if check is not None:
                check(
                    MemoryCandidate(
                        tenant=tenant,
                        scope=scope,
                        scope_id=scope_id or None,
                        kind=kind,
                        content=content,
                        source={"origin": Origin.API},
                    )
                )
            record = MemoryRecord(
                id=_id(rec.get("id"), f"{scope.value}:{scope_id}:{content}"),
                scope=scope,
                scope_id=scope_id,
                kind=kind,
                content=content,
                status=Status.ACTIVE,
                origin=Origin.API,
                created_at=_when(rec.get("created_at"), now),
                expires_at=_when(expires, now) if isinstance(expires, str) else None,
            )
        except HarnessError as exc:
            report.skipped.append(f"{where}: {exc}")
            continue
        report.memories += 1
        yield dump_line(record)
