"""The store's operations on memories, as generators of SQL steps (see :mod:`ops`).

Each is a function of its dependencies and arguments; arguments arrive checked (see
:mod:`checks`), vectors arrive computed (embedding is the facade's job, off the event loop for
the async one). Both facades run them in one transaction each.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from harness.errors import ConflictingState, MemoryNotFound
from harness.fingerprint import fingerprint
from harness.memory import sql, vectors
from harness.memory.checks import lock_name
from harness.memory.embedder import Embedder
from harness.memory.idempotency import Answer, IdempotencyOutcome, Idempotent
from harness.memory.ops import Op
from harness.memory.rows import memory_from_row
from harness.memory.types import (
    AUTOMATIC_ORIGINS,
    Memory,
    MemoryCandidate,
    Scope,
    Status,
    WorkflowDeleted,
)

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
    """Write validated candidates; the transaction admits ``tenant`` (switched per candidate)."""
    if pairs is not None and embedder is not None:
        yield from vectors.claim_model(embedder)
    # Every lock this batch needs, in one global order: concurrent batches cannot deadlock,
    # and a keyless content is checked and inserted by one writer at a time.
    names = sorted({n for n in map(lock_name, cands) if n is not None})
    if names:
        yield sql.lock_names(names)
    written: list[Memory] = []
    for i, cand in enumerate(cands):
        if cand.tenant != tenant:
            tenant = cand.tenant
            yield sql.set_tenant(tenant)
        vector = pairs[0][i] if pairs else None
        context_vector = pairs[1][i] if pairs else None
        written.append((yield from _write_one(cand, vector, context_vector, now)))
    return written


def _write_one(
    cand: MemoryCandidate,
    vector: list[float] | None,
    context_vector: list[float] | None,
    now: datetime,
) -> Op[Memory]:
    pending = cand.scope is Scope.PLATFORM and cand.source.origin in AUTOMATIC_ORIGINS
    fp = fingerprint(cand.content)
    new_id = uuid.uuid4()
    supersedes: uuid.UUID | None = None
    if cand.key is None:
        existing = (
            (
                yield sql.active_with_fingerprint(
                    cand.tenant, cand.scope, cand.scope_key, cand.kind, fp
                )
            )
            .mappings()
            .first()
        )
        if existing is not None:
            if pending or existing["status"] == Status.ACTIVE.value:
                return memory_from_row(existing)
            # A deliberate write of what an automatic one proposed: it takes effect now and
            # the waiting proposal is closed as superseded by it (linked both ways).
            supersedes = existing["id"]
            yield sql.supersede(cand.tenant, existing["id"], new_id)
            log.info("write %s supersedes identical pending memory %s", new_id, supersedes)
    elif not pending:
        supersedes = yield from _supersede_active(
            cand.tenant, cand.scope, cand.scope_key, cand.key, new_id
        )
    row = {
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
        "created_at": now,
        "expires_at": cand.expires_at,
        "supersedes": supersedes,
        "fingerprint": fp,
        "embedding": vector,
        "context_embedding": context_vector,
    }
    return memory_from_row((yield sql.insert_memory(row)).mappings().one())


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
    yield sql.delete_by_id(tenant, memory_id)
    return True


def delete_scope(tenant: str, scope: Scope, scope_key: str) -> Op[int]:
    """Delete every memory of one (tenant, scope, scope_id); returns the count."""
    return int((yield sql.delete_scope(tenant, scope, scope_key)).rowcount)


def delete_workflow(tenant: str, workflow_id: str) -> Op[WorkflowDeleted]:
    """Delete a workflow's memories (all statuses) and its run records, in the caller's one
    transaction. Idempotent."""
    memories = int((yield sql.delete_scope(tenant, Scope.WORKFLOW, workflow_id)).rowcount)
    runs = int((yield sql.delete_runs_of_workflow(tenant, workflow_id)).rowcount)
    return WorkflowDeleted(memories=memories, runs=runs)


def purge_expired(at: datetime) -> Op[int]:
    """Delete memories whose ``expires_at <= at``, tenant by tenant (maintenance transaction)."""
    total = 0
    tenants = (yield sql.tenants_with_expired(at)).scalars().all()
    for tenant in tenants:
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
