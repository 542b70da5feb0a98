"""The store's operations on memories, as generators of SQL steps (see :mod:`ops`).

Each is a function of its dependencies and arguments; arguments arrive checked (see
:mod:`checks`), vectors arrive computed (embedding is the facade's job, off the event loop for
the async one). Both facades run them in one transaction each.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.errors import ConflictingState, MemoryNotFound
from harness.fingerprint import fingerprint
from harness.memory.domain.idempotency import Answer, IdempotencyOutcome, Idempotent
from harness.memory.domain.types import (
    AUTOMATIC_ORIGINS,
    Memory,
    MemoryCandidate,
    Scope,
    Status,
    WorkflowDeleted,
)
from harness.memory.embedding.embedder import Embedder
from harness.memory.store import sql
from harness.memory.store.executors import Op
from harness.memory.store.ops import vectors
from harness.memory.store.rows import memory_from_row

__all__ = [
    "audit",
    "decide",
    "delete_scope",
    "delete_workflow",
    "forget",
    "get",
    "history",
    "idempotency_lookup",
    "idempotency_record",
    "pending",
    "purge_expired",
    "replay",
    "write_validated",
]

log = logging.getLogger(__name__)


def write_validated(
    cands: list[MemoryCandidate],
    pairs: vectors.Pairs | None,
    tenant: str | None,
    embedder: Embedder | None,
    now: datetime,
) -> Op[list[Memory]]:
    """Write validated candidates; the transaction admits ``tenant`` (switched per tenant).

    The stored state and the answers are those of writing the candidates one by one in order
    (a later candidate sees the earlier ones), in a few round trips per tenant: the batch's
    lookups, one supersede, one multi-row insert.
    """
    if pairs is not None and embedder is not None:
        yield from vectors.claim_model(embedder)
    # Every lock this batch needs, in one global order: concurrent batches cannot deadlock,
    # and a keyless content is checked and inserted by one writer at a time.
    names = sorted({n for n in map(candidate_lock, cands) if n is not None})
    if names:
        yield sql.lock_names(names)
    positions: dict[str, list[int]] = {}
    for i, cand in enumerate(cands):
        positions.setdefault(cand.tenant, []).append(i)
    written: dict[int, Memory] = {}
    for each_tenant, where in positions.items():
        if each_tenant != tenant:
            tenant = each_tenant
            yield sql.set_tenant(tenant)
        batch = [
            _Pending(cands[i], pairs[0][i] if pairs else None, pairs[1][i] if pairs else None)
            for i in where
        ]
        answers = yield from _write_tenant(each_tenant, batch, now)
        written.update(zip(where, answers, strict=True))
    return [written[i] for i in range(len(cands))]


@dataclass(frozen=True)
class _Pending:
    cand: MemoryCandidate
    vector: list[float] | None
    context_vector: list[float] | None


_KeyOf = tuple[str, str, str]  # scope, scope_id, memory_key
_ContentOf = tuple[str, str, str, str]  # scope, scope_id, kind, fingerprint


def candidate_lock(cand: MemoryCandidate) -> str | None:
    """The advisory lock a candidate's write takes: its key, or its keyless content."""
    if cand.key is None:
        return sql.fingerprint_lock_name(
            cand.tenant, cand.scope, cand.scope_key, cand.kind, fingerprint(cand.content)
        )
    if cand.scope is Scope.PLATFORM and cand.source.origin in AUTOMATIC_ORIGINS:
        return None  # pending: supersedes nothing until approved
    return sql.key_lock_name(cand.tenant, cand.scope, cand.scope_key, cand.key)


def _waits_for_approval(cand: MemoryCandidate) -> bool:
    return cand.scope is Scope.PLATFORM and cand.source.origin in AUTOMATIC_ORIGINS


