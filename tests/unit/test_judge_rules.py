"""The relevance judge's pure parts value by value: the query's statistics, the features of
one candidate in each mode, and the explanation line.

Pure. Hand-computed expectations for small inputs, written to kill the mutants ``make mutate``
found in ``harness/memory/domain/relevance.py`` (docs/mutation.md).
"""

from __future__ import annotations

import math

import pytest

from harness.memory.domain.relevance import (
    COVERAGE_KNOTS,
    SIM_KNOTS,
    Judgement,
    JudgeModel,
    JudgeParams,
    QueryStats,
    Signals,
    default_judge,
    features,
    query_stats,
)
from harness.memory.domain.relevance_params import PARAMS


def test_stats_of_no_scores_are_the_neutral_defaults() -> None:
    assert query_stats([], []) == QueryStats()
    assert QueryStats() == QueryStats(0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0)


def test_stats_of_one_score_keep_a_unit_spread() -> None:
    assert query_stats([0.4], [0.7]) == QueryStats(
        sim_mean=0.4,
        sim_std=1.0,
        floor_sim=0.4,
        sim_max=0.4,
        lex_mean=0.7,
        lex_std=1.0,
        lex_max=0.7,
    )


def test_stats_of_several_scores() -> None:
    got = query_stats([0.2, 0.6, 0.4], [0.1, 0.5])
    assert got.sim_mean == pytest.approx(0.4)
    assert got.sim_std == pytest.approx((0.08 / 3) ** 0.5)
    assert (got.floor_sim, got.sim_max) == (0.2, 0.6)
    assert got.lex_mean == pytest.approx(0.3)
    assert got.lex_std == pytest.approx(0.2)
    assert got.lex_max == 0.5


def test_the_spread_is_bounded_below() -> None:
    got = query_stats([0.5, 0.5001], [0.3, 0.3])
    assert got.sim_std == 0.02
    assert got.lex_std == 0.02


STATS = QueryStats(
    sim_mean=0.45, sim_std=0.1, floor_sim=0.3, sim_max=0.7, lex_mean=0.2, lex_std=0.2, lex_max=0.9
)
FULL = Signals(
    sim=0.65,
    content_sim=0.55,
    context_sim=0.65,
    vrank=2,
    lrank=4,
    idf_coverage=0.6,
    max_idf=0.8,
    coverage=0.6,
    kind="lesson",
)
LEXICAL_PART = {
    "idf_coverage": 0.6,
    "idf_gap": -0.3,
    "max_idf": 0.8,
    "coverage": 0.6,
    "lexical_rr": 0.25,
    "coverage>0.25": 0.35,
    "coverage>0.5": 0.1,
    "coverage>0.75": 0.0,
}


def test_hybrid_features_of_a_candidate_with_every_signal() -> None:
    sim_hinges = dict(
        zip((f"sim>{k}" for k in SIM_KNOTS), (0.45, 0.35, 0.25, 0.15, 0.05, 0.0), strict=True)
    )
    content_hinges = dict(
        zip(
            (f"content_sim>{k}" for k in SIM_KNOTS), (0.35, 0.25, 0.15, 0.05, 0.0, 0.0), strict=True
        )
    )
    context_hinges = dict(
        zip(
            (f"context_sim>{k}" for k in SIM_KNOTS),
            (0.45, 0.35, 0.25, 0.15, 0.05, 0.0),
            strict=True,
        )
    )
    expected = {
        **LEXICAL_PART,
        "sim": 0.65,
        "content_sim": 0.55,
        "margin": 2.0,
        "gap": -0.05,
        **sim_hinges,
        **content_hinges,
        "context_sim": 0.65,
        **context_hinges,
        "vector_rr": 0.5,
    }
    got = features(FULL, STATS, "hybrid")
    assert got == pytest.approx(expected)
    assert set(got) == set(expected)


def test_lexical_features_leave_vectors_out_and_measure_the_margin_in_idf() -> None:
    got = features(FULL, STATS, "lexical")
    assert got == pytest.approx({**LEXICAL_PART, "margin": 2.0})
    assert set(got) == set(LEXICAL_PART) | {"margin"}


def test_missing_signals_count_as_the_weakest() -> None:
    got = features(Signals(kind="decision"), STATS, "hybrid")
    assert got["sim"] == 0.3  # the lowest similarity the vector ranking returned
    assert got["content_sim"] == 0.3
    assert got["margin"] == pytest.approx(-1.5)
    assert got["gap"] == pytest.approx(-0.4)
    assert (got["vector_rr"], got["lexical_rr"]) == (0.0, 0.0)
    assert (got["idf_coverage"], got["max_idf"], got["coverage"]) == (0.0, 0.0, 0.0)
    assert got["idf_gap"] == pytest.approx(-0.9)
    assert all(got[f"coverage>{k}"] == 0.0 for k in COVERAGE_KNOTS)
    # kind buys nothing: a decision's features are a fact's
    assert got == features(Signals(kind="fact"), STATS, "hybrid")
    # a context match without a content score: the content counts as at most the floor
    assert features(Signals(sim=0.65), STATS, "hybrid")["content_sim"] == 0.3
    assert features(Signals(), STATS, "lexical")["margin"] == pytest.approx(-1.0)


def test_explanation_names_the_largest_contributions_in_order() -> None:
    j = Judgement(0.83125, (("a", 1.2), ("b", -2.0), ("c", 0.1), ("d", 0.5)))
    assert j.explain() == "p=0.831 (b -2.00, a +1.20, d +0.50)"
    assert j.explain(top=1) == "p=0.831 (b -2.00)"
    assert j.explain(top=4) == "p=0.831 (b -2.00, a +1.20, d +0.50, c +0.10)"
    assert Judgement(0.5).explain() == "p=0.500"


def test_the_shipped_judge_reads_its_parameters_as_written() -> None:
    """Built inside the test (a judge built at import would hide a broken loader)."""
    judge = default_judge()
    for mode in ("hybrid", "lexical"):
        raw = PARAMS[mode]
        params = judge.params(mode)  # type: ignore[arg-type]
        assert params.intercept == float(raw["intercept"])  # type: ignore[arg-type]
        assert params.threshold == float(raw["threshold"])  # type: ignore[arg-type]
        weights = raw["weights"]
        assert isinstance(weights, dict)
        assert dict(params.weights) == {str(k): float(v) for k, v in weights.items()}
    p = judge.judge(FULL, STATS, "hybrid").probability
    assert 0.0 < p < 1.0


@pytest.mark.parametrize("z", [-30.0, -1.0, -0.25, 0.0, 0.25, 1.0, 30.0])
def test_the_probability_is_the_logistic_of_the_log_odds(z: float) -> None:
    judge = JudgeModel(
        JudgeParams(intercept=z, weights={}, threshold=0.5),
        JudgeParams(intercept=z, weights={}, threshold=0.5),
    )
    got = judge.judge(Signals(), QueryStats(), "hybrid").probability
    assert got == pytest.approx(1.0 / (1.0 + math.exp(-z)), rel=1e-12, abs=1e-300)
