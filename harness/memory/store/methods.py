"""Every public method of the MemoryStore, written once as a plan (see :mod:`.plans`).

Each function checks its arguments (typed ``InvalidInput`` naming the field), then yields the
effects the method needs. :class:`~harness.memory.store.sync.MemoryStore` runs a plan in place,
:class:`~harness.memory.store.aio.AsyncMemoryStore` awaits it: their methods are these functions
bound by one line each, with these docstrings and signatures.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from harness import metrics, tracing
from harness.errors import ConflictingState, InvalidInput, MemoryRejected
from harness.identifiers import check_identifier
from harness.memory.domain.distribution import ClusterState, DistributionReport
from harness.memory.domain.idempotency import Answer, IdempotencyOutcome, Idempotent
from harness.memory.domain.ranking import Scored
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import (
    Memory,
    MemoryCandidate,
    RecallRequest,
    Scope,
    WorkflowDeleted,
)
from harness.memory.embedding.embedder import Embedder
from harness.memory.store.base import StoreBase
from harness.memory.store.checks import (
    as_scope,
    as_uuid,
    check_batch_size,
    check_index_memory,
    check_lock_wait,
    check_now,
    check_reason,
    scope_key,
    validate_candidates,
)
from harness.memory.store.executors import Attempt, Blocking, OnConnection, Op
from harness.memory.store.migrate import current_revision
from harness.memory.store.observe import count_written, observe_recall
from harness.memory.store.ops import memories as memory_ops
from harness.memory.store.ops import vectors
from harness.memory.store.ops.citus import cluster_state_op, distribute_op
from harness.memory.store.ops.layout import ClusterReport, Layout, cluster_action, cluster_op
from harness.memory.store.ops.layout import layout_op as layout_read
from harness.memory.store.ops.retrieval import (
    MISS,
    coerce_request,
    known_query_vector,
    recall_failed,
    remember_query_vector,
)
from harness.memory.store.ops.status import (
    PROBE_USER,
    StoreStatus,
    build_status,
    constraints_among,
    left_out_ids,
    probe_request,
    status_counts,
)
from harness.memory.store.plans import (
    Plan,
    embedded,
    in_transaction,
    query_vector,
    read,
    request,
)

__all__ = [
    "approve",
    "audit",
    "check_embedding_model",
    "cluster",
    "cluster_state",
    "delete_scope",
    "delete_workflow",
    "distribute",
    "forget",
    "get",
    "history",
    "idempotent",
    "layout",
    "pending",
    "purge_expired",
    "recall",
    "reembed",
    "reject",
    "signals",
    "status",
    "stored_model",
    "write",
    "write_many",
]

Candidates = Sequence[MemoryCandidate | Mapping[str, Any]]
_SHA256 = re.compile("[0-9a-f]{64}")

# --- embedding model bookkeeping ---------------------------------------------------------------


def stored_model(store: StoreBase) -> Plan[tuple[str | None, int | None]]:
    """The (model, dimension) recorded as having built this store's vectors."""
    return (yield from in_transaction("read metadata", vectors.stored_model_op(), admits="none"))


def check_embedding_model(store: StoreBase) -> Plan[None]:
    """Raise ``EmbeddingModelMismatch`` when the configured model is not the recorded one."""
    if store.embedder is not None:
        yield from in_transaction(
            "read metadata", vectors.check_model(store.embedder), admits="none"
        )


# --- write path --------------------------------------------------------------------------------


def write(store: StoreBase, candidate: MemoryCandidate | Mapping[str, Any]) -> Plan[Memory]:
    """Validate, guard, embed and store one candidate; returns the stored memory.

    A keyed write supersedes the active item of the same (tenant, scope, scope_id, key).
    A keyless write whose content matches an active item there returns that item
    (idempotent). Platform candidates of automatic origin wait in ``pending_approval``.
    The model runs before a pooled connection is taken (in a worker thread under asyncio).

    Raises:
        InvalidInput: bad fields (nothing written). MemoryRejected: the guard refused it.
        StoreUnavailable / StoreError: the database failed (nothing written).
    """
    return (yield from _observed_write(store, [candidate], single=True))[0]


