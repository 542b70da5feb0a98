"""The rules of ``harness.memory.domain.ranking`` one by one, with a judge whose answer is known.

Pure (no database, no model). ``fuse`` is tested with a stand-in judge that answers each
candidate's ``coverage`` as its probability and records what it was asked, so each rule of the
fusion (weights, the judge's depth, the bar, the order, the cut) is visible on its own. Written
to kill the mutants ``make mutate`` found in this module (docs/mutation.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.memory.domain.ranking import UNJUDGED, Ranked, RankingConfig, Scored, fuse, stats_of
from harness.memory.domain.relevance import (
    Judgement,
    JudgeModel,
    JudgeParams,
    Mode,
    QueryStats,
    Signals,
    default_judge,
    query_stats,
)

HYBRID_BAR = 0.6
LEXICAL_BAR = 0.3


class CoverageJudge(JudgeModel):
    """Answers ``coverage`` as the probability; remembers every question."""

    def __init__(self) -> None:
        super().__init__(
            JudgeParams(intercept=0.0, weights={}, threshold=HYBRID_BAR),
            JudgeParams(intercept=0.0, weights={}, threshold=LEXICAL_BAR),
        )
        self.asked: list[tuple[Signals, QueryStats, Mode]] = []

    def judge(self, s: Signals, stats: QueryStats, mode: Mode) -> Judgement:
        self.asked.append((s, stats, mode))
        return Judgement(s.coverage or 0.0, (("coverage", s.coverage or 0.0),))

    def judge_many(
        self, signals: Sequence[Signals], stats: QueryStats, mode: Mode
    ) -> list[Judgement]:
        """The batch form (fusion may judge a query's candidates at once): one by one."""
        return [self.judge(s, stats, mode) for s in signals]


def uid(n: int) -> uuid.UUID:
    return uuid.UUID(int=n + 1)


def config(**kw: object) -> tuple[RankingConfig, CoverageJudge]:
    judge = CoverageJudge()
    return RankingConfig(judge=judge, **kw), judge  # type: ignore[arg-type]


def ids(ranked: list[Ranked]) -> list[uuid.UUID]:
    return [r.scored.id for r in ranked]


def test_signals_hand_every_field_to_the_judge() -> None:
    s = Scored(
        uid(1),
        sim=0.7,
        vrank=3,
        lex=2.0,
        coverage=0.5,
        lrank=4,
        content_sim=0.6,
        context_sim=0.7,
        idf_coverage=0.4,
        max_idf=0.9,
        kind="lesson",
    )
    assert s.signals() == Signals(
        sim=0.7,
        content_sim=0.6,
        context_sim=0.7,
        vrank=3,
        lrank=4,
        idf_coverage=0.4,
        max_idf=0.9,
        coverage=0.5,
        kind="lesson",
    )


def test_content_similarity_defaults_to_the_similarity() -> None:
    assert Scored(uid(1), sim=0.42, vrank=1).signals().content_sim == 0.42
    assert Scored(uid(1), sim=0.42, vrank=1, content_sim=0.1).signals().content_sim == 0.1
    assert Scored(uid(1)).signals() == Signals()


@pytest.mark.parametrize(
    ("mode", "lexical_only", "expected"),
    [
        ("hybrid", False, "hybrid"),
        ("vector", False, "hybrid"),
        ("hybrid", True, "lexical"),
        ("vector", True, "lexical"),
        ("lexical", False, "lexical"),
        ("lexical", True, "lexical"),
    ],
)
def test_judge_mode(mode: str, lexical_only: bool, expected: str) -> None:
    cfg, _ = config(mode=mode)
    assert cfg.judge_mode(lexical_only=lexical_only) == expected


def test_bar_override_then_config_threshold_then_the_judges_own() -> None:
    cfg, _ = config()
    assert cfg.bar(lexical_only=False) == HYBRID_BAR
    assert cfg.bar(lexical_only=True) == LEXICAL_BAR
    assert cfg.bar(lexical_only=False, override=0.2) == 0.2
    assert cfg.bar(lexical_only=True, override=0.0) == 0.0
    set_cfg, _ = config(threshold=0.45)
    assert set_cfg.bar(lexical_only=False) == 0.45
    assert set_cfg.bar(lexical_only=True) == 0.45
    assert set_cfg.bar(lexical_only=True, override=0.9) == 0.9


def test_default_bar_is_the_shipped_judges_threshold() -> None:
    cfg = RankingConfig()
    shipped = default_judge()
    assert cfg.bar(lexical_only=False) == shipped.params("hybrid").threshold
    assert cfg.bar(lexical_only=True) == shipped.params("lexical").threshold


def test_stats_count_only_vector_ranked_similarities_and_known_idf() -> None:
    rows = [
        Scored(uid(1), sim=0.9, vrank=1, idf_coverage=0.5),
        Scored(uid(2), sim=0.3, vrank=2),
        Scored(uid(3), sim=0.1, idf_coverage=0.25),  # a context similarity without a rank
        Scored(uid(4), lrank=1, idf_coverage=1.0),
    ]
    assert stats_of(rows) == query_stats([0.9, 0.3], [0.5, 0.25, 1.0])
    assert stats_of(rows).sim_max == 0.9
    assert stats_of(rows).floor_sim == 0.3


def test_both_ranks_add_up_with_their_weights() -> None:
    cfg, _ = config(use_floor=False, rrf_k=10, vector_weight=2.0, lexical_weight=3.0)
    row = Scored(uid(1), sim=0.5, vrank=2, lrank=5, coverage=1.0)
    kept, dropped = fuse([row], cfg, lexical_only=False)
    assert dropped == []
    assert kept[0].fused == pytest.approx(2.0 / 12 + 3.0 / 15)


def test_lexical_only_ignores_the_vector_rank_and_judges_lexically() -> None:
    cfg, judge = config(rrf_k=10, lexical_weight=3.0)
    row = Scored(uid(1), sim=0.5, vrank=1, lrank=5, coverage=LEXICAL_BAR)
    kept, _ = fuse([row], cfg, lexical_only=True)
    assert kept[0].fused == pytest.approx(3.0 / 15)
    # kept at exactly the lexical bar (below the hybrid one): the bar is inclusive
    assert ids(kept) == [row.id]
    assert [mode for _, _, mode in judge.asked] == ["lexical"]


def test_the_judge_sees_each_candidates_signals_and_the_querys_stats() -> None:
    cfg, judge = config()
    rows = [Scored(uid(i), sim=0.5, vrank=i + 1, coverage=0.9) for i in range(3)]
    kept, _ = fuse(rows, cfg, lexical_only=False)
    assert sorted((s.vrank or 0) for s, _, _ in judge.asked) == [1, 2, 3]
    assert {stats for _, stats, _ in judge.asked} == {stats_of(rows)}
    assert {mode for _, _, mode in judge.asked} == {"hybrid"}
    assert [r.judgement for r in kept] == [Judgement(0.9, (("coverage", 0.9),))] * 3
    given_stats = QueryStats(sim_mean=0.25)
    judge.asked.clear()
    fuse(rows, cfg, lexical_only=False, stats=given_stats)
    assert {stats for _, stats, _ in judge.asked} == {given_stats}


def test_the_bar_is_inclusive_and_a_request_threshold_overrides_it() -> None:
    cfg, _ = config()
    at_bar = Scored(uid(1), vrank=1, coverage=HYBRID_BAR)
    below = Scored(uid(2), vrank=2, coverage=HYBRID_BAR - 0.01)
    kept, dropped = fuse([at_bar, below], cfg, lexical_only=False)
    assert ids(kept) == [at_bar.id]
    assert ids(dropped) == [below.id]
    kept, _ = fuse([at_bar, below], cfg, lexical_only=False, threshold=0.1)
    assert ids(kept) == [at_bar.id, below.id]
    kept, _ = fuse([at_bar, below], cfg, lexical_only=False, threshold=0.95)
    assert kept == []


def test_top_n_argument_overrides_the_configs() -> None:
    cfg, _ = config(top_n=1)
    rows = [Scored(uid(i), vrank=i + 1, coverage=0.9) for i in range(4)]
    assert len(fuse(rows, cfg, lexical_only=False)[0]) == 1
    assert len(fuse(rows, cfg, lexical_only=False, top_n=3)[0]) == 3


def test_judged_order_is_probability_then_fused_score_then_id() -> None:
    cfg, _ = config()
    rows = [
        Scored(uid(5), vrank=1, coverage=0.7),  # best fused, lower probability
        Scored(uid(4), vrank=4, coverage=0.9),
        Scored(uid(3), vrank=2, coverage=0.9),  # same probability, better fused
        Scored(uid(2), lrank=3, coverage=0.8),
        Scored(uid(1), lrank=3, coverage=0.8),  # same probability and fused: id decides
    ]
    kept, _ = fuse(rows, cfg, lexical_only=False)
    assert ids(kept) == [uid(3), uid(4), uid(1), uid(2), uid(5)]


def test_only_the_best_fused_are_judged_the_rest_are_dropped_unjudged() -> None:
    cfg, judge = config(judge_depth=2, rrf_k=10)
    rows = [Scored(uid(i), vrank=i + 1, coverage=0.9) for i in range(5)]
    kept, dropped = fuse(rows, cfg, lexical_only=False)
    assert len(judge.asked) == 2
    assert ids(kept) == [uid(0), uid(1)]
    assert dropped == [Ranked(rows[i], 1.0 / (10 + i + 1), UNJUDGED) for i in (2, 3, 4)]


def test_without_the_floor_every_candidate_is_ranked_whatever_the_judge_depth() -> None:
    cfg, _ = config(use_floor=False, judge_depth=2, top_n=10)
    rows = [Scored(uid(i), vrank=i + 1, coverage=0.0) for i in range(5)]
    kept, dropped = fuse(rows, cfg, lexical_only=False)
    assert ids(kept) == [uid(i) for i in range(5)]
    assert dropped == []


@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(1, 40)),
            st.one_of(st.none(), st.integers(1, 40)),
            st.floats(0.0, 1.0),
        ),
        max_size=25,
    ),
    st.integers(0, 10),
    st.integers(0, 30),
)
def test_fuse_partitions_its_input(
    spec: list[tuple[int | None, int | None, float]], top_n: int, depth: int
) -> None:
    """Every candidate with a rank ends up once in kept or dropped; kept never exceeds top-N,
    every kept one passes the bar, and nothing beyond the judge's depth is kept."""
    cfg, judge = config(judge_depth=depth)
    rows = [Scored(uid(i), vrank=v, lrank=lr, coverage=p) for i, (v, lr, p) in enumerate(spec)]
    kept, dropped = fuse(rows, cfg, lexical_only=False, top_n=top_n)
    ranked = {r.id for r in rows if r.vrank is not None or r.lrank is not None}
    assert sorted(ids(kept) + ids(dropped)) == sorted(ranked)
    assert len(kept) <= top_n
    assert all(r.probability >= HYBRID_BAR for r in kept)
    assert len(judge.asked) == min(depth, len(ranked))
    assert [r.probability for r in kept] == sorted((r.probability for r in kept), reverse=True)
