"""Pure relevance fusion: reciprocal rank fusion of vector and full-text ranks, with a floor."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["RankingConfig", "Scored", "fuse"]


@dataclass(frozen=True)
class Scored:
    """One item's raw relevance signals; None where that retriever did not return it."""

    id: uuid.UUID
    sim: float | None = None
    vrank: int | None = None
    lex: float | None = None
    coverage: float | None = None
    lrank: int | None = None


@dataclass(frozen=True)
class RankingConfig:
    """Fusion and floor parameters.

    An item passes the floor when its cosine similarity is at least ``sim_floor``, or when it
    is at least ``sim_assist`` similar and covers ``coverage_floor`` of the query's content
    words. Without vectors, coverage alone decides (``lexical_coverage_floor``).
    """

    rrf_k: int = 20
    top_n: int = 8
    depth: int = 100
    sim_floor: float = 0.55
    sim_assist: float = 0.35
    coverage_floor: float = 0.6
    lexical_coverage_floor: float = 0.5
    vector_weight: float = 1.0
    lexical_weight: float = 1.5
    #: "hybrid" fuses both; "vector" and "lexical" use one retriever alone (baselines).
    mode: Literal["hybrid", "vector", "lexical"] = "hybrid"
    #: False ranks without a floor (retrieval benchmarks measure ranking alone).
    use_floor: bool = True


def passes_floor(s: Scored, cfg: RankingConfig, *, lexical_only: bool) -> bool:
    """Whether an item is relevant enough to be recalled at all."""
    if not cfg.use_floor:
        return True
    coverage = s.coverage or 0.0
    if lexical_only or cfg.mode == "lexical":
        return coverage >= cfg.lexical_coverage_floor
    sim = s.sim if s.sim is not None else -1.0
    if cfg.mode == "vector":
        return sim >= cfg.sim_floor
    return sim >= cfg.sim_floor or (sim >= cfg.sim_assist and coverage >= cfg.coverage_floor)


def fuse(
    rows: Iterable[Scored], cfg: RankingConfig, *, lexical_only: bool, top_n: int | None = None
) -> tuple[list[tuple[Scored, float]], list[Scored]]:
    """Rank by RRF, keep those above the floor, cut to ``top_n``.

    Returns ``(kept, dropped)``: kept as (signals, fused score) best first, dropped are those
    under the floor or beyond top-N. Deterministic: ties break by id.
    """
    limit = cfg.top_n if top_n is None else top_n
    scored: list[tuple[Scored, float]] = []
    use_vector = cfg.mode != "lexical" and not lexical_only
    use_lexical = cfg.mode != "vector"
    for s in rows:
        score = 0.0
        if use_vector and s.vrank is not None:
            score += cfg.vector_weight / (cfg.rrf_k + s.vrank)
        if use_lexical and s.lrank is not None:
            score += cfg.lexical_weight / (cfg.rrf_k + s.lrank)
        if score > 0:
            scored.append((s, score))
    scored.sort(key=lambda pair: (-pair[1], str(pair[0].id)))
    kept: list[tuple[Scored, float]] = []
    dropped: list[Scored] = []
    for s, score in scored:
        if len(kept) < limit and passes_floor(s, cfg, lexical_only=lexical_only):
            kept.append((s, score))
        else:
            dropped.append(s)
    return kept, dropped
