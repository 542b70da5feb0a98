"""Mapping of database rows to domain values (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.memory.domain.recall import Head
from harness.memory.domain.types import Approval, Kind, Memory, Origin, Scope, Source, Status

__all__ = ["head_from_row", "memory_from_row"]

# Enum members by stored value: a dict lookup, where calling the enum runs its Python lookup.
_SCOPES = {s.value: s for s in Scope}
_KINDS = {k.value: k for k in Kind}
_ORIGINS = {o.value: o for o in Origin}


def head_from_row(row: Mapping[Any, Any]) -> Head:
    """What assembly reads of a ``memories`` row (:class:`Head`), without building the model.

    Raises ``KeyError`` for a scope, kind or origin the schema's checks do not allow."""
    return Head(
        row["id"],
        row["memory_key"],
        _KINDS[row["kind"]],
        _SCOPES[row["scope"]],
        row["priority"],
        row["created_at"],
        row["content"],
        _ORIGINS[row["origin"]],
    )


def memory_from_row(row: Mapping[Any, Any]) -> Memory:
    """Build a :class:`Memory` from a ``memories`` row mapping."""
    approval = None
    if row.get("approval_decision"):
        approval = Approval(
            decision=row["approval_decision"],
            by=row["approved_by"],
            at=row["approved_at"],
            reason=row.get("approval_reason"),
        )
    return Memory(
        id=row["id"],
        tenant=row["tenant"],
        scope=Scope(row["scope"]),
        scope_id=row["scope_id"],
        kind=Kind(row["kind"]),
        key=row["memory_key"],
        content=row["content"],
        context=row.get("context"),
        priority=row["priority"],
        status=Status(row["status"]),
        source=Source(
            origin=Origin(row["origin"]),
            run_id=row.get("run_id"),
            verdict_id=row.get("verdict_id"),
            conversation_id=row.get("source_conversation_id"),
            turn_id=row.get("source_turn_id"),
        ),
        created_at=row["created_at"],
        expires_at=row.get("expires_at"),
        supersedes=row.get("supersedes"),
        superseded_by=row.get("superseded_by"),
        fingerprint=row["fingerprint"],
        approval=approval,
        has_embedding=bool(row["has_vector"]) if "has_vector" in row else False,
    )
