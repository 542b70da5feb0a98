"""Recall as operations: fetch the readable candidates (always-on and relevance-ranked) in two
round trips, then assemble (pure). The facades drive these; nothing here holds a connection."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from functools import partial
from typing import Any, Literal

from sqlalchemy import exc as sa_exc

from harness.errors import IncompleteRecall, InvalidInput, StoreError, StoreUnavailable
from harness.memory.domain.learning import LessonRecord, stand_out, standing
from harness.memory.domain.ranking import (
    UNJUDGED,
    Ranked,
    RankingConfig,
    RecallConfig,
    Scored,
    Strategy,
    fuse,
    stats_of,
)
from harness.memory.domain.recall import Candidate, RecallResult, TraceEntry, assemble
from harness.memory.domain.types import RecallRequest, Scope
from harness.memory.embedding.embedder import Embedder, QueryEmbedder
from harness.memory.embedding.query_cache import QueryVectorCache
from harness.memory.store import sql
from harness.memory.store.executors import Op
from harness.memory.store.pool_sizes import PoolSizes
from harness.memory.store.rows import head_from_row, memory_from_row
from harness.memory.store.throttle import OncePerInterval

__all__ = [
    "MISS",
    "Fetched",
    "Retriever",
    "coerce_request",
    "embed_queries",
    "known_query_vector",
    "recall_failed",
    "remember_query_vector",
]

log = logging.getLogger(__name__)

ALL_SCOPES = tuple(s.value for s in Scope)


def coerce_request(request: RecallRequest | Mapping[str, Any]) -> RecallRequest:
    """A validated request from a request or a mapping (``InvalidInput`` otherwise)."""
    if isinstance(request, RecallRequest):
        return request
    if not isinstance(request, Mapping):
        raise InvalidInput(
            f"request: a RecallRequest or a mapping, not {type(request).__name__}",
            fields=("request",),
        )
    try:
        return RecallRequest(**dict(request))
    except TypeError as exc:  # e.g. non-string keys
        raise InvalidInput(f"request: {exc}", fields=("request",)) from exc


def recall_failed(req: RecallRequest, exc: Exception) -> RecallResult:
    """The degradation rule: log, then an empty incomplete result (re-raise when strict)."""
    if isinstance(exc, IncompleteRecall):
        raise exc
    log.warning(
        "recall failed; %s: %s",
        "strict recall raises" if req.strict else "the run continues without memory",
        exc,
        exc_info=not isinstance(exc, (StoreError, sa_exc.SQLAlchemyError)),
    )
    if req.strict:
        raise exc
    return RecallResult.empty(degraded=True, reason=f"memory unavailable: {exc}")


class _Miss(Enum):
    MISS = "miss"


#: :func:`known_query_vector`'s answer when only the model can give the vector.
MISS = _Miss.MISS


def known_query_vector(
    embedder: Embedder | None, query: str, cache: QueryVectorCache
) -> list[float] | Literal[_Miss.MISS] | None:
    """The query's vector when no model call is needed (never blocks): None without a model or
    for a blank query (full text only), the cached vector, else :data:`MISS`."""
    if embedder is None or not query.strip():
        return None
    cached = cache.get(embedder.model_name, query)
    return MISS if cached is None else cached


def remember_query_vector(
    embedder: Embedder | None, query: str, cache: QueryVectorCache, vector: list[float] | None
) -> list[float] | None:
    """Cache the model's ``vector`` of ``query`` (None, a failed model call, is not cached) and
    return it."""
    if vector is not None and embedder is not None:
        cache.put(embedder.model_name, query, vector)
    return vector


def embed_queries(embedder: Embedder | None, texts: Sequence[str]) -> list[list[float]]:
    """The model call of the query batchers: ``StoreUnavailable`` when the store switched to
    lexical-only meanwhile (those queries then rank by full text)."""
    if embedder is None:
        raise StoreUnavailable("no embedding model")
    if isinstance(embedder, QueryEmbedder):
        return embedder.embed_queries(texts)
    return embedder.embed(texts)


@dataclass
class Fetched:
    """What recall's two round trips read, for :meth:`Retriever.assemble_result`."""

    rows: list[Mapping[str, Any]]
    kept: list[Ranked]
    dropped: list[Ranked]
    narrow_kept: list[Ranked]
    narrow_dropped: list[Ranked]
    lexical_only: bool
    trace: list[TraceEntry] = field(default_factory=list)
    #: When the relevance judge ran, between the two round trips (``time.time_ns()``).
    judged_ns: tuple[int, int] = (0, 0)

    def verdicts(self) -> tuple[int, int]:
        """How many candidates the judge passed and failed (the unjudged not counted)."""
        passed = len(self.kept) + len(self.narrow_kept)
        failed = sum(1 for r in self.dropped + self.narrow_dropped if r.judgement is not UNJUDGED)
        return passed, failed


