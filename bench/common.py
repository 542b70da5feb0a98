"""Shared benchmark plumbing: a private embedded server, fresh databases, cached embeddings."""

from __future__ import annotations

import contextlib
import hashlib
import os
import resource
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url

from harness.settings import Settings

# The harness modules this file needs, where this tree keeps them; else where the issue-time
# code (d31ebc9, before the layering) kept them: bench.scale's baseline passes run this
# tree's bench/ against that ``harness`` package. The one place bench/ imports either layout.
try:
    from harness.memory.embedding.embedder import Embedder, load_embedder
    from harness.memory.store import sql as memory_sql
    from harness.memory.store.db import normalize_url, translate_errors
    from harness.memory.store.embedded import embedded_url
    from harness.memory.store.rls import assume_app_role
    from harness.memory.store.sync import MemoryStore
except ModuleNotFoundError:  # the issue-time layout (a baseline pass of bench.scale)
    from harness.memory.db import normalize_url, translate_errors  # type: ignore[no-redef]
    from harness.memory.embedded import embedded_url  # type: ignore[no-redef]
    from harness.memory.embedder import Embedder, load_embedder  # type: ignore[no-redef]
    from harness.memory.rls import assume_app_role  # type: ignore[no-redef]

    from harness.memory import sql as memory_sql  # type: ignore[no-redef]
    from harness.memory.store import MemoryStore  # type: ignore[no-redef]

WORK = Path(__file__).parent / ".work"
RESULTS = Path(__file__).parent / "results"

__all__ = [
    "RESULTS",
    "WORK",
    "CachedEmbedder",
    "all_tenants",
    "as_tenant",
    "fresh_store",
    "peak_rss_mb",
    "percentiles",
    "rank_metrics",
    "reconnect",
    "relevance_plan",
    "server_url",
    "settle",
    "sql_engine",
    "timed",
]


def server_url() -> str:
    """HARNESS_BENCH_DATABASE_URL, else a private embedded server under bench/.work."""
    explicit = os.environ.get("HARNESS_BENCH_DATABASE_URL")
    return normalize_url(explicit or embedded_url(WORK / "home"))


def fresh_store(embedder: Embedder | None, name: str, *, recall: Any = None) -> MemoryStore:
    """A store on a new, migrated database called ``name`` (dropped first if present);
    ``recall``: its :class:`~harness.memory.RecallConfig` (None: the default)."""
    base = server_url()
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    settings = Settings.from_env(statement_timeout_ms=600_000)
    return MemoryStore.connect(
        url, embedder=embedder, settings=settings, check_model=False, recall=recall
    )


def reconnect(store: MemoryStore, recall: Any) -> MemoryStore:
    """Another store on ``store``'s database, its settings and its (already loaded) embedder,
    with recall configured by ``recall`` (a :class:`~harness.memory.RecallConfig`): how a
    benchmark compares recall configurations, one store each. Close it after use."""
    return MemoryStore.connect(
        store.url,
        embedder=store.embedder,
        settings=store.settings,
        migrate=False,
        check_model=False,
        recall=recall,
    )


# --- raw SQL on a store's database ---------------------------------------------------------------
# The store is closed (no connection or transaction leaves it): these open connections of their
# own to its database, as the application role exactly as the store's pooled connections do
# (row-level security applies), admitting one tenant's rows, none, or every tenant's.


@contextlib.contextmanager
def sql_engine(store: Any) -> Iterator[sa.Engine]:
    """An engine of one connection on ``store``'s database, connecting as the store does (the
    application role): pass it to :func:`as_tenant` / :func:`all_tenants` to reuse that
    connection (warm caches) across transactions. Disposed at the end."""
    engine = sa.create_engine(store.url, pool_size=1, max_overflow=0)
    event.listen(engine, "connect", assume_app_role)
    try:
        yield engine
    finally:
        engine.dispose()