def write_many(store: StoreBase, candidates: Candidates) -> Plan[list[Memory]]:
    """Like :meth:`write` for many candidates in one transaction, embeddings batched.

    All or nothing: one invalid or rejected candidate means none is written.
    """
    return (yield from _observed_write(store, candidates, single=False))


def _observed_write(
    store: StoreBase, candidates: Candidates, *, single: bool
) -> Plan[list[Memory]]:
    """The write path, counted by outcome (``harness_writes``) inside a ``harness.write`` span."""
    sized = isinstance(candidates, (list, tuple))
    span = tracing.start("harness.write", {"harness.candidates": len(candidates) if sized else 0})
    try:
        cands = validate_candidates(
            candidates, store.settings, store.guard, single=single, now=store.clock.now()
        )
        if cands:
            span.set_attributes(tracing.identity(cands[0].tenant))
        written = yield from _write_checked(store, cands)
    except MemoryRejected as exc:
        metrics.write_outcome("rejected", rule=exc.rule)
        tracing.failed(span, exc)
        raise
    except ConflictingState as exc:
        metrics.write_outcome("conflict")
        tracing.failed(span, exc)
        raise
    except BaseException as exc:
        tracing.failed(span, exc)
        raise
    finally:
        span.end()
    count_written(written)
    return written


def _write_checked(store: StoreBase, cands: list[MemoryCandidate]) -> Plan[list[Memory]]:
    if not cands:
        return []
    pairs = yield from embedded(_embedding(store, cands))  # before taking a pooled connection
    tenant = cands[0].tenant
    op = memory_ops.write_validated(cands, pairs, tenant, store.embedder, store.clock.now())
    written: list[Memory] = yield from in_transaction("write", op, tenant)
    store.router.share_position(tenant, {c.tenant for c in cands})
    return written


def _embedding(
    store: StoreBase, cands: list[MemoryCandidate]
) -> Callable[[], vectors.Pairs | None]:
    embedder = store.embedder
    contents, contexts = [c.content for c in cands], [c.context for c in cands]
    return lambda: vectors.embed_or_none(embedder, contents, contexts)


# --- reads -------------------------------------------------------------------------------------


def get(store: StoreBase, memory_id: uuid.UUID | str, *, tenant: str) -> Plan[Memory | None]:
    """The tenant's memory with that id, whatever its status; None when the tenant has none
    (an id of another tenant is not found). Read-only (a replica may answer)."""
    mid = as_uuid(memory_id)
    tenant = check_identifier(tenant, "tenant")
    return (yield from read("get", tenant, lambda: memory_ops.get(tenant, mid)))


def history(
    store: StoreBase, tenant: str, scope: Scope | str, scope_id: str | None, key: str
) -> Plan[list[Memory]]:
    """Every version of one key, oldest first (superseded ones included). Read-only."""
    tenant = check_identifier(tenant, "tenant")
    scope = as_scope(scope)
    skey = scope_key(scope, scope_id)
    key = check_identifier(key, "key")
    return (
        yield from read("history", tenant, lambda: memory_ops.history(tenant, scope, skey, key))
    )


def pending(store: StoreBase, tenant: str) -> Plan[list[Memory]]:
    """Memories of the tenant waiting for an admin decision, oldest first. Read-only."""
    tenant = check_identifier(tenant, "tenant")
    return (yield from read("pending", tenant, lambda: memory_ops.pending(tenant)))


def audit(store: StoreBase, tenant: str) -> Plan[list[dict[str, Any]]]:
    """Every approval decision of the tenant, oldest first (who, when, what, reason)."""
    tenant = check_identifier(tenant, "tenant")
    return (yield from read("audit", tenant, lambda: memory_ops.audit(tenant)))


# --- approval ----------------------------------------------------------------------------------


def approve(
    store: StoreBase, memory_id: uuid.UUID | str, approver: str, *, tenant: str
) -> Plan[Memory]:
    """Activate the tenant's pending memory (superseding the active item of its key) and
    audit it under that tenant.

    Raises:
        MemoryNotFound: the tenant has no memory with that id (another tenant's id is not
            found). ConflictingState: the memory is not pending.
    """
    return (yield from _decide(store, memory_id, approver, tenant, "approved", None))


