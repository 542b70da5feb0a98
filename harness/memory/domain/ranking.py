"""Pure relevance ranking: reciprocal rank fusion of vector and full-text ranks, then the
relevance judge decides what passes."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from harness.errors import InvalidInput
from harness.memory.domain.learning import LearningConfig, misled_here
from harness.memory.domain.relevance import (
    Judgement,
    JudgeModel,
    QueryStats,
    Signals,
    default_judge,
    query_stats,
)

__all__ = [
    "MISLED_HERE",
    "UNJUDGED",
    "Ranked",
    "RankingConfig",
    "RecallConfig",
    "Scored",
    "Strategy",
    "fuse",
    "stats_of",
]

#: How recall's vector ranking runs: "exact" scans the rows the caller may read (exact, and
#: fastest for pools up to a few thousand rows); "hnsw" uses the HNSW index with iterative
#: filtered scans and bounds the full-text ranking; "auto" probes the pool size and uses
#: "hnsw" above ``large_pool`` rows.
Strategy = Literal["auto", "exact", "hnsw"]


@dataclass(frozen=True)
class Scored:
    """One item's raw relevance signals; None where that retriever did not return it."""

    id: uuid.UUID
    sim: float | None = None
    vrank: int | None = None
    lex: float | None = None
    coverage: float | None = None
    lrank: int | None = None
    content_sim: float | None = None
    context_sim: float | None = None
    idf_coverage: float | None = None
    max_idf: float | None = None
    kind: str = "fact"
    scope: str = "user"
    #: The content's fingerprint: ties break by it before the id, so the same data ranks the
    #: same way in any tenant.
    fingerprint: str = ""
    #: A lesson's best cosine to a task it misled (None: it never misled).
    negative_sim: float | None = None
    #: The log-odds a lesson's record of later runs adds (:func:`learning.standing`).
    standing: float = 0.0
    #: How many standard deviations this query's cosine to a lesson's content stands above
    #: that lesson's cosine to its scope's earlier tasks (:func:`learning.stand_out`); None
    #: until enough tasks were seen.
    stand_out: float | None = None

    def stands_out(self, bar: float | None) -> bool:
        """True when this lesson's match to the query stands out by ``bar`` deviations
        against its matches to its scope's earlier tasks (never for a ``bar`` of None)."""
        return bar is not None and self.stand_out is not None and self.stand_out >= bar

    def same_task(self, bar: float | None) -> bool:
        """True when this lesson was taught by a task at cosine ``bar`` or more to the query."""
        return (
            bar is not None
            and self.kind == "lesson"
            and self.context_sim is not None
            and self.context_sim >= bar
        )

    @property
    def misled_here(self) -> bool:
        """True when the query is at least as close to a task this lesson misled as to
        anything it was taught from: it does not pass, whatever else it matches."""
        content = self.content_sim if self.content_sim is not None else self.sim
        return misled_here(self.negative_sim, self.context_sim, content)

    def signals(self) -> Signals:
        """The judge's view of this item."""
        return Signals(
            sim=self.sim,
            content_sim=self.content_sim if self.content_sim is not None else self.sim,
            context_sim=self.context_sim,
            vrank=self.vrank,
            lrank=self.lrank,
            idf_coverage=self.idf_coverage,
            max_idf=self.max_idf,
            coverage=self.coverage,
            kind=self.kind,
            standing=self.standing,
        )


@dataclass(frozen=True)
class Ranked:
    """An item after fusion and judgement: its fused rank score and the judge's verdict."""

    scored: Scored
    fused: float
    judgement: Judgement

    @property
    def probability(self) -> float:
        return self.judgement.probability


@dataclass(frozen=True)
class RankingConfig:
    """Fusion parameters and the judge.

    ``threshold`` overrides the judge's fitted threshold (a probability in [0, 1]);
    ``use_floor=False`` ranks without judging (retrieval benchmarks measure ranking alone).
    """

    rrf_k: int = 20
    top_n: int = 8
    depth: int = 100
    vector_weight: float = 1.0
    lexical_weight: float = 1.5
    #: "hybrid" fuses both; "vector" and "lexical" use one retriever alone (baselines).
    mode: Literal["hybrid", "vector", "lexical"] = "hybrid"
    use_floor: bool = True
    threshold: float | None = None
    #: How many candidates, best fused first, the judge reads; the rest are dropped unjudged
    #: (it bounds recall's Python work; the retrievers return at most 2 x ``depth``).
    judge_depth: int = 200
    #: A lesson also passes when its match stands out this many deviations against its own
    #: matches to its scope's earlier tasks (None: never); fitted by ``bench.stream fit``.
    stand_out: float | None = 1.75
    #: A lesson also passes when one of the tasks that taught it is at least this close to the
    #: query (cosine): the same task again, worded anew. On the stream's dev split 4 of 27,072
    #: unrelated (task, teaching task) pairs reach 0.60 and none 0.65; None: never.
    same_task: float | None = 0.6

    def judge_mode(self, *, lexical_only: bool) -> Literal["hybrid", "lexical"]:
        """Which fitted model judges: "hybrid" when vectors rank, else "lexical"."""
        return "hybrid" if self.mode != "lexical" and not lexical_only else "lexical"

    def bar(self, *, lexical_only: bool, override: float | None = None) -> float:
        """The probability an item needs: ``override`` (a request's), else this config's
        ``threshold``, else the fitted threshold of the model that judges."""
        if override is not None:
            return override
        if self.threshold is not None:
            return self.threshold
        return self.judge.params(self.judge_mode(lexical_only=lexical_only)).threshold

    judge: JudgeModel = field(default_factory=default_judge)


