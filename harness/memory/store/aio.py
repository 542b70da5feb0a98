"""AsyncMemoryStore: the asyncio twin of :class:`MemoryStore`, over the same operations.

Same settings, same embedded default, same row-level security (tenant per transaction, the
application role per pooled connection), same names, arguments, errors and degradation rules;
every method is a coroutine. Statements run on SQLAlchemy's asyncio engine with psycopg 3
async; embedding and other blocking work (starting the embedded server, migrating, loading the
model) runs in worker threads, off the event loop. Cancelling a call (e.g. ``asyncio.timeout``
around ``recall``) cancels its query on the server and returns the connection to the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

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
from harness.memory.embedding.query_batch import QueryBatcher
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
from harness.memory.store.db import translate_errors
from harness.memory.store.executors import run_async
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
from harness.memory.store.ops.runs import AsyncRunRecords
from harness.memory.store.ops.status import (
    PROBE_USER,
    StoreStatus,
    build_status,
    constraints_among,
    left_out_ids,
    probe_request,
    status_counts,
)
from harness.memory.store.read_routing import AsyncReads, read_router
from harness.memory.store.replicas import ReadRouting, parse_read_urls
from harness.memory.store.rls import assume_app_role
from harness.settings import Settings

__all__ = ["AsyncMemoryStore", "AsyncWriteMany"]

log = logging.getLogger(__name__)

#: ``write_many`` as handed to an idempotent attempt (bound to the request's transaction).
AsyncWriteMany = Callable[[Sequence[MemoryCandidate | Mapping[str, Any]]], Awaitable[list[Memory]]]


def _migrate(url: str, mode: str, app_role: str | None) -> None:
    """Migrate to head (``auto``) or check the schema is current (``never``) on a short-lived
    sync engine (Alembic runs synchronously); the same rules as ``MemoryStore.connect``."""
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        if mode == "auto":
            with translate_errors("migrate", url=url):
                upgrade_to_head(engine, app_role=app_role)
        elif mode == "never":
            try:
                with translate_errors("connect", url=url):
                    check_schema_current(engine)
            except StoreUnavailable as exc:
                log.warning("schema revision not checked: %s", exc)
    finally:
        engine.dispose()


class AsyncMemoryStore:
    """Long-term memory on PostgreSQL + pgvector, for asyncio. Safe to share between tasks.

    Build it with :meth:`connect`. Every method is tenant-scoped in SQL; driver errors come out
    as :class:`StoreUnavailable` or :class:`StoreError`.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        settings: Settings,
        embedder: Embedder | None,
        guard: Guard,
        clock: Clock,
        url: str,
        lexical_reason: str | None = None,
        reads: AsyncReads | None = None,
    ):
        self._engine = engine
        #: Where reads run (replicas of HARNESS_DATABASE_READ_URL, else the primary).
        self._reads = reads or AsyncReads(engine, read_router(settings, ()), (), settings)
        self.settings = settings
        self.embedder = embedder
        self.guard = guard
        self.clock = clock
        self.url = url
        self.lexical_reason = lexical_reason
        #: Where the embedding model came from (None when the caller passed the embedder).
        self.embedder_choice: EmbedderChoice | None = None
        self.retriever = Retriever(RankingConfig(top_n=settings.recall_top_n))
        self.runs = AsyncRunRecords(self.transaction)
        # concurrent recalls share model calls: queries waiting together are embedded together
        self._query_batcher = QueryBatcher(lambda texts: embed_queries(self.embedder, texts))

    # --- construction --------------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        url: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = AUTO,
        guard: Guard | None = None,
        clock: Clock | None = None,
        migrate: bool | None = None,
        check_model: bool = True,
    ) -> AsyncMemoryStore:
        """Open the store; start the embedded server when no URL is configured.

        Side effects as :meth:`MemoryStore.connect` (embedded server, idempotent migration
        under an advisory lock, model loading), each run in a worker thread. Read replicas as
        there (``HARNESS_DATABASE_READ_URL``; see :meth:`read_routing`).

        Raises:
            InvalidInput: a URL the store cannot use (names the setting).
            StoreUnavailable: the database cannot be reached.
            EmbeddingModelMismatch: vectors were built by another model (see ``reembed``).
        """
        settings = settings or Settings.from_env()
        read_urls = parse_read_urls(settings.database_read_url_value)
        full_url, embedded = await asyncio.to_thread(resolve_url, url, settings)
        mode = settings.migrate if migrate is None else ("auto" if migrate else "off")
        await asyncio.to_thread(_migrate, full_url, mode, settings.app_role)
        engine = create_async_engine(full_url, **engine_options(settings, full_url))
        sa.event.listen(engine.sync_engine, "connect", assume_app_role)
        watch_pooled_connections(engine.sync_engine)
        reads = AsyncReads(engine, read_router(settings, read_urls), read_urls, settings)
        try:
            await reads.probe()
            pick = await asyncio.to_thread(pick_embedder, embedder, settings, embedded=embedded)
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
                await store.check_embedding_model()
            return store
        except BaseException:
            await reads.dispose()
            await engine.dispose()
            raise

    async def close(self) -> None:
        """Release every pooled connection (replicas' too). Idempotent."""
        await self._reads.dispose()
        await self._engine.dispose()

    async def __aenter__(self) -> AsyncMemoryStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy asyncio engine."""
        return self._engine

    @property
    def lexical_only(self) -> bool:
        """True when recall uses full-text search alone."""
        return self.embedder is None

    @contextlib.asynccontextmanager
    async def transaction(
        self, action: str, *, tenant: str | None = None
    ) -> AsyncIterator[AsyncConnection]:
        """One transaction with driver errors translated, admitting ``tenant``'s rows only
        (see :meth:`MemoryStore.transaction`)."""
        with translate_errors(action):
            async with self._engine.connect() as conn:
                async with conn.begin():
                    if tenant is not None:
                        await conn.execute(sql.set_tenant(tenant))
                    yield conn
                if tenant is not None:
                    await self._reads.note_commit(conn, (tenant,))

    @contextlib.asynccontextmanager
    async def maintenance(
        self, action: str, *, as_owner: bool = False
    ) -> AsyncIterator[AsyncConnection]:
        """One transaction over every tenant's rows (see :meth:`MemoryStore.maintenance`)."""
        with translate_errors(action):
            async with self._engine.connect() as conn:
                async with conn.begin():
                    if as_owner:
                        await conn.execute(sql.reset_local_role())
                    await conn.execute(sql.all_tenants())
                    yield conn
                await self._reads.note_commit(conn, (None,))

    # --- embedding model bookkeeping -----------------------------------------------------------

    async def stored_model(self) -> tuple[str | None, int | None]:
        """The (model, dimension) recorded as having built this store's vectors."""
        async with self.transaction("read metadata") as conn:
            return await run_async(conn, vectors.stored_model_op())

    async def check_embedding_model(self) -> None:
        """Raise ``EmbeddingModelMismatch`` when the configured model is not the recorded one."""
        if self.embedder is not None:
            async with self.transaction("read metadata") as conn:
                await run_async(conn, vectors.check_model(self.embedder))

    # --- write path ----------------------------------------------------------------------------

    def _validate(
        self, candidates: Sequence[MemoryCandidate | Mapping[str, Any]], *, single: bool = False
    ) -> list[MemoryCandidate]:
        return validate_candidates(candidates, self.settings, self.guard, single=single)

    async def write(self, candidate: MemoryCandidate | Mapping[str, Any]) -> Memory:
        """As :meth:`MemoryStore.write` (same rules, same errors), embedding in a thread."""
        return (await self._write_checked(self._validate([candidate], single=True)))[0]

    async def write_many(
        self, candidates: Sequence[MemoryCandidate | Mapping[str, Any]]
    ) -> list[Memory]:
        """As :meth:`MemoryStore.write_many`: one transaction, all or nothing."""
        return await self._write_checked(self._validate(candidates))

    async def _write_checked(self, cands: list[MemoryCandidate]) -> list[Memory]:
        if not cands:
            return []
        pairs = await self._embed(cands)  # before taking a pooled connection
        tenant = cands[0].tenant
        async with self.transaction("write", tenant=tenant) as conn:
            written = await run_async(
                conn,
                memory_ops.write_validated(cands, pairs, tenant, self.embedder, self.clock.now()),
            )
        self._reads.router.share_position(tenant, {c.tenant for c in cands})
        return written

    async def _embed(self, cands: list[MemoryCandidate]) -> vectors.Pairs | None:
        if self.embedder is None:
            return None
        return await asyncio.to_thread(
            vectors.embed_or_none,
            self.embedder,
            [c.content for c in cands],
            [c.context for c in cands],
        )

    # --- reads ---------------------------------------------------------------------------------

    async def get(self, memory_id: uuid.UUID | str, *, tenant: str) -> Memory | None:
        """As :meth:`MemoryStore.get`."""
        mid = as_uuid(memory_id)
        tenant = check_identifier(tenant, "tenant")
        return await self._reads.read("get", tenant, lambda: memory_ops.get(tenant, mid))

    async def history(
        self, tenant: str, scope: Scope | str, scope_id: str | None, key: str
    ) -> list[Memory]:
        """As :meth:`MemoryStore.history`: every version of one key, oldest first."""
        tenant = check_identifier(tenant, "tenant")
        scope = as_scope(scope)
        skey = scope_key(scope, scope_id)
        key = check_identifier(key, "key")
        return await self._reads.read(
            "history", tenant, lambda: memory_ops.history(tenant, scope, skey, key)
        )

    async def pending(self, tenant: str) -> list[Memory]:
        """As :meth:`MemoryStore.pending`."""
        tenant = check_identifier(tenant, "tenant")
        return await self._reads.read("pending", tenant, lambda: memory_ops.pending(tenant))

    async def audit(self, tenant: str) -> list[dict[str, Any]]:
        """As :meth:`MemoryStore.audit`."""
        tenant = check_identifier(tenant, "tenant")
        return await self._reads.read("audit", tenant, lambda: memory_ops.audit(tenant))

    # --- approval ------------------------------------------------------------------------------

    async def approve(self, memory_id: uuid.UUID | str, approver: str, *, tenant: str) -> Memory:
        """As :meth:`MemoryStore.approve` (``MemoryNotFound`` / ``ConflictingState``)."""
        return await self._decide(memory_id, approver, tenant, "approved", None)

    async def reject(
        self, memory_id: uuid.UUID | str, approver: str, reason: str, *, tenant: str
    ) -> Memory:
        """As :meth:`MemoryStore.reject`."""
        return await self._decide(memory_id, approver, tenant, "rejected", check_reason(reason))

    async def _decide(
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
        async with self.transaction(decision, tenant=tenant) as conn:
            return await run_async(conn, op)

    # --- deletion ------------------------------------------------------------------------------

    async def forget(self, memory_id: uuid.UUID | str, *, tenant: str) -> bool:
        """As :meth:`MemoryStore.forget`. Idempotent."""
        mid = as_uuid(memory_id)
        tenant = check_identifier(tenant, "tenant")
        async with self.transaction("forget", tenant=tenant) as conn:
            return await run_async(conn, memory_ops.forget(tenant, mid))

    async def delete_scope(self, tenant: str, scope: Scope | str, scope_id: str | None) -> int:
        """As :meth:`MemoryStore.delete_scope`. Returns the count."""
        tenant = check_identifier(tenant, "tenant")
        scope = as_scope(scope)
        skey = scope_key(scope, scope_id)
        async with self.transaction("delete scope", tenant=tenant) as conn:
            return await run_async(conn, memory_ops.delete_scope(tenant, scope, skey))

    async def delete_workflow(self, tenant: str, workflow_id: str) -> WorkflowDeleted:
        """Delete a workflow's memories (all statuses) and its run records in one transaction
        (the product deleted the workflow). Idempotent: a second call deletes nothing.

        Raises:
            InvalidInput: bad tenant or workflow id. StoreUnavailable / StoreError: the
                database failed (nothing deleted).
        """
        tenant = check_identifier(tenant, "tenant")
        workflow_id = check_identifier(workflow_id, "workflow_id")
        async with self.transaction("delete workflow", tenant=tenant) as conn:
            return await run_async(conn, memory_ops.delete_workflow(tenant, workflow_id))

    async def purge_expired(self, now: datetime | None = None) -> int:
        """As :meth:`MemoryStore.purge_expired`. Returns the count."""
        check_now(now)
        at = now or self.clock.now()
        async with self.maintenance("purge expired") as conn:
            return await run_async(conn, memory_ops.purge_expired(at))

    async def cluster(
        self, *, lock_wait_s: float = 3.0, index_memory_mb: int | None = None
    ) -> ClusterReport:
        """As :meth:`MemoryStore.cluster`: rewrites the table in scope order under an
        exclusive lock (waiting at most ``lock_wait_s`` for it; ``index_memory_mb`` for the
        index rebuilds). Idempotent."""
        wait_ms = check_lock_wait(lock_wait_s)
        index_mb = check_index_memory(index_memory_mb)
        started = time.perf_counter()
        async with self.maintenance(cluster_action(lock_wait_s), as_owner=True) as conn:
            before, after = await run_async(conn, cluster_op(wait_ms, index_mb))
        return ClusterReport(before, after, time.perf_counter() - started)

    async def layout(self) -> Layout:
        """As :meth:`MemoryStore.layout`. Read-only."""
        async with self.maintenance("read layout") as conn:
            return await run_async(conn, layout_op())

    # --- recall --------------------------------------------------------------------------------

    async def recall(self, request: RecallRequest | Mapping[str, Any]) -> RecallResult:
        """As :meth:`MemoryStore.recall`: never raises because of the database unless
        ``request.strict`` (an empty incomplete result and a warning instead). Cancelling it
        cancels the query on the server and returns the connection."""
        req = coerce_request(request)
        try:
            return await self._recall(req)
        except Exception as exc:  # the host run must go on without memory, whatever failed
            return recall_failed(req, exc)

    async def _recall(self, req: RecallRequest) -> RecallResult:
        now = req.now or self.clock.now()
        cap = self.settings.narrow_scope_cap
        qv = await self._query_vector(req.query)
        fetched = await self._reads.read(
            "recall", req.tenant, lambda: self.retriever.fetch_op(req, qv, now, cap)
        )
        return self.retriever.assemble_result(fetched, req, cap)

    async def _query_vector(self, query: str) -> list[float] | None:
        known = known_query_vector(self.embedder, query, self.retriever.query_vectors)
        if known is not MISS:
            return known
        vector = await self._query_batcher.vector(query)
        return remember_query_vector(self.embedder, query, self.retriever.query_vectors, vector)

    async def signals(
        self, request: RecallRequest | Mapping[str, Any], *, use_vector: bool = True
    ) -> tuple[list[Scored], bool]:
        """As :meth:`MemoryStore.signals`. Read-only."""
        req = coerce_request(request)
        now = req.now or self.clock.now()
        qv = await self._query_vector(req.query) if use_vector else None
        rows = await self._reads.read(
            "recall", req.tenant, lambda: self.retriever.signals_op(req, qv, now)
        )
        return rows, qv is None

    # --- idempotent requests -------------------------------------------------------------------

    async def idempotent(
        self,
        tenant: str,
        key: str,
        request_sha256: str,
        attempt: Callable[[AsyncWriteMany], Awaitable[Answer]],
    ) -> Idempotent:
        """As :meth:`MemoryStore.idempotent`, with an ``attempt`` coroutine function."""
        tenant = check_identifier(tenant, "tenant")
        key = check_identifier(key, "Idempotency-Key")
        with translate_errors("idempotent request"):
            async with self._engine.connect() as conn:
                record = await run_async(conn, memory_ops.idempotency_lookup(tenant, key))
                if record is not None:
                    await conn.rollback()
                    return memory_ops.replay(record, request_sha256)
                written_tenants = {tenant}

                async def write_here(
                    candidates: Sequence[MemoryCandidate | Mapping[str, Any]],
                ) -> list[Memory]:
                    cands = self._validate(candidates)
                    if not cands:
                        return []
                    written_tenants.update(c.tenant for c in cands)
                    pairs = await self._embed(cands)
                    op = memory_ops.write_validated(
                        cands, pairs, tenant, self.embedder, self.clock.now()
                    )
                    return await run_async(conn, op)

                answer = await attempt(write_here)
                if not answer.record:
                    await conn.rollback()
                    return Idempotent(IdempotencyOutcome.NEW, answer)
                await run_async(
                    conn,
                    memory_ops.idempotency_record(
                        tenant, key, request_sha256, answer, self.clock.now()
                    ),
                )
                await conn.commit()
                await self._reads.note_commit(conn, written_tenants)
                return Idempotent(IdempotencyOutcome.NEW, answer)

    # --- read replicas -------------------------------------------------------------------------

    def read_routing(self) -> ReadRouting:
        """As :meth:`MemoryStore.read_routing` (no IO, so not a coroutine)."""
        return self._reads.router.snapshot()

    # --- maintenance ---------------------------------------------------------------------------

    async def reembed(
        self,
        *,
        batch_size: int = 256,
        all_rows: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """As :meth:`MemoryStore.reembed`; batches are embedded in a worker thread."""
        embedder = vectors.require_embedder(self.embedder, self.lexical_reason)
        async with self.maintenance("reembed prepare", as_owner=True) as conn:
            all_rows, total = await run_async(
                conn, vectors.reembed_prepare(embedder, all_rows=all_rows)
            )
        done = 0
        after: uuid.UUID | None = None
        while True:
            async with self.maintenance("reembed") as conn:
                rows = await run_async(
                    conn, vectors.reembed_batch(batch_size, after, all_rows=all_rows)
                )
                if not rows:
                    break
                pairs = await asyncio.to_thread(
                    vectors.embed_pairs,
                    embedder,
                    [r.content for r in rows],
                    [r.context for r in rows],
                )
                await run_async(conn, vectors.store_embeddings(rows, pairs))
            after = rows[-1].id
            done += len(rows)
            if progress:
                progress(done, total)
        return done

    async def status(self) -> StoreStatus:
        """As :meth:`MemoryStore.status`. Read-only."""
        async with self.maintenance("status") as conn:
            revision = await conn.run_sync(current_revision)
            counts = await run_async(conn, status_counts())
        over_budget: dict[str, int] = {}
        for tenant in counts[0]:
            self.retriever.incomplete_warnings.mute((tenant, PROBE_USER))
            result = await self.recall(probe_request(tenant))
            if not result.complete:
                left_out = [await self.get(i, tenant=tenant) for i in left_out_ids(result)]
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