def reject(
    store: StoreBase, memory_id: uuid.UUID | str, approver: str, reason: str, *, tenant: str
) -> Plan[Memory]:
    """Reject the tenant's pending memory with a reason; it is kept (status rejected) and
    audited. Raises like :meth:`approve`."""
    return (
        yield from _decide(store, memory_id, approver, tenant, "rejected", check_reason(reason))
    )


def _decide(
    store: StoreBase,
    memory_id: uuid.UUID | str,
    approver: str,
    tenant: str,
    decision: str,
    reason: str | None,
) -> Plan[Memory]:
    approver = check_identifier(approver, "approver")
    tenant = check_identifier(tenant, "tenant")
    op = memory_ops.decide(
        tenant, as_uuid(memory_id), approver, decision, reason, store.clock.now()
    )
    return (yield from in_transaction(decision, op, tenant))


# --- deletion ----------------------------------------------------------------------------------


def forget(store: StoreBase, memory_id: uuid.UUID | str, *, tenant: str) -> Plan[bool]:
    """Delete one of the tenant's memories and its embedding for good. Idempotent: returns
    False when the tenant has no memory with that id (another tenant's id included)."""
    mid = as_uuid(memory_id)
    tenant = check_identifier(tenant, "tenant")
    return (yield from in_transaction("forget", memory_ops.forget(tenant, mid), tenant))


def delete_scope(
    store: StoreBase, tenant: str, scope: Scope | str, scope_id: str | None
) -> Plan[int]:
    """Delete every memory of one (tenant, scope, scope_id), all statuses. Returns the count."""
    tenant = check_identifier(tenant, "tenant")
    scope = as_scope(scope)
    skey = scope_key(scope, scope_id)
    return (
        yield from in_transaction(
            "delete scope", memory_ops.delete_scope(tenant, scope, skey), tenant
        )
    )


def delete_workflow(store: StoreBase, tenant: str, workflow_id: str) -> Plan[WorkflowDeleted]:
    """Delete a workflow's memories (all statuses) and its run records in one transaction
    (the product deleted the workflow). Idempotent: a second call deletes nothing.

    Raises:
        InvalidInput: bad tenant or workflow id. StoreUnavailable / StoreError: the
            database failed (nothing deleted).
    """
    tenant = check_identifier(tenant, "tenant")
    workflow_id = check_identifier(workflow_id, "workflow_id")
    op = memory_ops.delete_workflow(tenant, workflow_id)
    return (yield from in_transaction("delete workflow", op, tenant))


def purge_expired(store: StoreBase, now: datetime | None = None) -> Plan[int]:
    """Delete memories whose ``expires_at <= now``, tenant by tenant. Returns the count."""
    check_now(now)
    at = now or store.clock.now()
    return (
        yield from in_transaction("purge expired", memory_ops.purge_expired(at), admits="everyone")
    )


def cluster(
    store: StoreBase, *, lock_wait_s: float = 3.0, index_memory_mb: int | None = None
) -> Plan[ClusterReport]:
    """Store each scope's memories together: rewrite the ``memories`` table in (tenant,
    scope, scope id) order with PostgreSQL's ``CLUSTER``, rebuilding its indexes, then
    refresh its statistics. A recall then reads a few pages per pool instead of about one
    per row (worth it for tenants of many users; repeat as new writes scatter again).

    Side effects: holds an exclusive lock on the table while it runs, so every tenant's
    reads and writes wait (recalls past their timeout degrade to empty); run it when the
    store is quiet (about 4 s per 100k memories without the HNSW index, 17-57 s with it on
    the benchmark machine, BENCHMARKS.md). Waits at most ``lock_wait_s`` for the lock, then
    raises ``StoreUnavailable`` having changed nothing. ``index_memory_mb`` (default: the
    server's ``maintenance_work_mem``) is the memory for rebuilding indexes: an HNSW graph
    that fits is rebuilt several times faster (~2 kB per memory).
    Idempotent: no memory changes.
    """
    wait_ms = check_lock_wait(lock_wait_s)
    index_mb = check_index_memory(index_memory_mb)
    started = time.perf_counter()
    before, after = yield from in_transaction(
        cluster_action(lock_wait_s), cluster_op(wait_ms, index_mb), admits="owner"
    )
    return ClusterReport(before, after, time.perf_counter() - started)