@contextlib.contextmanager
def _transaction(store: Any, engine: sa.Engine | None) -> Iterator[Connection]:
    with contextlib.ExitStack() as stack:
        own = engine or stack.enter_context(sql_engine(store))
        # driver errors come out as the store's own (StoreError, StoreUnavailable)
        with translate_errors("bench sql"), own.connect() as conn, conn.begin():
            yield conn


@contextlib.contextmanager
def as_tenant(
    store: Any, tenant: str | None = None, *, engine: sa.Engine | None = None
) -> Iterator[Connection]:
    """One transaction as the application role admitting ``tenant``'s rows (None: no tenant's
    rows at all), on ``engine`` (from :func:`sql_engine`) or a connection of its own. Commits
    when the block ends without an error."""
    with _transaction(store, engine) as conn:
        if tenant is not None:
            conn.execute(memory_sql.set_tenant(tenant))
        yield conn


@contextlib.contextmanager
def all_tenants(
    store: Any, *, as_owner: bool = False, engine: sa.Engine | None = None
) -> Iterator[Connection]:
    """One transaction over every tenant's rows (what the store's maintenance does);
    ``as_owner`` runs it as the login itself (schema changes: indexes). Commits at the end."""
    with _transaction(store, engine) as conn:
        if as_owner:
            conn.execute(memory_sql.reset_local_role())
        conn.execute(memory_sql.all_tenants())
        yield conn


def relevance_plan(
    store: Any,
    query: str,
    *,
    tenant: str,
    user: str,
    workflow: str | None,
    exact: bool,
    engine: sa.Engine | None = None,
) -> list[str]:
    """One ``EXPLAIN (ANALYZE, BUFFERS)`` of the relevance query exactly as recall sends it
    (exact scan, or HNSW with recall's settings), as plan lines; the statement is the loaded
    ``harness``'s own (a baseline pass explains the baseline's)."""
    emb = store.embedder
    assert emb is not None
    stmt = memory_sql.relevance_scores(
        has_workflow=workflow is not None,
        has_session=False,
        scopes=("session", "workflow", "user", "platform"),
        with_vector=True,
        exact=exact,
        bounded_lexical=not exact,
    )
    values = {
        **memory_sql.readable_params(tenant, user, workflow, None, store.clock.now()),
        "q_text": query,
        "stopwords": list(memory_sql.STOPWORDS),
        "depth": 100,
        "qv": emb.embed([query])[0],
    }

    def prefix(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.lstrip().startswith("WITH"):
            statement = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement
        return statement, parameters

    with as_tenant(store, tenant, engine=engine) as conn:
        if not exact:
            conn.execute(memory_sql.hnsw_settings(400))
        event.listen(conn, "before_cursor_execute", prefix, retval=True)
        try:
            return [row[0] for row in conn.execute(stmt, values).cursor.fetchall()]
        finally:
            event.remove(conn, "before_cursor_execute", prefix)


class CachedEmbedder:
    """Wraps the real model; remembers vectors on disk and in memory (keyed by text).

    ``hits_only`` makes ``embed`` free for warmed texts, which is how the benchmarks
    measure recall "without query embedding".
    """

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.memo: dict[str, np.ndarray] = {}
        self.query_memo: dict[str, np.ndarray] = {}
        self.calls = 0

    @classmethod
    def load(cls) -> CachedEmbedder:
        settings = Settings.from_env()
        # A baseline checkout (bench.scale, bench.soak) may predate HARNESS_EMBED_THREADS: it
        # then runs with its default, as it always did.
        threads = getattr(settings, "embed_threads", None)
        extra: dict[str, Any] = {"threads": threads} if threads is not None else {}
        # ... or HARNESS_EMBED_INT8: as the product loads the model (its int8 copy by default).
        if getattr(settings, "embed_int8", False):
            extra["int8_cache"] = settings.model_cache
        inner, reason = load_embedder(settings.embed_model, settings.embed_model_path, **extra)
        if inner is None:
            raise SystemExit(f"benchmarks need the embedding model: {reason}")
        return cls(inner)

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def query_source(self) -> str:
        """What embeds queries (the model, or its int8 copy): the query cache's key."""
        return self.model_name + (" int8" if getattr(self.inner, "int8_queries", False) else "")

    @property
    def dim(self) -> int:
        return self.inner.dim

    def warm(self, texts: Sequence[str], label: str) -> None:
        """Embed ``texts`` once (cached in bench/.work/cache as .npy)."""
        self._warm(self.memo, texts, label, self.model_name, self.inner.embed)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._memoised(self.memo, texts, self.inner.embed)

    def _embed_queries_now(self, texts: Sequence[str]) -> list[list[float]]:
        # By attribute, not the QueryEmbedder protocol: a baseline checkout (bench.scale's
        # passes) predates it, and its embedders embed queries as documents.
        embed_queries = getattr(self.inner, "embed_queries", None)
        return list(embed_queries(texts)) if embed_queries is not None else self.inner.embed(texts)

    def warm_queries(self, texts: Sequence[str], label: str) -> None:
        """Embed ``texts`` as the store embeds queries, once (cached as .npy, keyed by
        :attr:`query_source`)."""
        label = f"{label}-queries"
        self._warm(self.query_memo, texts, label, self.query_source, self._embed_queries_now)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """As the store's query path: the inner model's query variant, memoised."""
        return self._memoised(self.query_memo, texts, self._embed_queries_now)

    def _memoised(
        self,
        memo: dict[str, np.ndarray],
        texts: Sequence[str],
        embed: Callable[[Sequence[str]], list[list[float]]],
    ) -> list[list[float]]:
        self.calls += 1
        missing = [t for t in texts if t not in memo]
        if missing:
            for text, vec in zip(missing, embed(missing), strict=True):
                memo[text] = np.asarray(vec, dtype=np.float32)
        return [memo[t].tolist() for t in texts]

    @staticmethod
    def _warm(
        memo: dict[str, np.ndarray],
        texts: Sequence[str],
        label: str,
        source: str,
        embed: Callable[[Sequence[str]], list[list[float]]],
    ) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in memo]
        if not todo:
            return
        digest = hashlib.sha256(("\x00".join(todo) + source).encode()).hexdigest()[:16]
        path = WORK / "cache" / f"{label}-{digest}.npy"
        if path.exists():
            vectors = np.load(path)
        else:
            vectors = np.asarray(embed(todo), dtype=np.float32)
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, vectors)
        for text, vec in zip(todo, vectors, strict=True):
            memo[text] = vec


