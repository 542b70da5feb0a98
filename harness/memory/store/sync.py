"""MemoryStore: the blocking facade, a thin executor of the plans in :mod:`.methods`.

Each public method is one line binding a plan; this module only says how an effect runs on a
blocking connection (:meth:`MemoryStore._perform`) and how the store is opened.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harness import metrics
from harness.clock import Clock, SystemClock
from harness.errors import StoreUnavailable
from harness.memory.domain.ranking import RecallConfig
from harness.memory.domain.types import Memory, MemoryCandidate
from harness.memory.embedding.embedder import Embedder
from harness.memory.embedding.query_batch import BlockingQueryBatcher
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
from harness.memory.store.executors import run_sync
from harness.memory.store.migrate import check_schema_current, upgrade_to_head
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
from harness.memory.store.read_routing import SyncReads, read_router
from harness.memory.store.replicas import parse_read_urls
from harness.memory.store.rls import assume_app_role
from harness.settings import Settings

__all__ = ["MemoryStore", "RunRecords", "WriteMany"]

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

#: ``write_many`` as handed to an idempotent attempt (bound to the request's transaction).
WriteMany = Callable[[Sequence[MemoryCandidate | Mapping[str, Any]]], list[Memory]]


def _blocking(
    plan: Callable[Concatenate[StoreBase, P], Plan[T]],
) -> Callable[Concatenate[MemoryStore, P], T]:
    """``plan`` as a blocking method: the same signature and docstring, run in place."""

    @functools.wraps(plan)
    def method(store: MemoryStore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return store._run(plan(store, *args, **kwargs))

    method.__signature__ = method_signature(plan, bound=True)  # type: ignore[attr-defined]
    return method


class MemoryStore(StoreBase):
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
        recall: RecallConfig | None = None,
    ):
        self._engine = engine
        #: Where reads run (replicas of HARNESS_DATABASE_READ_URL, else the primary).
        self._reads = reads or SyncReads(engine, read_router(settings, ()), (), settings)
        super().__init__(
            settings=settings,
            embedder=embedder,
            guard=guard,
            clock=clock,
            url=url,
            lexical_reason=lexical_reason,
            router=self._reads.router,
            recall=recall,
            pool=engine.pool,
        )
        # concurrent recalls share model calls: queries waiting together are embedded together
        self._query_batcher = BlockingQueryBatcher(
            lambda texts: embed_queries(self.embedder, texts)
        )
        self.runs = RunRecords(self)

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
        recall: RecallConfig | None = None,
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

        ``recall`` configures recall (ranking, strategy, caches; see :class:`RecallConfig`).
        """
        settings = settings or Settings.from_env()
        read_urls = parse_read_urls(settings.database_read_url_value)
        full_url, embedded = resolve_url(url, settings)
        engine = sa.create_engine(full_url, **engine_options(settings, full_url))
        sa.event.listen(engine, "connect", assume_app_role)
        watch_pooled_connections(engine)
        metrics.watch_pool(engine.pool)
        reads = SyncReads(engine, read_router(settings, read_urls), read_urls, settings)
        try:
            migrate_or_check(engine, full_url, settings, migrate)
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
                recall=recall,
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

    # --- the public methods, each a plan of :mod:`.methods` ------------------------------------

    stored_model = _blocking(methods.stored_model)
    check_embedding_model = _blocking(methods.check_embedding_model)
    write = _blocking(methods.write)
    write_many = _blocking(methods.write_many)
    get = _blocking(methods.get)
    history = _blocking(methods.history)
    pending = _blocking(methods.pending)
    audit = _blocking(methods.audit)
    approve = _blocking(methods.approve)
    reject = _blocking(methods.reject)
    forget = _blocking(methods.forget)
    delete_scope = _blocking(methods.delete_scope)
    delete_workflow = _blocking(methods.delete_workflow)
    purge_expired = _blocking(methods.purge_expired)
    cluster = _blocking(methods.cluster)
    layout = _blocking(methods.layout)
    distribute = _blocking(methods.distribute)
    cluster_state = _blocking(methods.cluster_state)
    recall = _blocking(methods.recall)
    signals = _blocking(methods.signals)
    idempotent = _blocking(methods.idempotent)
    reembed = _blocking(methods.reembed)
    status = _blocking(methods.status)

    # named operations the other packages use (the store is closed: no connection leaves it)
    browse = _blocking(listing.browse)
    pending_reviews = _blocking(listing.pending_reviews)
    audit_of = _blocking(listing.audit_of)
    activity = _blocking(listing.activity)
    cleanup_now = _blocking(cleanups.cleanup_now)
    queue_cleanup = _blocking(cleanups.queue_cleanup)
    queue_cleanups = _blocking(cleanups.queue_cleanups)
    reconcile_next_cleanup = _blocking(cleanups.reconcile_next_cleanup)
    count_open_cleanups = _blocking(cleanups.count_open_cleanups)
    memo_open = _blocking(memos.memo_open)
    memo_use = _blocking(memos.memo_use)
    memo_discard = _blocking(memos.memo_discard)
    memo_count = _blocking(memos.memo_count)
    schema_state = _blocking(status_ops.schema_state)
    learn = _blocking(lessons.learn)
    lesson_events = _blocking(lessons.lesson_events)
    retirement_proposals = _blocking(lessons.retirement_proposals)
    retire = _blocking(lessons.retire)
    put_conversation = _blocking(conversation_ops.put_conversation)
    put_conversation_once = _blocking(conversation_ops.put_conversation_once)
    recall_conversations = _blocking(conversation_ops.recall_conversations)
    read_conversation = _blocking(conversation_ops.read_conversation)
    find_in_conversation = _blocking(conversation_ops.find_in_conversation)
    list_conversations = _blocking(conversation_ops.list_conversations)
    forget_conversation = _blocking(conversation_ops.forget_conversation)
    delete_user_conversations = _blocking(conversation_ops.delete_user_conversations)
    set_conversation_retention = _blocking(conversation_ops.set_conversation_retention)
    purge_old_conversations = _blocking(conversation_ops.purge_old_conversations)
    source_passage = _blocking(conversation_ops.source_passage)
    restore = _blocking(lessons.restore)
    export_memories = _blocking(portability.export_memories)
    import_memories = _blocking(portability.import_memories)

    # --- the executor --------------------------------------------------------------------------

    def _run(self, plan: Plan[T]) -> T:
        """Perform ``plan``'s effects in order; an effect's failure is thrown into the plan."""
        try:
            effect = next(plan)
            while True:
                try:
                    result = self._perform(effect)
                except BaseException as exc:  # the plan decides; it re-raises what it does not
                    effect = plan.throw(exc)
                else:
                    effect = plan.send(result)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            plan.close()

    def _perform(self, effect: Effect) -> Any:
        if isinstance(effect, Transaction):
            with self._transaction(effect.action, effect.tenant, effect.admits) as conn:
                return run_sync(conn, effect.op)
        if isinstance(effect, Read):
            return self._reads.read(effect.action, effect.tenant, effect.make_op)
        if isinstance(effect, Embed):
            return effect.fn()
        if isinstance(effect, QueryVector):
            return self._query_batcher.vector(effect.query)
        return self._request(effect)

    @contextlib.contextmanager
    def _transaction(self, action: str, tenant: str | None, admits: Admits) -> Iterator[Connection]:
        everyone = admits in ("everyone", "owner")
        with translate_errors(action), self._engine.connect() as conn:
            with conn.begin():
                if admits == "owner":
                    conn.execute(sql.reset_local_role())
                if everyone:
                    conn.execute(sql.all_tenants())
                elif tenant is not None:
                    conn.execute(sql.set_tenant(tenant))
                yield conn
            if everyone:
                self._reads.note_commit(conn, (None,))
            elif tenant is not None:
                self._reads.note_commit(conn, (tenant,))

    def _request(self, effect: Request) -> Any:
        with translate_errors(effect.action), self._engine.connect() as conn:
            value, commit, tenants = run_sync(conn, effect.op)
            if not commit:
                conn.rollback()
                return value
            conn.commit()
            self._reads.note_commit(conn, tenants)
            return value