def distribute(store: StoreBase, *, shard_count: int | None = None) -> Plan[DistributionReport]:
    """Shard the store by tenant on a Citus coordinator: every table with a ``tenant`` column
    is distributed by it, co-located with ``memories``; the others become reference tables
    (``alembic_version`` stays on the coordinator); the application role may log in (the
    workers' connections log in as it). The table list is read from the schema, so after a
    migration adds a table, run it again.

    Side effects: moves existing rows to the shards (one transaction, as the tables' owner;
    writes wait while it runs). ``shard_count`` (1-4096, default the server's
    ``citus.shard_count``) applies to a new co-location group only. Idempotent: a second call
    finds nothing to do.

    Raises:
        InvalidInput: ``shard_count`` out of range.
        StoreMisconfigured: the server has no Citus.
        ConflictingState: a table is already distributed differently (the table is named);
            nothing is changed.
    """
    if shard_count is not None and (
        isinstance(shard_count, bool)
        or not isinstance(shard_count, int)
        or not 1 <= shard_count <= 4096
    ):
        raise InvalidInput("shard_count must be an integer from 1 to 4096", fields=("shard_count",))
    steps, granted = yield from in_transaction(
        "distribute tables", distribute_op(shard_count), admits="owner"
    )
    state = yield from cluster_state(store)
    assert state is not None  # distribute_op refused a server without Citus
    return DistributionReport(steps, granted, state)


def cluster_state(store: StoreBase) -> Plan[ClusterState | None]:
    """The Citus cluster: its nodes, and per table of the schema whether it is distributed,
    a reference or a local table, and its shard count; None on a server without Citus.
    Read-only."""
    return (yield from in_transaction("read cluster state", cluster_state_op(), admits="everyone"))


def layout(store: StoreBase) -> Plan[Layout]:
    """How scattered each scope's rows are (see :meth:`cluster`). Read-only; scans the
    whole table."""
    return (yield from in_transaction("read layout", layout_read(), admits="everyone"))


# --- recall ------------------------------------------------------------------------------------


def recall(store: StoreBase, request: RecallRequest | Mapping[str, Any]) -> Plan[RecallResult]:
    """Select, resolve, budget and render the memories for a run's first model call.

    Never raises because of the database unless ``request.strict``: a failure returns an
    empty result with ``complete=False`` and logs a warning (SPEC section 5). This is the one
    place that rule is written. Cancelling the asyncio call cancels the query on the server
    and returns the connection.
    """
    req = coerce_request(request)
    span = tracing.start("harness.recall", tracing.identity(req.tenant, req.user_id))
    try:
        try:
            result = yield from _recall(store, req, span)
        except Exception as exc:  # the host run must go on without memory, whatever failed
            metrics.recall_outcome("degraded")
            tracing.failed(span, exc)
            return recall_failed(req, exc)
        outcome = "items" if result.items else "abstained"
        metrics.recall_outcome(outcome)
        if span.is_recording():
            span.set_attribute("harness.outcome", outcome)
            span.set_attribute("harness.items", len(result.items))
            span.set_attribute("harness.complete", result.complete)
        return result
    finally:
        span.end()


def _recall(store: StoreBase, req: RecallRequest, span: tracing.Span) -> Plan[RecallResult]:
    now = req.now or store.clock.now()
    cap = store.settings.narrow_scope_cap
    t0 = time.time_ns()
    qv = yield from _query_vector(store, req.query)
    t1 = time.time_ns()
    fetched = yield from read(
        "recall", req.tenant, lambda: store.retriever.fetch_op(req, qv, now, cap)
    )
    t2 = time.time_ns()
    result = store.retriever.assemble_result(fetched, req, cap)
    t3 = time.time_ns()
    observe_recall(store, req, fetched, span, (t0, t1, t2, t3))
    return result