def settle(store: MemoryStore) -> None:
    """VACUUM ANALYZE after a bulk load: the steady state autovacuum reaches in production
    (visibility map and hint bits set, statistics fresh), so timings do not measure it."""
    # VACUUM needs the table's owner: the login itself, not the store's application role.
    owner = sa.create_engine(store.url, poolclass=sa.NullPool, isolation_level="AUTOCOMMIT")
    try:
        with owner.connect() as conn:
            conn.execute(sa.text("VACUUM ANALYZE memories"))
    finally:
        owner.dispose()


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def percentiles(samples_s: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 in milliseconds."""
    ms = sorted(s * 1000 for s in samples_s)
    q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    return {
        "p50_ms": round(statistics.median(ms), 3),
        "p95_ms": round(q[94], 3),
        "p99_ms": round(q[98], 3),
        "n": len(ms),
    }


def rank_metrics(results: Sequence[tuple[Any, Sequence[Any]]]) -> dict[str, float]:
    """hit@3, hit@8 and MRR@8 over (right answer, ranked answers) pairs."""
    h3 = h8 = 0
    rr = 0.0
    for target, ranked in results:
        top = list(ranked[:8])
        h3 += target in top[:3]
        h8 += target in top
        rr += 1 / (top.index(target) + 1) if target in top else 0.0
    n = max(len(results), 1)
    return {"hit@3": round(h3 / n, 3), "hit@8": round(h8 / n, 3), "mrr@8": round(rr / n, 3)}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def unique_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:6]}"
