"""The relevance judge: a calibrated probability that a ranked memory is relevant to the query.

Pure: no database, no model. Recall hands it every signal it has for a candidate (content and
context similarity, IDF-weighted lexical evidence, the item's ranks, how far it stands out from
the query's own score distribution) and one threshold on the probability decides what passes.
Kind is not evidence: it chooses which candidates recall looks at, never how relevant one is
(a fitted offset for lessons once let any lesson outrank an exact identifier match). The coefficients are fitted from the dev splits by ``python -m bench.judge_fit``, which
writes :mod:`harness.memory.domain.relevance_params`; nothing here is a hand-set floor.

Monotone by construction: every evidence feature is a non-decreasing function of one signal and
its fitted weight is non-negative, so more evidence never lowers the probability. A lesson's
record of later runs (:attr:`Signals.standing`, a rule of
:mod:`harness.memory.domain.learning`, not fitted) moves the log-odds as one more term.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harness.memory.domain.relevance_params import PARAMS

__all__ = [
    "EVIDENCE_FEATURES",
    "HINGE_FEATURES",
    "OFFSET_FEATURES",
    "STANDING_TERM",
    "JudgeModel",
    "JudgeParams",
    "Judgement",
    "QueryStats",
    "Signals",
    "default_judge",
    "features",
    "query_stats",
]

Mode = Literal["hybrid", "lexical"]

#: A monotone spline basis: hinges max(0, x - knot) at a fixed grid of knots, so the fitted
#: (non-negative) weights can make the probability rise steeply past some level of a signal,
#: as a floor would, without anyone choosing that level by hand.
SIM_KNOTS: tuple[float, ...] = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
COVERAGE_KNOTS: tuple[float, ...] = (0.25, 0.5, 0.75)
HINGE_FEATURES: tuple[str, ...] = (
    *(f"sim>{k}" for k in SIM_KNOTS),
    *(f"content_sim>{k}" for k in SIM_KNOTS),
    *(f"context_sim>{k}" for k in SIM_KNOTS),
    *(f"coverage>{k}" for k in COVERAGE_KNOTS),
)
#: Features that measure evidence for relevance; their weights are fitted non-negative.
EVIDENCE_FEATURES: tuple[str, ...] = (
    "sim",
    "content_sim",
    "context_sim",
    "margin",
    "gap",
    "idf_coverage",
    "idf_gap",
    "max_idf",
    "coverage",
    "vector_rr",
    "lexical_rr",
    *HINGE_FEATURES,
)
#: Offsets (not evidence: any sign). None: kind and shape buy no relevance.
OFFSET_FEATURES: tuple[str, ...] = ()
#: The name of the standing term in a judgement's contributions.
STANDING_TERM = "outcomes"


@dataclass(frozen=True)
class Signals:
    """What recall knows of one candidate for one query; None where a retriever missed it.

    ``sim`` is the best cosine of content or context, ``content_sim`` the content's own;
    ``idf_coverage`` the share of the query's IDF the item holds, ``max_idf`` the normalised
    IDF of the rarest query word it holds, ``coverage`` the share of query words it holds;
    ``vrank``/``lrank`` its 1-based vector and full-text ranks; ``standing`` the log-odds
    its record of later runs adds (0 for all but lessons that misled, did not help or faded).
    """

    sim: float | None = None
    content_sim: float | None = None
    context_sim: float | None = None
    vrank: int | None = None
    lrank: int | None = None
    idf_coverage: float | None = None
    max_idf: float | None = None
    coverage: float | None = None
    kind: str = "fact"
    standing: float = 0.0


@dataclass(frozen=True)
class QueryStats:
    """The query's own score distribution: how candidates of this query score in general.

    ``floor_sim`` stands in for the similarity of a candidate the vector ranking did not
    return (it is at most the lowest returned one).
    """

    sim_mean: float = 0.0
    sim_std: float = 1.0
    floor_sim: float = 0.0
    sim_max: float = 0.0
    lex_mean: float = 0.0
    lex_std: float = 1.0
    lex_max: float = 0.0


@dataclass(frozen=True)
class JudgeParams:
    """One fitted logistic model: intercept, weights by feature name, and its threshold."""

    intercept: float
    weights: Mapping[str, float]
    threshold: float


Terms = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Judgement:
    """The judge's answer for one candidate: the probability and what moved it most.

    ``terms`` are the contributions, or a function computing them when first asked for
    (:meth:`JudgeModel.judge_many` defers them: most candidates' are never read)."""

    probability: float
    terms: Terms | Callable[[], Terms] = ()

    @property
    def contributions(self) -> Terms:
        """Each feature's (name, weight x value) term of the log-odds."""
        return self.terms() if callable(self.terms) else self.terms

    def explain(self, top: int = 3) -> str:
        """``p=0.83 (sim +1.20, max_idf +0.90, margin +0.41)``: the largest contributions."""
        parts = sorted(self.contributions, key=lambda kv: -abs(kv[1]))[:top]
        inner = ", ".join(f"{name} {value:+.2f}" for name, value in parts)
        return f"p={self.probability:.3f}" + (f" ({inner})" if inner else "")


_MIN_STD = 0.02


def query_stats(sims: Sequence[float], lexical: Sequence[float] = ()) -> QueryStats:
    """The distribution of one query's candidate scores (vector similarities, lexical sums).

    The standard deviation is bounded below so a pool of near-identical scores does not turn
    tiny differences into large margins.
    """
    sim_mean = statistics.fmean(sims) if sims else 0.0
    sim_std = max(_pstdev(sims, sim_mean), _MIN_STD) if len(sims) > 1 else 1.0
    lex_mean = statistics.fmean(lexical) if lexical else 0.0
    lex_std = max(_pstdev(lexical, lex_mean), _MIN_STD) if len(lexical) > 1 else 1.0
    return QueryStats(
        sim_mean=sim_mean,
        sim_std=sim_std,
        floor_sim=min(sims) if sims else 0.0,
        sim_max=max(sims) if sims else 0.0,
        lex_mean=lex_mean,
        lex_std=lex_std,
        lex_max=max(lexical) if lexical else 0.0,
    )


def _pstdev(values: Sequence[float], mean: float) -> float:
    """The population standard deviation in floating point (``statistics.pstdev`` is exact
    but sums in fractions: a quarter of a millisecond per recall)."""
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))