def _query_vector(store: StoreBase, query: str) -> Plan[list[float] | None]:
    cache = store.retriever.query_vectors
    known = known_query_vector(store.embedder, query, cache)
    if known is not MISS:
        return known
    vector = yield from query_vector(query)
    return remember_query_vector(store.embedder, query, cache, vector)


def signals(
    store: StoreBase, request: RecallRequest | Mapping[str, Any], *, use_vector: bool = True
) -> Plan[tuple[list[Scored], bool]]:
    """Every relevance-ranked candidate of a request with its raw signals, unjudged, and
    whether the query ran without a vector (always so with ``use_vector=False``, which
    ranks as a lexical-only store would). Read-only; for benchmarks and fitting the judge.
    """
    req = coerce_request(request)
    if not isinstance(use_vector, bool):
        raise InvalidInput("use_vector: True or False", fields=("use_vector",))
    now = req.now or store.clock.now()
    qv = (yield from _query_vector(store, req.query)) if use_vector else None
    rows = yield from read("recall", req.tenant, lambda: store.retriever.signals_op(req, qv, now))
    return rows, qv is None


# --- idempotent requests -----------------------------------------------------------------------


def idempotent(
    store: StoreBase,
    tenant: str,
    key: str,
    request_sha256: str,
    attempt: Callable[[Any], Any],
) -> Plan[Idempotent]:
    """Run ``attempt`` once per (tenant, key); a repeat with the same body gets the first
    :class:`Answer` back (``REPLAY``), another body gets ``CONFLICT`` and nothing runs.

    ``attempt`` receives a ``write_many`` bound to this request's connection (a function on
    the sync store, a coroutine function on the asyncio one, where ``attempt`` is one too):
    the lock, the lookup, the write and the record happen in one transaction on one pooled
    connection (a request never waits for a second connection while holding one). An
    answer with ``record=False`` is rolled back and not recorded, so a retry runs again.
    What an answer's code means is the caller's business (see the ingest endpoint).
    """
    tenant = check_identifier(tenant, "tenant")
    key = check_identifier(key, "Idempotency-Key")
    if not isinstance(request_sha256, str) or not _SHA256.fullmatch(request_sha256):
        raise InvalidInput(
            "request_sha256: the request body's SHA-256, 64 lowercase hex digits",
            fields=("request_sha256",),
        )
    if not callable(attempt):
        raise InvalidInput(
            f"attempt: a function of write_many, not {type(attempt).__name__}",
            fields=("attempt",),
        )
    answer = yield from request(
        "idempotent request", _idempotent_op(store, tenant, key, request_sha256, attempt)
    )
    if answer.outcome is IdempotencyOutcome.CONFLICT:
        metrics.write_outcome("conflict")
    return answer


def _idempotent_op(
    store: StoreBase, tenant: str, key: str, request_sha256: str, attempt: Callable[[Any], Any]
) -> Op[tuple[Idempotent, bool, frozenset[str]]]:
    record = yield from memory_ops.idempotency_lookup(tenant, key)
    if record is not None:
        return memory_ops.replay(record, request_sha256), False, frozenset()
    written_tenants = {tenant}

    def write_here(candidates: Candidates) -> Op[list[Memory]]:
        try:
            cands = validate_candidates(
                candidates, store.settings, store.guard, now=store.clock.now()
            )
        except MemoryRejected as exc:
            metrics.write_outcome("rejected", rule=exc.rule)
            raise
        if not cands:
            return []
        written_tenants.update(c.tenant for c in cands)
        pairs = yield Blocking(_embedding(store, cands))
        written = yield from memory_ops.write_validated(
            cands, pairs, tenant, store.embedder, store.clock.now()
        )
        count_written(written)
        return written

    answer: Answer = yield Attempt(attempt, write_here)
    if not answer.record:
        return Idempotent(IdempotencyOutcome.NEW, answer), False, frozenset()
    yield from memory_ops.idempotency_record(tenant, key, request_sha256, answer, store.clock.now())
    return Idempotent(IdempotencyOutcome.NEW, answer), True, frozenset(written_tenants)