def _blocking_free(plan: Callable[P, Plan[T]]) -> Callable[Concatenate[RunRecords, P], T]:
    """A plan that reads no store state, as a blocking method of :class:`RunRecords`."""

    @functools.wraps(plan)
    def method(records: RunRecords, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return records.store._run(plan(*args, **kwargs))

    method.__signature__ = method_signature(plan, bound=False)  # type: ignore[attr-defined]
    return method


class RunRecords:
    """Reads and writes the ``runs`` table, one transaction per call (``store.runs``)."""

    def __init__(self, store: MemoryStore):
        self.store = store

    start = _blocking_free(runs.start)
    finish = _blocking_free(runs.finish)
    list = _blocking_free(runs.list_of)


def migrate_or_check(engine: Engine, url: str, settings: Settings, migrate: bool | None) -> None:
    """Migrate to head (``auto``), only check the schema is current (``never``), or neither
    (``migrate=False``), as :meth:`MemoryStore.connect` documents."""
    mode = settings.migrate if migrate is None else ("auto" if migrate else "off")
    if mode == "auto":
        with translate_errors("migrate", url=url):
            upgrade_to_head(engine, app_role=settings.app_role)
        # The migrating connection may predate the application role: start afresh so
        # every pooled connection runs as that role.
        engine.dispose()
    elif mode == "never":
        try:
            with translate_errors("connect", url=url):
                check_schema_current(engine)
        except StoreUnavailable as exc:
            # Not migrating, nothing to wait for: the store degrades until the server
            # is back (pre-ping reconnects); a wrong configuration still fails here.
            log.warning("schema revision not checked: %s", exc)
