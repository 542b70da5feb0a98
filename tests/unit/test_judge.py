"""The relevance judge (pure): monotone in every evidence signal, deterministic, bounded, and
wired to one threshold that a request can override."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.memory import RecallRequest
from harness.memory.domain.ranking import RankingConfig, Scored, fuse
from harness.memory.domain.relevance import (
    EVIDENCE_FEATURES,
    JudgeModel,
    JudgeParams,
    QueryStats,
    Signals,
    default_judge,
    features,
    query_stats,
)
from harness.memory.domain.relevance_params import PARAMS

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
sims = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
ranks = st.one_of(st.none(), st.integers(min_value=1, max_value=200))
kinds = st.sampled_from(["lesson", "fact", "decision"])


@st.composite
def signals(draw: st.DrawFn) -> Signals:
    content = draw(st.one_of(st.none(), sims))
    context = draw(st.one_of(st.none(), sims))
    best = None if content is None else max(content, context if context is not None else -1.0)
    return Signals(
        sim=best,
        content_sim=content,
        context_sim=context if content is not None else None,
        vrank=draw(ranks) if content is not None else None,
        lrank=draw(ranks),
        idf_coverage=draw(st.one_of(st.none(), unit)),
        max_idf=draw(st.one_of(st.none(), unit)),
        coverage=draw(st.one_of(st.none(), unit)),
        kind=draw(kinds),
    )


stats_strategy = st.builds(
    QueryStats,
    sim_mean=sims,
    sim_std=st.floats(min_value=0.02, max_value=1.0),
    floor_sim=sims,
    lex_mean=unit,
    lex_std=st.floats(min_value=0.02, max_value=1.0),
)

JUDGE = default_judge()


def _more(s: Signals, signal: str) -> Signals:
    """The same candidate with strictly more evidence in one signal."""
    if signal in ("vrank", "lrank"):
        rank = getattr(s, signal)
        better = 1 if rank is None else max(1, rank - 1)
        return dataclasses.replace(s, **{signal: better})
    value = getattr(s, signal)
    if signal == "context_sim" and (value is None or s.content_sim is None):
        return s  # no context: nothing to raise (having one is a shape, not evidence)
    top = 1.0
    raised = top if value is None else min(top, value + 0.1)
    changes: dict[str, object] = {signal: raised}
    if signal == "content_sim":
        changes["sim"] = max(raised, s.sim if s.sim is not None else raised)
    if signal == "context_sim":
        changes["sim"] = max(raised, s.sim if s.sim is not None else raised)
    return dataclasses.replace(s, **changes)


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
@pytest.mark.parametrize(
    "signal",
    ["sim", "content_sim", "context_sim", "vrank", "lrank", "idf_coverage", "max_idf", "coverage"],
)
@given(s=signals(), stats=stats_strategy)
def test_more_evidence_never_lowers_the_probability(
    mode: str, signal: str, s: Signals, stats: QueryStats
) -> None:
    if signal == "sim" and s.sim is None:
        s = dataclasses.replace(s, sim=0.0, content_sim=0.0)
    before = JUDGE.judge(s, stats, mode).probability  # type: ignore[arg-type]
    after = JUDGE.judge(_more(s, signal), stats, mode).probability  # type: ignore[arg-type]
    assert after >= before - 1e-12


@given(s=signals(), stats=stats_strategy, mode=st.sampled_from(["hybrid", "lexical"]))
def test_the_judge_is_deterministic_and_a_probability(
    s: Signals, stats: QueryStats, mode: str
) -> None:
    a = JUDGE.judge(s, stats, mode)  # type: ignore[arg-type]
    b = JUDGE.judge(s, stats, mode)  # type: ignore[arg-type]
    assert a == b
    assert 0.0 <= a.probability <= 1.0


def test_shipped_parameters_are_fitted_and_monotone() -> None:
    """The parameters come from bench.judge_fit: every evidence weight is non-negative, at
    least one is positive, and the thresholds are probabilities."""
    for mode in ("hybrid", "lexical"):
        p = PARAMS[mode]
        assert 0.0 < p["threshold"] < 1.0
        evidence = {k: v for k, v in p["weights"].items() if k in EVIDENCE_FEATURES}
        assert evidence and all(v >= 0 for v in evidence.values())
        assert any(v > 0 for v in evidence.values())


def test_features_are_non_decreasing_in_their_signal() -> None:
    stats = QueryStats(sim_mean=0.2, sim_std=0.1, floor_sim=0.1)
    low = features(Signals(sim=0.3, content_sim=0.3, vrank=5, lrank=9), stats, "hybrid")
    high = features(Signals(sim=0.6, content_sim=0.6, vrank=1, lrank=2), stats, "hybrid")
    for name in ("sim", "content_sim", "margin", "vector_rr", "lexical_rr"):
        assert high[name] > low[name], name


def test_a_missed_vector_rank_counts_as_the_lowest_returned_similarity() -> None:
    stats = query_stats([0.9, 0.5, 0.3])
    f = features(Signals(sim=None, lrank=1, idf_coverage=0.8), stats, "hybrid")
    assert f["sim"] == pytest.approx(0.3) and f["vector_rr"] == 0.0


def test_query_stats_bound_the_spread() -> None:
    flat = query_stats([0.5, 0.5, 0.5])
    assert flat.sim_std >= 0.02 and flat.floor_sim == 0.5
    assert query_stats([]).sim_std == 1.0


def test_explanation_names_the_largest_contributions() -> None:
    model = JudgeModel(
        JudgeParams(-1.0, {"sim": 4.0, "max_idf": 1.0, "coverage": 0.1}, 0.5),
        JudgeParams(0.0, {}, 0.5),
    )
    j = model.judge(
        Signals(sim=0.5, content_sim=0.5, max_idf=0.2, coverage=1.0), QueryStats(), "hybrid"
    )
    text = j.explain(top=2)
    assert text.startswith(f"p={j.probability:.3f}")
    assert "sim +2.00" in text and "max_idf +0.20" in text and "coverage" not in text


def _row(sim: float, vrank: int) -> Scored:
    return Scored(uuid.uuid4(), sim=sim, content_sim=sim, vrank=vrank)


def test_one_threshold_decides_and_a_request_can_override_it() -> None:
    model = JudgeModel(JudgeParams(-5.0, {"sim": 10.0}, 0.6), JudgeParams(0.0, {}, 0.5))
    rows = [_row(0.9, 1), _row(0.5, 2), _row(0.1, 3)]
    cfg = RankingConfig(judge=model)
    kept, dropped = fuse(rows, cfg, lexical_only=False)
    assert [r.scored for r in kept] == rows[:1]  # p(0.9)=0.98, p(0.5)=0.5, p(0.1)=0.02
    assert {r.scored.id for r in dropped} == {rows[1].id, rows[2].id}
    kept, _ = fuse(rows, cfg, lexical_only=False, threshold=0.0)
    assert len(kept) == 3
    kept, _ = fuse(rows, cfg, lexical_only=False, threshold=1.0)
    assert kept == []


@pytest.mark.parametrize("bad", [-0.01, 1.01, float("nan"), float("inf"), "high"])
def test_a_threshold_outside_zero_one_is_invalid_input(bad: object) -> None:
    with pytest.raises(InvalidInput) as info:
        RecallRequest(tenant="t", user_id="u", relevance_threshold=bad)
    assert "relevance_threshold" in str(info.value)


@given(st.lists(signals(), max_size=30), stats_strategy, st.sampled_from(["hybrid", "lexical"]))
def test_judging_a_batch_equals_judging_each(
    batch: list[Signals], stats: QueryStats, mode: str
) -> None:
    """The batch path recall uses gives every candidate exactly the probability and the
    contributions the one-at-a-time judge gives it."""
    judge = default_judge()
    many = judge.judge_many(batch, stats, mode)  # type: ignore[arg-type]
    one = [judge.judge(s, stats, mode) for s in batch]  # type: ignore[arg-type]
    assert [j.probability for j in many] == [j.probability for j in one]
    assert [j.contributions for j in many] == [j.contributions for j in one]
    assert [j.explain() for j in many] == [j.explain() for j in one]