# --- maintenance -------------------------------------------------------------------------------


def reembed(
    store: StoreBase,
    *,
    batch_size: int = 256,
    all_rows: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Plan[int]:
    """Rebuild vectors with the configured model and record it as the store's model.

    Side effects: rewrites embeddings (all rows, or only missing ones) and the recorded
    model, one transaction per batch (the model runs in a worker thread under asyncio).
    Idempotent. Returns how many rows were embedded.
    """
    batch_size = check_batch_size(batch_size)  # before anything is recorded
    if not isinstance(all_rows, bool):
        raise InvalidInput("all_rows: True or False", fields=("all_rows",))
    if progress is not None and not callable(progress):
        raise InvalidInput("progress: a function (done, total) or None", fields=("progress",))
    embedder = vectors.require_embedder(store.embedder, store.lexical_reason)
    span = tracing.start("harness.reembed", {"harness.all_rows": all_rows})
    try:
        done = yield from _reembed(store, embedder, batch_size, all_rows, progress)
        span.set_attribute("harness.embedded", done)
    except BaseException as exc:
        tracing.failed(span, exc)
        raise
    finally:
        span.end()
    return done


def _reembed(
    store: StoreBase,
    embedder: Embedder,
    batch_size: int,
    all_rows: bool,
    progress: Callable[[int, int], None] | None,
) -> Plan[int]:
    all_rows, total = yield from in_transaction(
        "reembed prepare", vectors.reembed_prepare(embedder, all_rows=all_rows), admits="owner"
    )
    done = 0
    after: uuid.UUID | None = None
    while True:
        last = yield from in_transaction(
            "reembed", _reembed_batch(embedder, batch_size, after, all_rows), admits="everyone"
        )
        if last is None:
            yield from _reembed_events(embedder, batch_size, all_rows)
            return done
        after, count = last
        done += count
        metrics.reembedded(count)
        if progress:
            progress(done, total)


def _reembed_events(embedder: Embedder, batch_size: int, all_rows: bool) -> Plan[None]:
    """The lessons' contexts and wordings (their events), after the memories: the same model."""
    after: tuple[str, int] | None = None
    while after != ("", -1):
        op = vectors.reembed_events_batch(embedder, batch_size, after, all_rows=all_rows)
        after = yield from in_transaction("reembed", op, admits="everyone")


def _reembed_batch(
    embedder: Embedder, batch_size: int, after: uuid.UUID | None, all_rows: bool
) -> Op[tuple[uuid.UUID, int] | None]:
    rows = yield from vectors.reembed_batch(batch_size, after, all_rows=all_rows)
    if not rows:
        return None
    contents, contexts = [r.content for r in rows], [r.context for r in rows]
    pairs = yield Blocking(lambda: vectors.embed_pairs(embedder, contents, contexts))
    yield from vectors.store_embeddings(rows, pairs)
    return rows[-1].id, len(rows)


def status(store: StoreBase) -> Plan[StoreStatus]:
    """Redacted URL, schema revision, embedder mode, counts per tenant and status, and per
    tenant the platform constraints a default-sized recall cannot place. Read-only: one
    transaction for the counts, then one probe recall per tenant."""
    revision, counts = yield from in_transaction("status", _status_counts(), admits="everyone")
    over_budget: dict[str, int] = {}
    for tenant in counts[0]:
        store.retriever.incomplete_warnings.mute((tenant, PROBE_USER))
        result = yield from recall(store, probe_request(tenant))
        if not result.complete:
            left_out = []
            for memory_id in left_out_ids(result):
                left_out.append((yield from get(store, memory_id, tenant=tenant)))
            if n := constraints_among(left_out):
                over_budget[tenant] = n
    return build_status(
        url=store.url,
        revision=revision,
        embedder=store.embedder,
        choice=store.embedder_choice,
        lexical_reason=store.lexical_reason,
        counts=counts,
        constraints_over_budget=over_budget,
        read_replicas=store.read_routing().replicas,
    )


def _status_counts() -> Op[tuple[str | None, Any]]:
    revision = yield OnConnection(current_revision)
    counts = yield from status_counts()
    return revision, counts
