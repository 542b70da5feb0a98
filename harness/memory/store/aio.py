"""AsyncMemoryStore: the asyncio facade, a thin executor of the plans in :mod:`.methods`.

Same plans as :class:`~harness.memory.store.sync.MemoryStore`, so the same names, arguments,
docstrings, errors and degradation rules; every method is a coroutine. Statements run on
SQLAlchemy's asyncio engine with psycopg 3 async; embedding and other blocking work (starting
the embedded server, migrating, loading the model) runs in worker threads, off the event loop.
Cancelling a call (e.g. ``asyncio.timeout`` around ``recall``) cancels its query on the server
and returns the connection to the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from harness import metrics
from harness.clock import Clock, SystemClock
from harness.memory.domain.ranking import RecallConfig
from harness.memory.domain.types import Memory, MemoryCandidate
from harness.memory.embedding.embedder import Embedder
from harness.memory.embedding.query_batch import QueryBatcher
from harness.memory.guard import Guard, default_guard
from harness.memory.store import methods, sql
from harness.memory.store.base import StoreBase
from harness.memory.store.connect import (
    AUTO,
    engine_options,
    pick_embedder,
    resolve_url,
    watch_pooled_connections,
)
from harness.memory.store.db import translate_errors
from harness.memory.store.executors import run_async
from harness.memory.store.ops import cleanups, lessons, listing, memos, portability, runs
from harness.memory.store.ops import conversations as conversation_ops
from harness.memory.store.ops import status as status_ops
from harness.memory.store.ops.retrieval import embed_queries
from harness.memory.store.plans import (
    Admits,
    Effect,
    Embed,
    Plan,
    QueryVector,
    Read,
    Request,
    Transaction,
    method_signature,
)
from harness.memory.store.read_routing import AsyncReads, read_router
from harness.memory.store.replicas import parse_read_urls
from harness.memory.store.rls import assume_app_role
from harness.memory.store.sync import migrate_or_check
from harness.settings import Settings

__all__ = ["AsyncMemoryStore", "AsyncRunRecords", "AsyncWriteMany"]

P = ParamSpec("P")
T = TypeVar("T")

#: ``write_many`` as handed to an idempotent attempt (bound to the request's transaction).
AsyncWriteMany = Callable[[Sequence[MemoryCandidate | Mapping[str, Any]]], Awaitable[list[Memory]]]


def _awaited(
    plan: Callable[Concatenate[StoreBase, P], Plan[T]],
) -> Callable[Concatenate[AsyncMemoryStore, P], Coroutine[Any, Any, T]]:
    """``plan`` as a coroutine method: the same signature and docstring, awaited."""

    @functools.wraps(plan)
    async def method(store: AsyncMemoryStore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await store._run(plan(store, *args, **kwargs))

    method.__signature__ = method_signature(plan, bound=True)  # type: ignore[attr-defined]
    return method


def _migrate(url: str, settings: Settings, migrate: bool | None) -> None:
    """The sync store's migration rules on a short-lived sync engine (Alembic runs
    synchronously), for a worker thread."""
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        migrate_or_check(engine, url, settings, migrate)
    finally:
        engine.dispose()


class AsyncMemoryStore(StoreBase):
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
        recall: RecallConfig | None = None,
    ):
        self._engine = engine
        #: Where reads run (replicas of HARNESS_DATABASE_READ_URL, else the primary).
        self._reads = reads or AsyncReads(engine, read_router(settings, ()), (), settings)
        super().__init__(
            settings=settings,
            embedder=embedder,
            guard=guard,
            clock=clock,
            url=url,
            lexical_reason=lexical_reason,
            router=self._reads.router,
            recall=recall,
            pool=engine.sync_engine.pool,
        )
        self.runs = AsyncRunRecords(self)
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
        recall: RecallConfig | None = None,
    ) -> AsyncMemoryStore:
        """Open the store; start the embedded server when no URL is configured.

        Side effects as :meth:`MemoryStore.connect` (embedded server, idempotent migration
        under an advisory lock, model loading), each run in a worker thread. Read replicas as
        there (``HARNESS_DATABASE_READ_URL``; see :meth:`read_routing`).

        Raises:
            InvalidInput: a URL the store cannot use (names the setting).
            StoreMisconfigured: wrong password, missing database or privilege, SSL required,
                unknown host, or (migrations off) a schema behind this version.
            StoreUnavailable: the database cannot be reached.
            EmbeddingModelMismatch: vectors were built by another model (see ``reembed``).

        ``recall`` configures recall (ranking, strategy, caches; see :class:`RecallConfig`).
        """
        settings = settings or Settings.from_env()
        read_urls = parse_read_urls(settings.database_read_url_value)
        full_url, embedded = await asyncio.to_thread(resolve_url, url, settings)
        await asyncio.to_thread(_migrate, full_url, settings, migrate)
        engine = create_async_engine(full_url, **engine_options(settings, full_url))
        sa.event.listen(engine.sync_engine, "connect", assume_app_role)
        watch_pooled_connections(engine.sync_engine)
        metrics.watch_pool(engine.sync_engine.pool)
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
                recall=recall,
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

    # --- the public methods, each a plan of :mod:`.methods` ------------------------------------

    stored_model = _awaited(methods.stored_model)
    check_embedding_model = _awaited(methods.check_embedding_model)
    write = _awaited(methods.write)
    write_many = _awaited(methods.write_many)
    get = _awaited(methods.get)
    history = _awaited(methods.history)
    pending = _awaited(methods.pending)
    audit = _awaited(methods.audit)
    approve = _awaited(methods.approve)
    reject = _awaited(methods.reject)
    forget = _awaited(methods.forget)
    delete_scope = _awaited(methods.delete_scope)
    delete_workflow = _awaited(methods.delete_workflow)
    purge_expired = _awaited(methods.purge_expired)
    cluster = _awaited(methods.cluster)
    layout = _awaited(methods.layout)
    distribute = _awaited(methods.distribute)
    cluster_state = _awaited(methods.cluster_state)
    recall = _awaited(methods.recall)
    signals = _awaited(methods.signals)
    idempotent = _awaited(methods.idempotent)
    reembed = _awaited(methods.reembed)
    status = _awaited(methods.status)

    # named operations the other packages use (the store is closed: no connection leaves it)
    browse = _awaited(listing.browse)
    pending_reviews = _awaited(listing.pending_reviews)
    audit_of = _awaited(listing.audit_of)
    activity = _awaited(listing.activity)
    cleanup_now = _awaited(cleanups.cleanup_now)
    queue_cleanup = _awaited(cleanups.queue_cleanup)
    queue_cleanups = _awaited(cleanups.queue_cleanups)
    reconcile_next_cleanup = _awaited(cleanups.reconcile_next_cleanup)
    count_open_cleanups = _awaited(cleanups.count_open_cleanups)
    memo_open = _awaited(memos.memo_open)
    memo_use = _awaited(memos.memo_use)
    memo_discard = _awaited(memos.memo_discard)
    memo_count = _awaited(memos.memo_count)
    schema_state = _awaited(status_ops.schema_state)
    learn = _awaited(lessons.learn)
    lesson_events = _awaited(lessons.lesson_events)
    retirement_proposals = _awaited(lessons.retirement_proposals)
    retire = _awaited(lessons.retire)
    put_conversation = _awaited(conversation_ops.put_conversation)
    put_conversation_once = _awaited(conversation_ops.put_conversation_once)
    recall_conversations = _awaited(conversation_ops.recall_conversations)
    read_conversation = _awaited(conversation_ops.read_conversation)
    find_in_conversation = _awaited(conversation_ops.find_in_conversation)
    list_conversations = _awaited(conversation_ops.list_conversations)
    forget_conversation = _awaited(conversation_ops.forget_conversation)
    delete_user_conversations = _awaited(conversation_ops.delete_user_conversations)
    set_conversation_retention = _awaited(conversation_ops.set_conversation_retention)
    purge_old_conversations = _awaited(conversation_ops.purge_old_conversations)
    source_passage = _awaited(conversation_ops.source_passage)
    restore = _awaited(lessons.restore)
    export_memories = _awaited(portability.export_memories)
    import_memories = _awaited(portability.import_memories)

    # --- the executor --------------------------------------------------------------------------

    async def _run(self, plan: Plan[T]) -> T:
        """Await ``plan``'s effects in order; an effect's failure (cancellation included) is
        thrown into the plan."""
        try:
            effect = next(plan)
            while True:
                try:
                    result = await self._perform(effect)
                except BaseException as exc:  # the plan decides; it re-raises what it does not
                    effect = plan.throw(exc)
                else:
                    effect = plan.send(result)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            plan.close()

    async def _perform(self, effect: Effect) -> Any:
        if isinstance(effect, Transaction):
            async with self._transaction(effect.action, effect.tenant, effect.admits) as conn:
                return await run_async(conn, effect.op)
        if isinstance(effect, Read):
            return await self._reads.read(effect.action, effect.tenant, effect.make_op)
        if isinstance(effect, Embed):
            return await asyncio.to_thread(effect.fn)
        if isinstance(effect, QueryVector):
            return await self._query_batcher.vector(effect.query)
        return await self._request(effect)

    @contextlib.asynccontextmanager
    async def _transaction(
        self, action: str, tenant: str | None, admits: Admits
    ) -> AsyncIterator[AsyncConnection]:
        everyone = admits in ("everyone", "owner")
        with translate_errors(action):
            async with self._engine.connect() as conn:
                async with conn.begin():
                    if admits == "owner":
                        await conn.execute(sql.reset_local_role())
                    if everyone:
                        await conn.execute(sql.all_tenants())
                    elif tenant is not None:
                        await conn.execute(sql.set_tenant(tenant))
                    yield conn
                if everyone:
                    await self._reads.note_commit(conn, (None,))
                elif tenant is not None:
                    await self._reads.note_commit(conn, (tenant,))

    async def _request(self, effect: Request) -> Any:
        with translate_errors(effect.action):
            async with self._engine.connect() as conn:
                value, commit, tenants = await run_async(conn, effect.op)
                if not commit:
                    await conn.rollback()
                    return value
                await conn.commit()
                await self._reads.note_commit(conn, tenants)
                return value


def _awaited_free(
    plan: Callable[P, Plan[T]],
) -> Callable[Concatenate[AsyncRunRecords, P], Coroutine[Any, Any, T]]:
    """A plan that reads no store state, as a coroutine method of :class:`AsyncRunRecords`."""

    @functools.wraps(plan)
    async def method(records: AsyncRunRecords, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await records.store._run(plan(*args, **kwargs))

    method.__signature__ = method_signature(plan, bound=False)  # type: ignore[attr-defined]
    return method


class AsyncRunRecords:
    """Reads and writes the ``runs`` table, one transaction per call (``store.runs``)."""

    def __init__(self, store: AsyncMemoryStore):
        self.store = store

    start = _awaited_free(runs.start)
    finish = _awaited_free(runs.finish)
    list = _awaited_free(runs.list_of)