def features(s: Signals, stats: QueryStats, mode: Mode) -> dict[str, float]:
    """The judge's inputs for one candidate: each evidence feature is non-decreasing in one
    signal (better rank = smaller rank number = larger feature)."""
    idf_coverage = s.idf_coverage or 0.0
    out: dict[str, float] = {
        "idf_coverage": idf_coverage,
        # Standing among this query's candidates: 0 for the best, negative behind it.
        "idf_gap": idf_coverage - max(stats.lex_max, idf_coverage),
        "max_idf": s.max_idf or 0.0,
        "coverage": s.coverage or 0.0,
        "lexical_rr": 1.0 / s.lrank if s.lrank else 0.0,
        **{f"coverage>{k}": max(0.0, (s.coverage or 0.0) - k) for k in COVERAGE_KNOTS},
    }
    if mode == "hybrid":
        sim = s.sim if s.sim is not None else stats.floor_sim
        content = s.content_sim if s.content_sim is not None else min(sim, stats.floor_sim)
        # A task matched against the tasks that taught a lesson (its contexts): task-to-task
        # similarity runs lower than question-to-answer, so it gets weights of its own.
        context = s.context_sim if s.context_sim is not None else 0.0
        out["sim"] = sim
        out["content_sim"] = content
        out["context_sim"] = context
        out["margin"] = (sim - stats.sim_mean) / stats.sim_std
        out["gap"] = sim - max(stats.sim_max, sim)
        for k in SIM_KNOTS:
            out[f"sim>{k}"] = max(0.0, sim - k)
            out[f"content_sim>{k}"] = max(0.0, content - k)
            out[f"context_sim>{k}"] = max(0.0, context - k)
        out["vector_rr"] = 1.0 / s.vrank if s.vrank else 0.0
    else:
        # Without vectors the margin is the item's full-text score against the query's others.
        out["margin"] = (idf_coverage - stats.lex_mean) / stats.lex_std
    return out


