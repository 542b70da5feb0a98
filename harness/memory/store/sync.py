"""MemoryStore: the IO edge over PostgreSQL + pgvector (connect, write path, recall, lifecycle)."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harness.clock import Clock, SystemClock
from harness.errors import StoreUnavailable
from harness.identifiers import check_identifier
from harness.memory.domain.idempotency import Answer, IdempotencyOutcome, Idempotent
from harness.memory.domain.ranking import RankingConfig, Scored
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import (
    Memory,
    MemoryCandidate,
    RecallRequest,
    Scope,
    WorkflowDeleted,
)
from harness.memory.embedding.embedder import Embedder, EmbedderChoice
from harness.memory.embedding.query_batch import BlockingQueryBatcher
from harness.memory.guard import Guard, default_guard
from harness.memory.store import sql
from harness.memory.store.checks import (
    as_scope,
    as_uuid,
    check_index_memory,
    check_lock_wait,
    check_now,
    check_reason,
    scope_key,
    validate_candidates,
)
from harness.memory.store.connect import (
    AUTO,
    engine_options,
    pick_embedder,
    resolve_url,
    watch_pooled_connections,
)
from harness.memory.store.db import normalize_url, redact_url, translate_errors
from harness.memory.store.executors import run_sync
from harness.memory.store.migrate import check_schema_current, current_revision, upgrade_to_head
from harness.memory.store.ops import memories as memory_ops
from harness.memory.store.ops import vectors
from harness.memory.store.ops.layout import (
    ClusterReport,
    Layout,
    cluster_action,
    cluster_op,
    layout_op,
)
from harness.memory.store.ops.retrieval import (
    MISS,
    Retriever,
    coerce_request,
    embed_queries,
    known_query_vector,
    recall_failed,
    remember_query_vector,
)
from harness.memory.store.ops.runs import RunRecords
from harness.memory.store.ops.status import (
    PROBE_USER,
    StoreStatus,
    build_status,
    constraints_among,
    left_out_ids,
    probe_request,
    status_counts,
)
from harness.memory.store.read_routing import SyncReads, read_router
from harness.memory.store.replicas import ReadRouting, parse_read_urls
from harness.memory.store.rls import assume_app_role
from harness.settings import Settings

__all__ = ["AUTO", "MemoryStore", "StoreStatus", "WriteMany", "normalize_url", "redact_url"]

log = logging.getLogger(__name__)

#: ``write_many`` as handed to an idempotent attempt (bound to the request's transaction).
WriteMany = Callable[[Sequence[MemoryCandidate | Mapping[str, Any]]], list[Memory]]


class MemoryStore:
    """Long-term memory on PostgreSQL + pgvector. Thread-safe; one instance per process is plenty.

    Build it with :meth:`connect`. Every method is tenant-scoped in SQL; driver errors come out
    as :class:`StoreUnavailable` or :class:`StoreError`.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        settings: Settings,
        embedder: Embedder | None,
        guard: Guard,
        clock: Clock,
        url: str,
        lexical_reason: str | None = None,
        reads: SyncReads | None = None,
    ):
        self._engine = engine
        #: Where reads run (replicas of HARNESS_DATABASE_READ_URL, else the primary).
        self._reads = reads or SyncReads(engine, read_router(settings, ()), (), settings)
        self.settings = settings
        self.embedder = embedder
        self.guard = guard
        self.clock = clock
        self.url = url
        self.lexical_reason = lexical_reason
        #: Where the embedding model came from (None when the caller passed the embedder).
        self.embedder_choice: EmbedderChoice | None = None
        self.retriever = Retriever(RankingConfig(top_n=settings.recall_top_n))
        # concurrent recalls share model calls: queries waiting together are embedded together
        self._query_batcher = BlockingQueryBatcher(
            lambda texts: embed_queries(self.embedder, texts)
        )
        self.runs = RunRecords(self.transaction)

    # --- construction --------------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        url: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = AUTO,
        guard: Guard | None = None,
        clock: Clock | None = None,
        migrate: bool | None = None,
        check_model: bool = True,
    ) -> MemoryStore:
        """Open the store; start the embedded server when no URL is configured.

        Side effects: may start the embedded PostgreSQL (``HARNESS_HOME``), migrates the schema
        to head under an advisory lock (idempotent; safe from several processes at once), and
        loads the embedding model unless ``embedder`` is given (``None`` = lexical-only).
        ``migrate``: None follows ``HARNESS_MIGRATE`` (auto: migrate; never: only check the
        revision, raising when the schema is behind); True migrates; False does neither (the
        caller checks, e.g. a readiness probe).

        With ``HARNESS_DATABASE_READ_URL``, reads go to those replicas and every write to the
        primary (see :meth:`read_routing`); an unreachable replica is a warning, not an error.

        Raises:
            InvalidInput: the URL is not one the store can use (names HARNESS_DATABASE_URL, or
                HARNESS_DATABASE_READ_URL for a replica's).
            StoreMisconfigured: wrong password, missing database or privilege, SSL required,
                unknown host, or (migrations off) a schema behind this version.
            StoreUnavailable: the database cannot be reached.
            EmbeddingModelMismatch: vectors were built by another model (see ``reembed``).
        """
        settings = settings or Settings.from_env()
        read_urls = parse_read_urls(settings.database_read_url_value)
        full_url, embedded = resolve_url(url, settings)
        engine = sa.create_engine(full_url, **engine_options(settings, full_url))
        sa.event.listen(engine, "connect", assume_app_role)
        watch_pooled_connections(engine)
        reads = SyncReads(engine, read_router(settings, read_urls), read_urls, settings)
        try:
            mode = settings.migrate if migrate is None else ("auto" if migrate else "off")
            if mode == "auto":
                with translate_errors("migrate", url=full_url):
                    upgrade_to_head(engine, app_role=settings.app_role)
                # The migrating connection may predate the application role: start afresh so
                # every pooled connection runs as that role.
                engine.dispose()
            elif mode == "never":
                try:
                    with translate_errors("connect", url=full_url):
                        check_schema_current(engine)
                except StoreUnavailable as exc:
                    # Not migrating, nothing to wait for: the store degrades until the server
                    # is back (pre-ping reconnects); a wrong configuration still fails here.
                    log.warning("schema revision not checked: %s", exc)
            reads.probe()
            pick = pick_embedder(embedder, settings, embedded=embedded)
            store = cls(
                engine,
                settings=settings,
                embedder=pick.embedder,
                guard=guard or default_guard(),
                clock=clock or SystemClock(),
                url=full_url,
                lexical_reason=pick.reason,
                reads=reads,
            )
            store.embedder_choice = pick.choice
            pick.warn_if_lexical(settings)
            if pick.embedder is not None and check_model:
                store.check_embedding_model()
            return store
        except BaseException:
            reads.dispose()
            engine.dispose()
            raise

    def close(self) -> None:
        """Release every pooled connection (replicas' too). Idempotent."""
        self._reads.dispose()
        self._engine.dispose()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for adapters living in this package family)."""
        return self._engine

    @property
    def lexical_only(self) -> bool:
        """True when recall uses full-text search alone."""
        return self.embedder is None

    @contextlib.contextmanager
    def transaction(self, action: str, *, tenant: str | None = None) -> Iterator[Connection]:
        """One transaction with driver errors translated, admitting ``tenant``'s rows only.

        Row-level security is defence in depth under the tenant filter every statement has:
        without ``tenant`` no row of a tenant table is visible or writable. Always on the
        primary; with read replicas, the commit's WAL position is noted for ``tenant``'s reads.
        """
        with translate_errors(action), self._engine.connect() as conn:
            with conn.begin():
                if tenant is not None:
                    conn.execute(sql.set_tenant(tenant))
                yield conn
            if tenant is not None:
                self._reads.note_commit(conn, (tenant,))

    @contextlib.contextmanager
    def maintenance(self, action: str, *, as_owner: bool = False) -> Iterator[Connection]:
        """One transaction over every tenant's rows, for work that is cross-tenant by nature
        (expiry purge, status counts, reconcile, reembed). ``as_owner`` runs it as the login
        itself, needed to change the schema (re-declaring the vector columns)."""
        with translate_errors(action), self._engine.connect() as conn:
            with conn.begin():
                if as_owner:
                    conn.execute(sql.reset_local_role())
                conn.execute(sql.all_tenants())
                yield conn
            self._reads.note_commit(conn, (None,))

    # --- embedding model bookkeeping -----------------------------------------------------------

    def stored_model(self) -> tuple[str | None, int | None]:
        """The (model, dimension) recorded as having built this store's vectors."""
        with self.transaction("read metadata") as conn:
            return run_sync(conn, vectors.stored_model_op())

    def check_embedding_model(self) -> None:
        """Raise ``EmbeddingModelMismatch`` when the configured model is not the recorded one."""
        if self.embedder is not None:
            with self.transaction("read metadata") as conn:
                run_sync(conn, vectors.check_model(self.embedder))

    # --- write path ----------------------------------------------------------------------------

    def _validate(
        self, candidates: Sequence[MemoryCandidate | Mapping[str, Any]], *, single: bool = False
    ) -> list[MemoryCandidate]:
        return validate_candidates(candidates, self.settings, self.guard, single=single)

    def write(self, candidate: MemoryCandidate | Mapping[str, Any]) -> Memory:
        """Validate, guard, embed and store one candidate; returns the stored memory.

        A keyed write supersedes the active item of the same (tenant, scope, scope_id, key).
        A keyless write whose content matches an active item there returns that item
        (idempotent). Platform candidates of automatic origin wait in ``pending_approval``.

        Raises:
            InvalidInput: bad fields (nothing written). MemoryRejected: the guard refused it.
            StoreUnavailable / StoreError: the database failed (nothing written).
        """
        return self._write_checked(self._validate([candidate], single=True))[0]

    def write_many(self, candidates: Sequence[MemoryCandidate | Mapping[str, Any]]) -> list[Memory]:
        """Like :meth:`write` for many candidates in one transaction, embeddings batched.

        All or nothing: one invalid or rejected candidate means none is written.
        """
        return self._write_checked(self._validate(candidates))

    def _write_checked(self, cands: list[MemoryCandidate]) -> list[Memory]:
        if not cands:
            return []
        pairs = self._embed(cands)  # before taking a pooled connection
        tenant = cands[0].tenant
        with self.transaction("write", tenant=tenant) as conn:
            written = run_sync(
                conn,
                memory_ops.write_validated(cands, pairs, tenant, self.embedder, self.clock.now()),
            )
        self._reads.router.share_position(tenant, {c.tenant for c in cands})
        return written

    def _embed(self, cands: list[MemoryCandidate]) -> vectors.Pairs | None:
        return vectors.embed_or_none(
            self.embedder, [c.content for c in cands], [c.context for c in cands]
        )

    # --- reads ---------------------------------------------------------------------------------

    def get(self, memory_id: uuid.UUID | str, *, tenant: str) -> Memory | None:
        """The tenant's memory with that id, whatever its status; None when the tenant has none
        (an id of another tenant is not found)."""
        mid = as_uuid(memory_id)
        tenant = check_identifier(tenant, "tenant")
        return self._reads.read("get", tenant, lambda: memory_ops.get(tenant, mid))

    def history(
        self, tenant: str, scope: Scope | str, scope_id: str | None, key: str
    ) -> list[Memory]:
        """Every version of one key, oldest first (superseded ones included)."""
        tenant = check_identifier(tenant, "tenant")
        scope = as_scope(scope)
        skey = scope_key(scope, scope_id)
        key = check_identifier(key, "key")
        return self._reads.read(
            "history", tenant, lambda: memory_ops.history(tenant, scope, skey, key)
        )

    def pending(self, tenant: str) -> list[Memory]:
        """Memories of the tenant waiting for an admin decision, oldest first."""
        tenant = check_identifier(tenant, "tenant")
        return self._reads.read("pending", tenant, lambda: memory_ops.pending(tenant))

    def audit(self, tenant: str) -> list[dict[str, Any]]:
        """Every approval decision of the tenant, oldest first (who, when, what, reason)."""
        tenant = check_identifier(tenant, "tenant")
        return self._reads.read("audit", tenant, lambda: memory_ops.audit(tenant))

    # --- approval ------------------------------------------------------------------------------

    def approve(self, memory_id: uuid.UUID | str, approver: str, *, tenant: str) -> Memory:
        """Activate the tenant's pending memory (superseding the active item of its key) and
        audit it under that tenant.

        Raises:
            MemoryNotFound: the tenant has no memory with that id (another tenant's id is not
                found). ConflictingState: the memory is not pending.
        """
        return self._decide(memory_id, approver, tenant, "approved", None)

    def reject(
        self, memory_id: uuid.UUID | str, approver: str, reason: str, *, tenant: str
    ) -> Memory:
        """Reject the tenant's pending memory with a reason; it is kept (status rejected) and
        audited. Raises like :meth:`approve`."""
        return self._decide(memory_id, approver, tenant, "rejected", check_reason(reason))

    def _decide(
        self,
        memory_id: uuid.UUID | str,
        approver: str,
        tenant: str,
        decision: str,
        reason: str | None,
    ) -> Memory:
        approver = check_identifier(approver, "approver")
        tenant = check_identifier(tenant, "tenant")
        op = memory_ops.decide(
            tenant, as_uuid(memory_id), approver, decision, reason, self.clock.now()
        )
        with self.transaction(decision, tenant=tenant) as conn:
            return run_sync(conn, op)

    # --- deletion ------------------------------------------------------------------------------

    def forget(self, memory_id: uuid.UUID | str, *, tenant: str) -> bool:
        """Delete one of the tenant's memories and its embedding for good. Idempotent: returns
        False when the tenant has no memory with that id (another tenant's id included)."""
        mid = as_uuid(memory_id)
        tenant = check_identifier(tenant, "tenant")
        with self.transaction("forget", tenant=tenant) as conn:
            return run_sync(conn, memory_ops.forget(tenant, mid))

    def delete_scope(self, tenant: str, scope: Scope | str, scope_id: str | None) -> int:
        """Delete every memory of one (tenant, scope, scope_id), all statuses. Returns the count."""
        tenant = check_identifier(tenant, "tenant")
        scope = as_scope(scope)
        skey = scope_key(scope, scope_id)
        with self.transaction("delete scope", tenant=tenant) as conn:
            return run_sync(conn, memory_ops.delete_scope(tenant, scope, skey))

    def delete_workflow(self, tenant: str, workflow_id: str) -> WorkflowDeleted:
        """Delete a workflow's memories (all statuses) and its run records in one transaction
        (the product deleted the workflow). Idempotent: a second call deletes nothing.

        Raises:
            InvalidInput: bad tenant or workflow id. StoreUnavailable / StoreError: the
                database failed (nothing deleted).
        """
        tenant = check_identifier(tenant, "tenant")
        workflow_id = check_identifier(workflow_id, "workflow_id")
        with self.transaction("delete workflow", tenant=tenant) as conn:
            return run_sync(conn, memory_ops.delete_workflow(tenant, workflow_id))

    def purge_expired(self, now: datetime | None = None) -> int:
        """Delete memories whose ``expires_at <= now``, tenant by tenant. Returns the count."""
        check_now(now)
        at = now or self.clock.now()
        with self.maintenance("purge expired") as conn:
            return run_sync(conn, memory_ops.purge_expired(at))

    def cluster(
        self, *, lock_wait_s: float = 3.0, index_memory_mb: int | None = None
    ) -> ClusterReport:
        """Store each scope's memories together: rewrite the ``memories`` table in (tenant,
        scope, scope id) order with PostgreSQL's ``CLUSTER``, rebuilding its indexes, then
        refresh its statistics. A recall then reads a few pages per pool instead of about one
        per row (worth it for tenants of many users; repeat as new writes scatter again).

        Side effects: holds an exclusive lock on the table while it runs, so every tenant's
        reads and writes wait (recalls past their timeout degrade to empty); run it when the
        store is quiet (about 4 s per 100k memories without the HNSW index, 17-57 s with it on
        the benchmark machine, BENCHMARKS.md section 16). Waits at most ``lock_wait_s`` for the
        lock, then raises ``StoreUnavailable`` having changed nothing. ``index_memory_mb``
        (default: the server's ``maintenance_work_mem``) is the memory for rebuilding indexes:
        an HNSW graph that fits is rebuilt several times faster (~2 kB per memory).
        Idempotent: no memory changes.
        """
        wait_ms = check_lock_wait(lock_wait_s)
        index_mb = check_index_memory(index_memory_mb)
        started = time.perf_counter()
        with self.maintenance(cluster_action(lock_wait_s), as_owner=True) as conn:
            before, after = run_sync(conn, cluster_op(wait_ms, index_mb))
        return ClusterReport(before, after, time.perf_counter() - started)

    def layout(self) -> Layout:
        """How scattered each scope's rows are (see :meth:`cluster`). Read-only; scans the
        whole table."""
        with self.maintenance("read layout") as conn:
            return run_sync(conn, layout_op())

    # --- recall --------------------------------------------------------------------------------

    def recall(self, request: RecallRequest | Mapping[str, Any]) -> RecallResult:
        """Select, resolve, budget and render the memories for a run's first model call.

        Never raises because of the database unless ``request.strict``: a failure returns an
        empty result with ``complete=False`` and logs a warning. See SPEC section 5.
        """
        req = coerce_request(request)
        try:
            return self._recall(req)
        except Exception as exc:  # the host run must go on without memory, whatever failed
            return recall_failed(req, exc)

    def _recall(self, req: RecallRequest) -> RecallResult:
        now = req.now or self.clock.now()
        cap = self.settings.narrow_scope_cap
        qv = self._query_vector(req.query)
        fetched = self._reads.read(
            "recall", req.tenant, lambda: self.retriever.fetch_op(req, qv, now, cap)
        )
        return self.retriever.assemble_result(fetched, req, cap)

    def _query_vector(self, query: str) -> list[float] | None:
        known = known_query_vector(self.embedder, query, self.retriever.query_vectors)
        if known is not MISS:
            return known
        vector = self._query_batcher.vector(query)
        return remember_query_vector(self.embedder, query, self.retriever.query_vectors, vector)

    def signals(
        self, request: RecallRequest | Mapping[str, Any], *, use_vector: bool = True
    ) -> tuple[list[Scored], bool]:
        """Every relevance-ranked candidate of a request with its raw signals, unjudged, and
        whether the query ran without a vector (always so with ``use_vector=False``, which
        ranks as a lexical-only store would). Read-only; for benchmarks and fitting the judge.
        """
        req = coerce_request(request)
        now = req.now or self.clock.now()
        qv = self._query_vector(req.query) if use_vector else None
        rows = self._reads.read(
            "recall", req.tenant, lambda: self.retriever.signals_op(req, qv, now)
        )
        return rows, qv is None

    # --- idempotent requests -------------------------------------------------------------------

    def idempotent(
        self,
        tenant: str,
        key: str,
        request_sha256: str,
        attempt: Callable[[WriteMany], Answer],
    ) -> Idempotent:
        """Run ``attempt`` once per (tenant, key); a repeat with the same body gets the first
        :class:`Answer` back (``REPLAY``), another body gets ``CONFLICT`` and nothing runs.

        ``attempt`` receives a ``write_many`` bound to this request's connection: the lock,
        the lookup, the write and the record happen in one transaction on one pooled
        connection (a request never waits for a second connection while holding one). An
        answer with ``record=False`` is rolled back and not recorded, so a retry runs again.
        What an answer's code means is the caller's business (see the ingest endpoint).
        """
        tenant = check_identifier(tenant, "tenant")
        key = check_identifier(key, "Idempotency-Key")
        with translate_errors("idempotent request"), self._engine.connect() as conn:
            record = run_sync(conn, memory_ops.idempotency_lookup(tenant, key))
            if record is not None:
                conn.rollback()
                return memory_ops.replay(record, request_sha256)
            written_tenants = {tenant}

            def write_here(
                candidates: Sequence[MemoryCandidate | Mapping[str, Any]],
            ) -> list[Memory]:
                cands = self._validate(candidates)
                if not cands:
                    return []
                written_tenants.update(c.tenant for c in cands)
                op = memory_ops.write_validated(
                    cands, self._embed(cands), tenant, self.embedder, self.clock.now()
                )
                return run_sync(conn, op)

            answer = attempt(write_here)
            if not answer.record:
                conn.rollback()
                return Idempotent(IdempotencyOutcome.NEW, answer)
            run_sync(
                conn,
                memory_ops.idempotency_record(
                    tenant, key, request_sha256, answer, self.clock.now()
                ),
            )
            conn.commit()
            self._reads.note_commit(conn, written_tenants)
            return Idempotent(IdempotencyOutcome.NEW, answer)

    # --- read replicas -------------------------------------------------------------------------

    def read_routing(self) -> ReadRouting:
        """Where reads went (each replica, the primary, why they fell back) and each replica's
        health. No IO; empty without ``HARNESS_DATABASE_READ_URL``."""
        return self._reads.router.snapshot()

    # --- maintenance ---------------------------------------------------------------------------

    def reembed(
        self,
        *,
        batch_size: int = 256,
        all_rows: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Rebuild vectors with the configured model and record it as the store's model.

        Side effects: rewrites embeddings (all rows, or only missing ones) and the recorded
        model. Idempotent. Returns how many rows were embedded.
        """
        embedder = vectors.require_embedder(self.embedder, self.lexical_reason)
        with self.maintenance("reembed prepare", as_owner=True) as conn:
            all_rows, total = run_sync(conn, vectors.reembed_prepare(embedder, all_rows=all_rows))
        done = 0
        after: uuid.UUID | None = None
        while True:
            with self.maintenance("reembed") as conn:
                rows = run_sync(conn, vectors.reembed_batch(batch_size, after, all_rows=all_rows))
                if not rows:
                    break
                pairs = vectors.embed_pairs(
                    embedder, [r.content for r in rows], [r.context for r in rows]
                )
                run_sync(conn, vectors.store_embeddings(rows, pairs))
            after = rows[-1].id
            done += len(rows)
            if progress:
                progress(done, total)
        return done

    def status(self) -> StoreStatus:
        """Redacted URL, schema revision, embedder mode, counts per tenant and status, and per
        tenant the platform constraints a default-sized recall cannot place. Read-only: one
        transaction for the counts, then one probe recall per tenant."""
        with self.maintenance("status") as conn:
            revision = current_revision(conn)
            counts = run_sync(conn, status_counts())
        over_budget: dict[str, int] = {}
        for tenant in counts[0]:
            self.retriever.incomplete_warnings.mute((tenant, PROBE_USER))
            result = self.recall(probe_request(tenant))
            if not result.complete:
                left_out = [self.get(i, tenant=tenant) for i in left_out_ids(result)]
                if n := constraints_among(left_out):
                    over_budget[tenant] = n
        return build_status(
            url=self.url,
            revision=revision,
            embedder=self.embedder,
            choice=self.embedder_choice,
            lexical_reason=self.lexical_reason,
            counts=counts,
            constraints_over_budget=over_budget,
            read_replicas=self.read_routing().replicas,
        )
