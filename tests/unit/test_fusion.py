"""Hybrid fusion: the full-text rank counts even when vectors exist.

Unit tests of the pure reciprocal rank fusion (``harness.memory.domain.ranking.fuse``), and one end
to end with the real model: a rare identifier that only full text finds, among more than
top-N vector-similar distractors. The floor is off here (``use_floor=False``): these tests
are about ranking, the relevance judge has its own.

Here the tests that need no database, model or other process; the others are in
tests/db/test_fusion_db.py.
"""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from harness.memory.domain.ranking import RankingConfig, Scored, fuse

TOP_N = 8
RANKING = RankingConfig(top_n=TOP_N, use_floor=False)


def uid(n: int) -> uuid.UUID:
    return uuid.UUID(int=n + 1)


def kept_ids(rows: list[Scored], cfg: RankingConfig = RANKING, **kw: bool) -> list[uuid.UUID]:
    kept, _ = fuse(rows, cfg, lexical_only=kw.get("lexical_only", False))
    return [r.scored.id for r in kept]


def vector_distractors(n: int) -> list[Scored]:
    """``n`` items ranked 1..n by vectors that full text did not find."""
    return [Scored(uid(100 + i), sim=0.9 - i / 100, vrank=i + 1) for i in range(n)]


def test_full_text_first_vector_tenth_is_kept() -> None:
    """The issue's mutant: ranked first by full text and tenth by vectors, it must stay in
    the top N ahead of nine items ranked by vectors alone."""
    item = Scored(uid(1), sim=0.5, vrank=10, lex=4.0, coverage=1.0, lrank=1)
    ids = kept_ids([*vector_distractors(9), item])
    assert len(ids) == TOP_N
    assert ids[0] == item.id


def test_full_text_alone_lifts_an_item_into_the_top_n() -> None:
    item = Scored(uid(1), lex=4.0, coverage=1.0, lrank=1)  # not in the vector list at all
    assert item.id in kept_ids([*vector_distractors(3 * TOP_N), item])


def test_vector_rank_alone_also_counts() -> None:
    item = Scored(uid(1), sim=0.9, vrank=1)
    # full-text-only items further down their list than it is in its own
    lexical = [Scored(uid(100 + i), lex=1.0, coverage=0.2, lrank=i + 20) for i in range(20)]
    assert item.id in kept_ids([*lexical, item])


def test_baselines_use_one_retriever_each() -> None:
    lex_first = Scored(uid(1), sim=0.1, vrank=30, lex=4.0, coverage=1.0, lrank=1)
    rows = [*vector_distractors(TOP_N), lex_first]
    assert lex_first.id not in kept_ids(
        rows, RankingConfig(top_n=TOP_N, use_floor=False, mode="vector")
    )
    assert kept_ids(rows, RankingConfig(top_n=TOP_N, use_floor=False, mode="lexical")) == [
        lex_first.id
    ]
    # without a query vector, vector ranks are ignored whatever the mode
    assert kept_ids(rows, lexical_only=True) == [lex_first.id]


def test_cut_to_top_n_the_rest_is_dropped_best_first_ties_by_id() -> None:
    rows = [Scored(uid(i), vrank=1, lrank=1) for i in reversed(range(TOP_N + 3))]
    kept, dropped = fuse(rows, RANKING, lexical_only=False)
    assert [r.scored.id for r in kept] == sorted((uid(i) for i in range(TOP_N)), key=str)
    assert {r.scored.id for r in dropped} == {uid(i) for i in range(TOP_N, TOP_N + 3)}
    assert len({r.fused for r in kept}) == 1


ranks = st.one_of(st.none(), st.integers(1, 40))


@st.composite
def scored_rows(draw: st.DrawFn) -> list[Scored]:
    size = draw(st.integers(0, 25))
    return [Scored(uid(i), vrank=draw(ranks), lrank=draw(ranks)) for i in range(size)]


def _better_or_equal(a: int | None, b: int | None) -> bool:
    return b is None or (a is not None and a <= b)


@given(scored_rows(), st.integers(1, 12))
def test_fusion_respects_rank_dominance(rows: list[Scored], top_n: int) -> None:
    """An item at least as well ranked by both retrievers, and strictly better by one, never
    comes after the other; whatever is dropped scores no higher than what is kept."""
    kept, dropped = fuse(rows, RankingConfig(top_n=top_n, use_floor=False), lexical_only=False)
    assert len(kept) <= top_n
    order = {r.scored.id: n for n, r in enumerate(kept)}
    for a in rows:
        for b in rows:
            dominates = (
                _better_or_equal(a.vrank, b.vrank)
                and _better_or_equal(a.lrank, b.lrank)
                and (a.vrank, a.lrank) != (b.vrank, b.lrank)
            )
            if dominates and b.id in order:
                assert a.id in order and order[a.id] < order[b.id]
    scores = [r.fused for r in kept]
    assert scores == sorted(scores, reverse=True)
    unranked = {s.id for s in rows if s.vrank is None and s.lrank is None}
    assert not unranked & set(order)
    if len(kept) == top_n:
        assert {r.scored.id for r in dropped} == {s.id for s in rows} - set(order) - unranked