class JudgeModel:
    """Fitted parameters for both modes, applied to one candidate at a time."""

    def __init__(self, hybrid: JudgeParams, lexical: JudgeParams):
        self.hybrid = hybrid
        self.lexical = lexical

    def params(self, mode: Mode) -> JudgeParams:
        """The parameters of ``mode`` ("hybrid" with a query vector, else "lexical")."""
        return self.hybrid if mode == "hybrid" else self.lexical

    def judge(self, s: Signals, stats: QueryStats, mode: Mode) -> Judgement:
        """The probability that the candidate is relevant, with each feature's contribution
        to the log-odds. Deterministic."""
        p = self.params(mode)
        weights = p.weights
        contributions = tuple(
            (name, weights[name] * value)
            for name, value in features(s, stats, mode).items()
            if weights.get(name)
        )
        if s.standing:
            contributions += ((STANDING_TERM, s.standing),)
        z = p.intercept + sum(c for _, c in contributions)
        return Judgement(_sigmoid(z), contributions)

    def judge_many(
        self, signals: Sequence[Signals], stats: QueryStats, mode: Mode
    ) -> list[Judgement]:
        """:meth:`judge` for many candidates of one query at once: the same features and the
        same sums in the same order (so the same probabilities), computed a column at a time;
        each judgement's contributions are built only when read."""
        if not signals:
            return []
        p = self.params(mode)
        columns = _feature_columns(signals, stats, mode)
        active = [(name, p.weights[name], col) for name, col in columns if p.weights.get(name)]
        standing = np.array([s.standing for s in signals], dtype=float)
        if standing.any():
            active.append((STANDING_TERM, 1.0, standing))
        total = np.zeros(len(signals))
        products = []
        for _, weight, col in active:
            product = weight * col
            products.append(product)
            total = total + product
        z = (p.intercept + total).tolist()
        names = tuple(name for name, _, _ in active)
        matrix = np.column_stack(products) if products else np.zeros((len(signals), 0))
        return [Judgement(_sigmoid(zi), _DeferredTerms(names, matrix, i)) for i, zi in enumerate(z)]


class _DeferredTerms:
    """One row of a batch's contribution matrix, turned into terms when called."""

    __slots__ = ("i", "matrix", "names")

    def __init__(self, names: tuple[str, ...], matrix: np.ndarray, i: int):
        self.names, self.matrix, self.i = names, matrix, i

    def __call__(self) -> Terms:
        return tuple(zip(self.names, self.matrix[self.i].tolist(), strict=True))


def _optional(values: Sequence[float | None], default: float) -> np.ndarray:
    return np.array([default if v is None else v for v in values], dtype=float)


def _feature_columns(
    signals: Sequence[Signals], stats: QueryStats, mode: Mode
) -> list[tuple[str, np.ndarray]]:
    """:func:`features` for a batch, as (name, column) pairs in the same order."""
    idf_coverage = np.array([s.idf_coverage or 0.0 for s in signals], dtype=float)
    coverage = np.array([s.coverage or 0.0 for s in signals], dtype=float)
    out: list[tuple[str, np.ndarray]] = [
        ("idf_coverage", idf_coverage),
        ("idf_gap", idf_coverage - np.maximum(stats.lex_max, idf_coverage)),
        ("max_idf", np.array([s.max_idf or 0.0 for s in signals], dtype=float)),
        ("coverage", coverage),
        ("lexical_rr", np.array([1.0 / s.lrank if s.lrank else 0.0 for s in signals])),
        *((f"coverage>{k}", np.maximum(0.0, coverage - k)) for k in COVERAGE_KNOTS),
    ]
    if mode == "hybrid":
        sim = _optional([s.sim for s in signals], stats.floor_sim)
        content = np.where(
            np.array([s.content_sim is None for s in signals]),
            np.minimum(sim, stats.floor_sim),
            _optional([s.content_sim for s in signals], 0.0),
        )
        context = _optional([s.context_sim for s in signals], 0.0)
        out += [
            ("sim", sim),
            ("content_sim", content),
            ("context_sim", context),
            ("margin", (sim - stats.sim_mean) / stats.sim_std),
            ("gap", sim - np.maximum(stats.sim_max, sim)),
        ]
        for k in SIM_KNOTS:
            out += [(f"sim>{k}", np.maximum(0.0, sim - k))]
            out += [(f"content_sim>{k}", np.maximum(0.0, content - k))]
            out += [(f"context_sim>{k}", np.maximum(0.0, context - k))]
        out += [
            ("vector_rr", np.array([1.0 / s.vrank if s.vrank else 0.0 for s in signals])),
        ]
    else:
        out.append(("margin", (idf_coverage - stats.lex_mean) / stats.lex_std))
    return out


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _params(raw: Mapping[str, object]) -> JudgeParams:
    weights = raw["weights"]
    assert isinstance(weights, Mapping)
    return JudgeParams(
        intercept=float(raw["intercept"]),  # type: ignore[arg-type]
        weights={str(k): float(v) for k, v in weights.items()},
        threshold=float(raw["threshold"]),  # type: ignore[arg-type]
    )


def default_judge() -> JudgeModel:
    """The judge with the parameters this package ships (fitted by ``bench.judge_fit``)."""
    return JudgeModel(_params(PARAMS["hybrid"]), _params(PARAMS["lexical"]))
