"""Rows of the tables as export records and export records as rows (pure)."""

from __future__ import annotations

from typing import Any

from harness.fingerprint import fingerprint
from harness.memory.domain.export_format import (
    ApprovalRecord,
    ApprovalState,
    LessonEventRecord,
    LessonScoreRecord,
    MemoryRecord,
)

__all__ = [
    "approval_record",
    "approval_row",
    "event_record",
    "memory_record",
    "memory_row",
    "score_record",
    "score_row",
    "vector",
]


def vector(value: Any) -> list[float] | None:
    return None if value is None else [float(x) for x in value]


def memory_record(row: Any) -> MemoryRecord:
    approval = None
    if row["approval_decision"]:
        approval = ApprovalState(
            decision=row["approval_decision"],
            by=row["approved_by"],
            at=row["approved_at"],
            reason=row["approval_reason"],
        )
    return MemoryRecord(
        id=row["id"],
        scope=row["scope"],
        scope_id=row["scope_id"],
        kind=row["kind"],
        key=row["memory_key"],
        content=row["content"],
        context=row["context"],
        priority=row["priority"],
        status=row["status"],
        origin=row["origin"],
        run_id=row["run_id"],
        verdict_id=row["verdict_id"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        supersedes=row["supersedes"],
        superseded_by=row["superseded_by"],
        approval=approval,
        embedding=vector(row.get("embedding")),
        context_embedding=vector(row.get("context_embedding")),
    )


def approval_record(row: Any) -> ApprovalRecord:
    return ApprovalRecord(
        memory_id=row["memory_id"],
        decision=row["decision"],
        actor=row["actor"],
        reason=row["reason"],
        decided_at=row["decided_at"],
    )


def event_record(row: Any) -> LessonEventRecord:
    return LessonEventRecord(
        memory_id=row["memory_id"],
        event=row["event"],
        polarity=row["polarity"],
        run_id=row["run_id"],
        verdict_id=row["verdict_id"],
        actor=row["actor"],
        task=row["task"],
        feedback=row["feedback"],
        at=row["at"],
        embedding=vector(row.get("embedding")),
        feedback_embedding=vector(row.get("feedback_embedding")),
    )


def score_record(row: Any) -> LessonScoreRecord:
    return LessonScoreRecord(memory_id=row["memory_id"], n=row["n"], mean=row["mean"], m2=row["m2"])


def memory_row(tenant: str, r: MemoryRecord, keep: bool) -> dict[str, Any]:
    approval = r.approval
    return {
        "id": r.id,
        "tenant": tenant,
        "scope": r.scope.value,
        "scope_id": r.scope_id,
        "kind": r.kind.value,
        "memory_key": r.key,
        "content": r.content,
        "context": r.context,
        "priority": r.priority,
        "status": r.status.value,
        "origin": r.origin.value,
        "run_id": r.run_id,
        "verdict_id": r.verdict_id,
        "created_at": r.created_at,
        "expires_at": r.expires_at,
        "supersedes": r.supersedes,
        "superseded_by": r.superseded_by,
        "fingerprint": fingerprint(r.content),
        "embedding": r.embedding if keep else None,
        "context_embedding": r.context_embedding if keep else None,
        "approved_by": approval.by if approval else None,
        "approved_at": approval.at if approval else None,
        "approval_decision": approval.decision if approval else None,
        "approval_reason": approval.reason if approval else None,
    }


def approval_row(tenant: str, r: ApprovalRecord) -> dict[str, Any]:
    return {
        "tenant": tenant,
        "memory_id": r.memory_id,
        "decision": r.decision,
        "actor": r.actor,
        "reason": r.reason,
        "decided_at": r.decided_at,
    }


def score_row(tenant: str, r: LessonScoreRecord) -> dict[str, Any]:
    return {"tenant": tenant, "memory_id": r.memory_id, "n": r.n, "mean": r.mean, "m2": r.m2}