#: The judgement of a candidate beyond the judge's depth: never passes.
UNJUDGED = Judgement(0.0)
#: The name of the term a lesson left out by :attr:`Scored.misled_here` shows.
MISLED_HERE = "misled here"


def _misled(s: Scored) -> Judgement:
    closest = max(v for v in (s.context_sim, s.content_sim, s.sim, -1.0) if v is not None)
    assert s.negative_sim is not None
    return Judgement(0.0, ((MISLED_HERE, s.negative_sim - closest),))


def stats_of(rows: Sequence[Scored]) -> QueryStats:
    """The query's score distribution over every candidate the retrievers returned."""
    return query_stats(
        [r.sim for r in rows if r.sim is not None and r.vrank is not None],
        [r.idf_coverage for r in rows if r.idf_coverage is not None],
    )


@dataclass(frozen=True)
class RecallConfig:
    """Recall's configuration, passed once to ``MemoryStore.connect(recall=...)``.

    ``ranking``: fusion and the judge (default: the fitted judge, ``top_n`` from
    ``HARNESS_RECALL_TOP_N``); ``strategy`` and ``large_pool``: see :data:`Strategy`;
    ``ef_search``: the HNSW search breadth; ``pool_ttl_s``: how long a caller's pool size is
    remembered; ``query_cache_size``: query vectors kept (an agent often asks again);
    ``learning``: how lessons learn from later runs and fade.
    """

    ranking: RankingConfig | None = None
    strategy: Strategy = "auto"
    large_pool: int = 3000
    ef_search: int = 400
    pool_ttl_s: float = 30.0
    query_cache_size: int = 1024
    learning: LearningConfig = field(default_factory=LearningConfig)

    def __post_init__(self) -> None:
        if self.strategy not in ("auto", "exact", "hnsw"):
            raise InvalidInput("strategy: one of auto, exact, hnsw", fields=("strategy",))
        for name in ("large_pool", "ef_search", "query_cache_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidInput(f"{name}: a whole number >= 0", fields=(name,))
        if not self.pool_ttl_s >= 0:
            raise InvalidInput("pool_ttl_s: seconds >= 0", fields=("pool_ttl_s",))


def fuse(
    rows: Iterable[Scored],
    cfg: RankingConfig,
    *,
    lexical_only: bool,
    top_n: int | None = None,
    threshold: float | None = None,
    stats: QueryStats | None = None,
) -> tuple[list[Ranked], list[Ranked]]:
    """Fuse by weighted RRF, judge the best ``judge_depth``, keep what passes, cut to ``top_n``.

    Returns ``(kept, dropped)``: kept best first by the judge's probability (by fused score
    when ``use_floor`` is off); dropped are those the judge turned away or beyond top-N.
    ``threshold`` overrides the bar an item needs (:meth:`RankingConfig.bar`). ``stats`` is the
    query's score distribution (computed from ``rows`` when not given). A lesson whose :attr:`Scored.misled_here` holds never passes.
    Deterministic: ties break by content fingerprint, then id.
    """
    rows = list(rows)
    limit = cfg.top_n if top_n is None else top_n
    judge_mode = cfg.judge_mode(lexical_only=lexical_only)
    use_vector = judge_mode == "hybrid"
    use_lexical = cfg.mode != "vector"
    bar = cfg.bar(lexical_only=lexical_only, override=threshold)
    qstats = stats or stats_of(rows)
    fused: list[tuple[float, Scored]] = []
    for s in rows:
        score = 0.0
        if use_vector and s.vrank is not None:
            score += cfg.vector_weight / (cfg.rrf_k + s.vrank)
        if use_lexical and s.lrank is not None:
            score += cfg.lexical_weight / (cfg.rrf_k + s.lrank)
        if score > 0:
            fused.append((score, s))
    # UUIDs order as their canonical strings do (fixed-width lower-case hex), without
    # formatting a string per candidate.
    fused.sort(key=lambda pair: (-pair[0], pair[1].fingerprint, pair[1].id))
    depth = cfg.judge_depth if cfg.use_floor else len(fused)
    head = fused[:depth]
    judgements = cfg.judge.judge_many([s.signals() for _, s in head], qstats, judge_mode)
    judged = [
        Ranked(s, score, _misled(s) if s.misled_here else j)
        for (score, s), j in zip(head, judgements, strict=True)
    ]
    if cfg.use_floor:
        # The judge weighs every signal; its probability orders better than the fused rank.
        judged.sort(key=lambda r: (-r.probability, -r.fused, r.scored.fingerprint, r.scored.id))
    kept: list[Ranked] = []
    dropped: list[Ranked] = []
    for r in judged:
        passes = (
            r.probability >= bar
            or r.scored.stands_out(cfg.stand_out)
            or r.scored.same_task(cfg.same_task)
        ) and not r.scored.misled_here
        if len(kept) < limit and (not cfg.use_floor or passes):
            kept.append(r)
        else:
            dropped.append(r)
    dropped += [Ranked(s, score, UNJUDGED) for score, s in fused[depth:]]
    return kept, dropped