class Retriever:
    """Runs recall for a store.

    ``strategy`` picks how the vector ranking runs: "exact" scans the rows the caller may read
    (exact, and fastest for pools up to a few thousand rows); "hnsw" uses the HNSW index with
    iterative filtered scans and bounds the full-text ranking; "auto" (default) probes the
    pool size and uses "hnsw" above ``large_pool`` rows; the answer is remembered per caller
    for ``pool_ttl_s`` seconds (:class:`PoolSizes`). See BENCHMARKS.md for the figures.
    It holds recall's configuration and builds its operations; the store facades run them.
    """

    def __init__(self, config: RecallConfig, *, default_top_n: int = 8):
        self.config = config
        self.ranking = config.ranking or RankingConfig(top_n=default_top_n)
        self.pool_sizes = PoolSizes(config.pool_ttl_s)
        self.strategy: Strategy = config.strategy
        self.large_pool = config.large_pool
        self.ef_search = config.ef_search
        self.incomplete_warnings = OncePerInterval(300.0)
        self.query_vectors = QueryVectorCache(config.query_cache_size)

    def _large_pool(self, shape: dict[str, bool], params: dict[str, Any]) -> Op[bool]:
        if self.strategy != "auto":
            return self.strategy == "hnsw"
        caller = (
            self.large_pool,
            *(params.get(k) for k in ("r_tenant", "r_user", "r_workflow", "r_session")),
        )
        known = self.pool_sizes.get(caller)
        if known is not None:
            return known
        n = (
            yield (sql.pool_probe(**shape), {**params, "probe_limit": self.large_pool + 1})
        ).scalar_one()
        large = int(n) > self.large_pool
        self.pool_sizes.put(caller, large)
        return large

    def signals_op(
        self, req: RecallRequest, qv: list[float] | None, now: datetime
    ) -> Op[list[Scored]]:
        """Every relevance-ranked candidate of a request with its raw signals, unjudged
        (``qv=None`` ranks as a lexical-only store would). Read-only; for benchmarks and
        fitting the judge."""
        shape = {"has_workflow": bool(req.workflow_id), "has_session": bool(req.session_id)}
        params = sql.readable_params(req.tenant, req.user_id, req.workflow_id, req.session_id, now)
        return (yield from self._scored(req.query, qv, shape, params, []))

    def _scored(
        self,
        query: str,
        qv: list[float] | None,
        shape: dict[str, bool],
        params: dict[str, Any],
        trace: list[TraceEntry],
    ) -> Op[list[Scored]]:
        if not query.strip():
            return []
        large = qv is not None and (yield from self._large_pool(shape, params))
        trace.append(
            TraceEntry(
                None,
                "kept",
                "strategy",
                (
                    "vectors: HNSW index, full text over bounded candidates"
                    if large
                    else "vectors: exact scan of the readable rows"
                    if qv is not None
                    else "full text only (no query vector)"
                ),
            )
        )
        if large:
            yield sql.hnsw_settings(self.ef_search)
        # Narrow scopes are scored too: used only when they overflow the cap, and it saves a
        # round trip to know that first.
        stmt = sql.relevance_scores(
            **shape,
            scopes=ALL_SCOPES,
            with_vector=qv is not None,
            exact=not large,
            bounded_lexical=large,
        )
        bind = {
            **params,
            "q_text": query,
            "stopwords": list(sql.STOPWORDS),
            "depth": self.ranking.depth,
            **({"qv": qv} if qv is not None else {}),
        }
        now, learning = params["r_now"], self.config.learning
        # Unpacked by position (the statement's column order, asserted by its tests): a
        # hundred or more candidates per recall, so attribute lookups per field add up.
        return [
            Scored(
                id_,
                sim=sim,
                vrank=vrank,
                lex=lex,
                coverage=coverage,
                lrank=lrank,
                content_sim=content_sim,
                context_sim=context_sim,
                idf_coverage=idf_coverage,
                max_idf=max_idf,
                kind=kind,
                scope=scope,
                fingerprint=fp,
                negative_sim=negative_sim,
                standing=(
                    standing(LessonRecord(taught, clear, repeated, misled, last_seen), now, learning)
                    if last_seen is not None
                    else 0.0
                ),
                stand_out=stand_out(content_sim, scale_n, scale_mean, scale_m2, learning),
            )
            for (
                id_, scope, kind, fp, sim, content_sim, context_sim, negative_sim, vrank,
                lex, coverage, idf_coverage, max_idf, lrank, clear, repeated, misled, taught,
                last_seen, scale_n, scale_mean, scale_m2,
            ) in (yield (stmt, bind))
        ]  # fmt: skip

    def fetch_op(
        self, req: RecallRequest, qv: list[float] | None, now: datetime, cap: int
    ) -> Op[Fetched]:
        """Recall's two round trips: the relevance scores, then the rows it needs (always-on
        items, the narrow scopes up to ``cap + 1``, and the kept ids). Read-only."""
        lexical_only = qv is None
        shape = {"has_workflow": bool(req.workflow_id), "has_session": bool(req.session_id)}
        params = sql.readable_params(req.tenant, req.user_id, req.workflow_id, req.session_id, now)
        trace: list[TraceEntry] = []
        scored = yield from self._scored(req.query, qv, shape, params, trace)
        broad = [s for s in scored if s.scope not in sql.NARROW]
        narrow_ranked = [s for s in scored if s.scope in sql.NARROW]
        # One distribution per query: how this query scores against everything readable.
        stats = stats_of(broad + narrow_ranked)
        judge_args: dict[str, Any] = {"threshold": req.relevance_threshold, "stats": stats}
        judge_start = time.time_ns()
        kept, dropped = fuse(broad, self.ranking, lexical_only=lexical_only, **judge_args)
        narrow_kept, narrow_dropped = fuse(
            narrow_ranked, self.ranking, lexical_only=lexical_only, **judge_args
        )
        judged_ns = (judge_start, time.time_ns())
        wanted = [r.scored.id for r in kept] + [r.scored.id for r in narrow_kept]
        rows = (
            (yield (sql.recall_rows(**shape), {**params, "narrow_limit": cap + 1, "ids": wanted}))
            .mappings()
            .all()
        )
        return Fetched(
            list(rows), kept, dropped, narrow_kept, narrow_dropped, lexical_only, trace, judged_ns
        )

    def assemble_result(self, fetched: Fetched, req: RecallRequest, cap: int) -> RecallResult:
        """Resolve, budget and render what :meth:`fetch_op` read (pure)."""
        rows, trace = fetched.rows, fetched.trace
        kept, dropped, lexical_only = fetched.kept, fetched.dropped, fetched.lexical_only
        narrow_kept, narrow_dropped = fetched.narrow_kept, fetched.narrow_dropped
        by_id = {r["id"]: r for r in rows}

        def candidate(row: Mapping[str, Any], relevance: float, why: str) -> Candidate:
            # Most always-on rows of a large pool are left out: only placed ones become models.
            return Candidate.deferred(
                head_from_row(row), partial(memory_from_row, row), relevance, why
            )

        candidates = [
            candidate(r, 0.0, "always: constraint/preference") for r in rows if r["src"] == "always"
        ]
        narrow = [r for r in rows if r["src"] == "narrow"]
        if len(narrow) > cap:
            trace.append(
                TraceEntry(
                    None,
                    "kept",
                    "cap",
                    f"narrow scopes hold more than {cap} lessons/facts/"
                    "decisions: ranked by relevance",
                )
            )
            kept = kept + narrow_kept
            dropped = dropped + narrow_dropped
        else:
            # A narrow scope's lessons apply to its next runs whatever the wording, except
            # where one has misled a task like this one.
            misled = {
                r.scored.id: r
                for r in narrow_kept + narrow_dropped
                if r.scored.misled_here and r.scored.kind == "lesson"
            }
            for r in narrow:
                gone = misled.get(r["id"])
                if gone is None:
                    candidates.append(candidate(r, 0.0, "always: narrow scope"))
                else:
                    trace.append(
                        TraceEntry(
                            gone.scored.id,
                            "dropped",
                            "judge",
                            partial(
                                _dropped_detail, "narrow scope, but misled a task like this", gone
                            ),
                        )
                    )
        for item in kept:
            row = by_id.get(item.scored.id)
            if row is not None:  # a row deleted between the two statements is gone
                candidates.append(
                    candidate(
                        row,
                        item.probability if self.ranking.use_floor else item.fused,
                        f"relevant: {_signals(item)}",
                    )
                )
        bar = self.ranking.bar(lexical_only=lexical_only, override=req.relevance_threshold)
        for item in dropped:
            if item.judgement is UNJUDGED:
                why = f"beyond the first {self.ranking.judge_depth} by fused rank, not judged"
            elif item.scored.misled_here:
                why = "misled a task like this one"
            elif self.ranking.use_floor and item.probability < bar:
                why = f"judged not relevant (p < {bar:.3f})"
            else:
                why = f"beyond top-{self.ranking.top_n}"
            trace.append(
                TraceEntry(item.scored.id, "dropped", "judge", partial(_dropped_detail, why, item))
            )
        result = assemble(
            candidates,
            budget_chars=req.budget_chars,
            max_items=req.max_items,
            max_item_chars=req.max_item_chars,
            strict=req.strict,
            trace=trace,
        )
        if not result.complete:
            self._warn_incomplete(req)
        return result

    def _warn_incomplete(self, req: RecallRequest) -> None:
        times = self.incomplete_warnings.hit((req.tenant, req.user_id))
        if times is not None:
            log.warning(
                "recall incomplete for %s/%s: constraints do not fit a %d-character budget "
                "(%d recall(s) since the last warning; warned once per %.0f s per caller; "
                "`harness-memory status` counts them)",
                req.tenant,
                req.user_id,
                req.budget_chars,
                times,
                self.incomplete_warnings.interval_s,
            )


def _dropped_detail(why: str, r: Ranked) -> str:
    return f"{why}: {_signals(r)}"


def _signals(r: Ranked) -> str:
    s = r.scored
    # A signal a retriever did not return is said in words (the console shows this too).
    sim = f"sim={s.sim:.3f}" if s.sim is not None else "no vector"
    cov = f"idf_coverage={s.idf_coverage:.2f}" if s.idf_coverage is not None else "no word match"
    out = f"{r.judgement.explain()} {sim} {cov}"
    if s.context_sim is not None:
        out += f" context={s.context_sim:.3f}"
    if s.negative_sim is not None:
        out += f" misled_context={s.negative_sim:.3f}"
    if s.standing:
        out += f" standing={s.standing:+.2f}"
    if s.stand_out is not None:
        out += f" stands_out={s.stand_out:.2f}"
    return out