def _write_tenant(tenant: str, batch: list[_Pending], now: datetime) -> Op[list[Memory]]:
    """One tenant's part of a batch (the caller holds every lock it needs)."""
    fps = [fingerprint(p.cand.content) for p in batch]
    keys = sorted(
        {
            (p.cand.scope.value, p.cand.scope_key, p.cand.key)
            for p in batch
            if p.cand.key is not None and not _waits_for_approval(p.cand)
        }
    )
    contents = sorted(
        {
            (p.cand.scope.value, p.cand.scope_key, p.cand.kind.value, fp)
            for p, fp in zip(batch, fps, strict=True)
            if p.cand.key is None
        }
    )
    active_by_key: dict[_KeyOf, uuid.UUID] = {}
    if keys:
        scopes, scope_ids, memory_keys = zip(*keys, strict=True)
        found = yield sql.active_for_keys(tenant, scopes, scope_ids, memory_keys)
        for row in found.mappings().all():
            active_by_key.setdefault((row["scope"], row["scope_id"], row["memory_key"]), row["id"])
    # Per content, the item a one-by-one write would find: an active one before a pending one.
    same_content: dict[_ContentOf, tuple[uuid.UUID, Status]] = {}
    stored: dict[uuid.UUID, Memory] = {}
    if contents:
        found = yield sql.active_with_fingerprints(tenant, *zip(*contents, strict=True))
        for row in found.mappings().all():
            content_of = (row["scope"], row["scope_id"], row["kind"], row["fingerprint"])
            if content_of not in same_content:
                same_content[content_of] = (row["id"], Status(row["status"]))
                stored[row["id"]] = memory_from_row(row)

    new_rows: dict[uuid.UUID, dict[str, Any]] = {}
    superseded_stored: list[tuple[uuid.UUID, uuid.UUID]] = []
    answer_ids: list[uuid.UUID] = []
    for p, fp in zip(batch, fps, strict=True):
        cand = p.cand
        pending = _waits_for_approval(cand)
        new_id = uuid.uuid4()
        supersedes: uuid.UUID | None = None
        if cand.key is None:
            content_of = (cand.scope.value, cand.scope_key, cand.kind.value, fp)
            existing = same_content.get(content_of)
            if existing is not None:
                existing_id, existing_status = existing
                if pending or existing_status is Status.ACTIVE:
                    answer_ids.append(existing_id)
                    continue
                # A deliberate write of what an automatic one proposed: it takes effect now
                # and the waiting proposal is closed as superseded by it (linked both ways).
                supersedes = existing_id
                log.info("write %s supersedes identical pending memory %s", new_id, supersedes)
            status = Status.PENDING_APPROVAL if pending else Status.ACTIVE
            same_content[content_of] = (new_id, status)
        elif not pending:
            key_of = (cand.scope.value, cand.scope_key, cand.key)
            supersedes = active_by_key.get(key_of)
            active_by_key[key_of] = new_id
        if supersedes in new_rows:
            # Written earlier in this batch: it goes in already closed (one active per key).
            new_rows[supersedes].update(status=Status.SUPERSEDED.value, superseded_by=new_id)
        elif supersedes is not None:
            superseded_stored.append((supersedes, new_id))
        new_rows[new_id] = _row(cand, new_id, fp, supersedes, p, now)
        answer_ids.append(new_id)

    if superseded_stored:
        # Before the insert: the unique index admits one active item per key.
        yield sql.supersede_many(tenant, superseded_stored)
    if new_rows:
        inserted = yield sql.insert_memories(), list(new_rows.values())
        for row in inserted.mappings().all():
            # Answer as a one-by-one write did: the row as inserted, before this batch's later
            # candidates superseded it.
            initial = Status.PENDING_APPROVAL if _waits_for_approval_row(row) else Status.ACTIVE
            as_written = {**row, "status": initial.value, "superseded_by": None}
            stored[row["id"]] = memory_from_row(as_written)
    return [stored[i] for i in answer_ids]


def _waits_for_approval_row(row: Any) -> bool:
    return bool(
        row["scope"] == Scope.PLATFORM.value
        and row["origin"] in {o.value for o in AUTOMATIC_ORIGINS}
    )


def _row(
    cand: MemoryCandidate,
    new_id: uuid.UUID,
    fp: str,
    supersedes: uuid.UUID | None,
    p: _Pending,
    now: datetime,
) -> dict[str, Any]:
    pending = _waits_for_approval(cand)
    return {
        "id": new_id,
        "tenant": cand.tenant,
        "scope": cand.scope.value,
        "scope_id": cand.scope_key,
        "kind": cand.kind.value,
        "memory_key": cand.key,
        "content": cand.content,
        "context": cand.context,
        "priority": cand.priority,
        "status": (Status.PENDING_APPROVAL if pending else Status.ACTIVE).value,
        "origin": cand.source.origin.value,
        "run_id": cand.source.run_id,
        "verdict_id": cand.source.verdict_id,
        "source_conversation_id": cand.source.conversation_id,
        "source_turn_id": cand.source.turn_id,
        "created_at": now,
        "expires_at": cand.expires_at,
        "supersedes": supersedes,
        "superseded_by": None,
        "fingerprint": fp,
        "embedding": p.vector,
        "context_embedding": p.context_vector,
    }


def _supersede_active(
    tenant: str, scope: Scope, scope_key: str, key: str, new_id: uuid.UUID
) -> Op[uuid.UUID | None]:
    """Mark the active item of one key superseded by ``new_id`` (the caller holds the key's
    lock); returns the superseded id, None when the key had no active item."""
    old = (yield sql.active_for_key(tenant, scope, scope_key, key)).mappings().first()
    if old is None:
        return None
    yield sql.supersede(tenant, old["id"], new_id)
    superseded: uuid.UUID = old["id"]
    return superseded


def get(tenant: str, memory_id: uuid.UUID) -> Op[Memory | None]:
    """The tenant's memory with that id, whatever its status."""
    row = (yield sql.by_id(tenant, memory_id)).mappings().first()
    return memory_from_row(row) if row else None


def history(tenant: str, scope: Scope, scope_key: str, key: str) -> Op[list[Memory]]:
    """Every version of one key, oldest first."""
    rows = (yield sql.history(tenant, scope, scope_key, key)).mappings().all()
    return [memory_from_row(r) for r in rows]


def pending(tenant: str) -> Op[list[Memory]]:
    """Memories of the tenant waiting for an admin decision, oldest first."""
    rows = (yield sql.pending(tenant)).mappings().all()
    return [memory_from_row(r) for r in rows]


