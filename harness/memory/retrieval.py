"""Recall IO: fetch the readable candidates (always-on and relevance-ranked), then assemble."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import exc as sa_exc

from harness.errors import IncompleteRecall, StoreError
from harness.memory import sql
from harness.memory.ranking import RankingConfig, Scored, fuse
from harness.memory.recall import Candidate, RecallResult, TraceEntry, assemble
from harness.memory.rows import memory_from_row
from harness.memory.types import RecallRequest, Scope

if TYPE_CHECKING:
    from harness.memory.store import MemoryStore

__all__ = ["Retriever"]

log = logging.getLogger(__name__)

BROAD = (Scope.USER.value, Scope.PLATFORM.value)


class Retriever:
    """Runs recall for a store. ``exact`` chooses an exact scan of the readable rows over the
    HNSW index for the vector ranking (measured faster for per-user sets; see BENCHMARKS.md)."""

    def __init__(
        self, store: MemoryStore, ranking: RankingConfig | None = None, exact: bool = True
    ):
        self.store = store
        self.ranking = ranking or RankingConfig(top_n=store.settings.recall_top_n)
        self.exact = exact

    def recall(self, request: RecallRequest | Mapping[str, Any]) -> RecallResult:
        req = request if isinstance(request, RecallRequest) else RecallRequest(**dict(request))
        try:
            return self._recall(req)
        except IncompleteRecall:
            raise
        except (StoreError, sa_exc.SQLAlchemyError, OSError) as exc:
            log.warning("recall failed; the run continues without memory: %s", exc)
            if req.strict:
                raise
            return RecallResult.empty(degraded=True, reason=f"memory unavailable: {exc}")

    def _query_vector(self, query: str) -> list[float] | None:
        embedder = self.store.embedder
        if embedder is None or not query.strip():
            return None
        try:
            return embedder.embed([query])[0]
        except Exception as exc:  # fall back to full-text for this query only
            log.warning("query embedding failed, using full-text only: %s", exc)
            return None

    def _recall(self, req: RecallRequest) -> RecallResult:
        now = req.now or self.store.clock.now()
        cap = self.store.settings.narrow_scope_cap
        qv = self._query_vector(req.query)
        lexical_only = qv is None
        readable = sql.readable_filter(
            req.tenant, req.user_id, req.workflow_id, req.session_id, now
        )
        trace: list[TraceEntry] = []
        candidates: list[Candidate] = []
        with self.store.transaction("recall") as conn:
            for row in conn.execute(sql.always_on_rows(readable)).mappings():
                candidates.append(
                    Candidate(memory_from_row(row), 0.0, "always: constraint/preference")
                )
            narrow = conn.execute(sql.narrow_other_rows(readable, cap + 1)).mappings().all()
            ranked_scopes = list(BROAD)
            if len(narrow) > cap:
                ranked_scopes += list(sql.NARROW)
                trace.append(
                    TraceEntry(
                        None,
                        "kept",
                        "cap",
                        f"narrow scopes hold more than {cap} lessons/facts/"
                        "decisions: ranked by relevance",
                    )
                )
            else:
                candidates += [
                    Candidate(memory_from_row(r), 0.0, "always: narrow scope") for r in narrow
                ]
            scored: list[Scored] = []
            if req.query.strip():
                stmt = sql.relevance_scores(
                    readable,
                    scopes=ranked_scopes,
                    query=req.query,
                    query_vector=qv,
                    depth=self.ranking.depth,
                    exact=self.exact,
                )
                scored = [
                    Scored(r.id, r.sim, r.vrank, r.lex, r.coverage, r.lrank)
                    for r in conn.execute(stmt)
                ]
            kept, dropped = fuse(scored, self.ranking, lexical_only=lexical_only)
            if kept:
                by_id = {
                    r["id"]: r
                    for r in conn.execute(
                        sql.rows_by_ids(req.tenant, [s.id for s, _ in kept])
                    ).mappings()
                }
                for s, score in kept:
                    candidates.append(
                        Candidate(memory_from_row(by_id[s.id]), score, f"relevant: {_signals(s)}")
                    )
        for s in dropped:
            trace.append(
                TraceEntry(
                    s.id,
                    "dropped",
                    "floor",
                    f"below relevance floor or beyond top-{self.ranking.top_n}: {_signals(s)}",
                )
            )
        return assemble(
            candidates,
            budget_chars=req.budget_chars,
            max_items=req.max_items,
            max_item_chars=req.max_item_chars,
            strict=req.strict,
            trace=trace,
        )


def _signals(s: Scored) -> str:
    sim = f"{s.sim:.3f}" if s.sim is not None else "-"
    cov = f"{s.coverage:.2f}" if s.coverage is not None else "-"
    return f"sim={sim} coverage={cov}"