def audit(tenant: str) -> Op[list[dict[str, Any]]]:
    """Every approval decision of the tenant, oldest first."""
    return [dict(r) for r in (yield sql.approval_audit(tenant)).mappings().all()]


def decide(
    tenant: str,
    memory_id: uuid.UUID,
    approver: str,
    decision: str,
    reason: str | None,
    now: datetime,
) -> Op[Memory]:
    """Approve (activating it, superseding its key's active item) or reject a pending memory,
    and audit the decision.

    Raises:
        MemoryNotFound: no such memory for the tenant. ConflictingState: it is not pending.
    """
    mid = memory_id
    row = (yield sql.by_id(tenant, mid, for_update=True)).mappings().first()
    if row is None:
        raise MemoryNotFound(f"tenant {tenant!r} has no memory with id {mid}")
    if row["status"] != Status.PENDING_APPROVAL.value:
        raise ConflictingState(f"memory {mid} is {row['status']}, not pending_approval")
    values: dict[str, Any] = {
        "approved_by": approver,
        "approved_at": now,
        "approval_decision": decision,
        "approval_reason": reason,
    }
    if decision == "approved":
        values["status"] = Status.ACTIVE.value
        if row["memory_key"] is not None:
            scope = Scope(row["scope"])
            yield sql.lock_key(tenant, scope, row["scope_id"], row["memory_key"])
            superseded = yield from _supersede_active(
                tenant, scope, row["scope_id"], row["memory_key"], mid
            )
            if superseded is not None:
                values["supersedes"] = superseded
    else:
        values["status"] = Status.REJECTED.value
    yield sql.set_status(tenant, mid, values)
    yield sql.insert_approval(
        {
            "tenant": tenant,
            "memory_id": mid,
            "decision": decision,
            "actor": approver,
            "reason": reason,
            "decided_at": now,
        }
    )
    return memory_from_row((yield sql.by_id(tenant, mid)).mappings().one())


def forget(tenant: str, memory_id: uuid.UUID) -> Op[bool]:
    """Delete one memory and its embedding; False when the tenant has no such memory."""
    row = (yield sql.by_id(tenant, memory_id, for_update=True)).mappings().first()
    if row is None:
        return False
    for stmt in sql.unlink(tenant, memory_id):
        _ = yield stmt  # one round trip each (a list cannot be delegated to)
    for record in sql.delete_records_of(tenant, memory_id):  # contexts hold task text
        _ = yield record
    yield sql.delete_by_id(tenant, memory_id)
    return True


def delete_scope(tenant: str, scope: Scope, scope_key: str) -> Op[int]:
    """Delete every memory of one (tenant, scope, scope_id) and its lessons' events; returns
    the count of memories."""
    for stmt in sql.delete_records_in_scope(tenant, scope, scope_key):
        _ = yield stmt
    return int((yield sql.delete_scope(tenant, scope, scope_key)).rowcount)


def delete_workflow(tenant: str, workflow_id: str) -> Op[WorkflowDeleted]:
    """Delete a workflow's memories (all statuses) and its run records, in the caller's one
    transaction. Idempotent."""
    memories = yield from delete_scope(tenant, Scope.WORKFLOW, workflow_id)
    runs = int((yield sql.delete_runs_of_workflow(tenant, workflow_id)).rowcount)
    return WorkflowDeleted(memories=memories, runs=runs)


def purge_expired(at: datetime) -> Op[int]:
    """Delete memories whose ``expires_at <= at``, tenant by tenant (maintenance transaction)."""
    total = 0
    tenants = (yield sql.tenants_with_expired(at)).scalars().all()
    for tenant in tenants:
        for stmt in sql.delete_records_of_expired(tenant, at):
            _ = yield stmt
        total += int((yield sql.purge_expired(tenant, at)).rowcount)
    return total


def idempotency_lookup(tenant: str, key: str) -> Op[Any]:
    """Lock (tenant, key) for the transaction and read its record (None when first)."""
    yield sql.set_tenant(tenant)
    yield sql.lock_idempotency(tenant, key)
    return (yield sql.idempotency_record(tenant, key)).mappings().first()


def idempotency_record(
    tenant: str, key: str, request_sha256: str, answer: Answer, now: datetime
) -> Op[None]:
    """Record what the first attempt of (tenant, key) answered."""
    yield sql.set_tenant(tenant)  # the batch may have named other tenants
    yield sql.insert_idempotency_record(
        {
            "tenant": tenant,
            "idempotency_key": key,
            "request_sha256": request_sha256,
            "status_code": answer.code,
            "response": answer.payload,
            "created_at": now,
        }
    )


def replay(record: Any, request_sha256: str) -> Idempotent:
    """What a repeated request finds: the first answer, or a conflict for another body."""
    if record["request_sha256"] != request_sha256:
        return Idempotent(IdempotencyOutcome.CONFLICT, None)
    answer = Answer(code=int(record["status_code"]), payload=dict(record["response"]))
    return Idempotent(IdempotencyOutcome.REPLAY, answer)
