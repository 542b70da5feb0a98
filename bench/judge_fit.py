"""Fit the relevance judge on the dev splits and write the parameters the library ships.

    python -m bench.judge_data              # once: datasets and their signals
    python -m bench.judge_fit               # fit on dev, pick the threshold on dev, report dev
                                            # and test beside the old fixed floor; writes
                                            # harness/memory/domain/relevance_params.py,
                                            # bench/results/judge.json, bench/results/judge.png
    python -m bench.judge_fit --report-only # evaluate the shipped parameters, write nothing
                                            # to the package
    python -m bench.judge_fit --keep lexical # refit the hybrid model only (as shipped since
                                            # issue 30: a lexical refit abstained on plain
                                            # single matches)

The model is a logistic regression over the features of :mod:`harness.memory.domain.relevance`, fitted by
L-BFGS-B with every evidence weight bounded to be non-negative (so the judge is monotone), a
small L2 penalty, and each dataset weighted equally. The threshold is the probability on dev
that leaves the smallest total shortfall against the goals, ties going to the best sum of
figures. Nothing is tuned on the test splits.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy.optimize import minimize

from bench.common import RESULTS
from bench.judge_data import Query, load
from harness.memory.domain.ranking import Ranked, RankingConfig, Scored, fuse, stats_of
from harness.memory.domain.relevance import (
    COVERAGE_KNOTS,
    EVIDENCE_FEATURES,
    OFFSET_FEATURES,
    JudgeModel,
    JudgeParams,
    default_judge,
    features,
)

Mode = Literal["hybrid", "lexical"]
PARAMS_FILE = (
    Path(__file__).resolve().parents[1] / "harness" / "memory" / "domain" / "relevance_params.py"
)
CANDIDATES = 5  # candidates per query the judge is fitted on (best by fused rank) ...
#: ... and how much more a negative query's candidates weigh, by mode (without vectors the
#: lexical evidence of a never-stored attribute of a stored thing looks like a match; weighing
#: negatives up there only teaches the judge to refuse everything).
NEGATIVE_WEIGHT = {"hybrid": 20.0, "lexical": 1.0}
TOP_N = 8
L2 = 1e-4

#: (dataset, metric, goal) from the relevance issue; facts goals apply at 1k and 10k.
GOALS: tuple[tuple[str, str, float], ...] = (
    ("lessons", "hit@8", 0.90),
    ("lessons", "hit@3", 0.75),
    ("lessons", "abstain", 0.95),
    ("workplace", "abstain", 0.80),
    ("lessonfacts", "hit@8", 0.98),
    ("lessonfacts", "abstain", 0.95),
    ("facts1k", "hit@8", 0.99),
    ("facts1k", "abstain", 0.95),
    ("facts10k", "hit@8", 0.99),
    ("facts10k", "abstain", 0.95),
    ("locomo", "reach", 0.75),
    ("locomo", "abstain", 0.40),
)


def feature_names(mode: Mode) -> list[str]:
    if mode == "hybrid":
        return [*EVIDENCE_FEATURES, *OFFSET_FEATURES]
    lexical = (
        "idf_coverage",
        "max_idf",
        "coverage",
        "lexical_rr",
        "margin",
        *(f"coverage>{k}" for k in COVERAGE_KNOTS),
    )
    return [*lexical, *OFFSET_FEATURES]


def rows_of(q: Query, mode: Mode) -> list[Scored]:
    return q.rows if mode == "hybrid" else q.lexical_rows


def design(
    queries: Sequence[Query], mode: Mode, *, negative_weight: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Feature matrix, labels and weights over each query's best ``CANDIDATES`` candidates."""
    names = feature_names(mode)
    per_set: dict[str, int] = {}
    for q in queries:
        per_set[q.dataset] = per_set.get(q.dataset, 0) + 1
    xs: list[list[float]] = []
    ys: list[float] = []
    ws: list[float] = []
    cfg = RankingConfig(use_floor=False, top_n=10_000)
    for q in queries:
        rows = rows_of(q, mode)
        stats = stats_of(rows)
        ranked_all, _ = fuse(rows, cfg, lexical_only=mode == "lexical", stats=stats)
        # The competitive candidates, plus any relevant one ranked further down.
        kept = ranked_all[:CANDIDATES] + [
            r for r in ranked_all[CANDIDATES:] if r.scored.id in q.relevant
        ]
        if not kept:
            continue
        upweight = NEGATIVE_WEIGHT[mode] if negative_weight is None else negative_weight
        weight = upweight if q.kind == "negative" else 1.0
        for r in kept:
            f = features(r.scored.signals(), stats, mode)
            xs.append([f.get(n, 0.0) for n in names])
            ys.append(1.0 if r.scored.id in q.relevant else 0.0)
            # Every dataset weighs the same; within one, every query the same (negative
            # queries more: abstaining is what the fixed floor did well and must keep).
            ws.append(weight / (per_set[q.dataset] * len(kept)))
    w = np.asarray(ws)
    return np.asarray(xs), np.asarray(ys), w / w.sum() * len(w)


def logistic(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    bounds: list[tuple[float | None, float | None]],
    l2: float,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """Weighted logistic regression by L-BFGS-B: ``theta[0]`` the intercept, ``theta[1:]`` the
    weights of ``x``'s columns, each within ``bounds`` (intercept first); L2 on the weights."""

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        p = 1.0 / (1.0 + np.exp(-(theta[0] + x @ theta[1:])))
        eps = 1e-12
        nll = -np.sum(w * (y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))) / len(y)
        grad_z = w * (p - y) / len(y)
        grad = np.concatenate([[grad_z.sum()], x.T @ grad_z])
        nll += l2 * float(theta[1:] @ theta[1:])
        grad[1:] += 2 * l2 * theta[1:]
        return float(nll), grad

    first = np.zeros(x.shape[1] + 1) if start is None else start
    return np.asarray(minimize(loss, first, jac=True, method="L-BFGS-B", bounds=bounds).x)


def fit(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, names: list[str]
) -> tuple[float, dict[str, float]]:
    """The judge's model: evidence weights >= 0, offsets and intercept free."""
    bounds: list[tuple[float | None, float | None]] = [(None, None)] + [
        (0.0, None) if name in EVIDENCE_FEATURES else (None, None) for name in names
    ]
    theta = logistic(x, y, w, bounds, L2)
    return float(theta[0]), {name: float(theta[i + 1]) for i, name in enumerate(names)}


def platt(z: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Platt scaling: ``a, b`` with ``sigmoid(a * z + b)`` calibrated on (z, y); ``a > 0``."""
    b, a = logistic(
        z[:, None], y, w, [(None, None), (1e-3, None)], 0.0, start=np.asarray([0.0, 1.0])
    )
    return float(a), float(b)


_RANKED: dict[tuple[int, str, int], list[Ranked]] = {}


def ranked(q: Query, mode: Mode, model: JudgeModel) -> list[Ranked]:
    """Every candidate of ``q`` in fused order with the judge's probability (memoised: the
    threshold sweep only filters this list, exactly as ``fuse`` would)."""
    key = (id(q), mode, id(model))
    if key not in _RANKED:
        cfg = RankingConfig(use_floor=False, top_n=10_000, judge=model)
        _RANKED[key], _ = fuse(rows_of(q, mode), cfg, lexical_only=mode == "lexical")
    return _RANKED[key]


def judged(q: Query, mode: Mode, model: JudgeModel, threshold: float) -> list[Ranked]:
    """What recall keeps at ``threshold``: the best by probability among the candidates the
    judge reads (the first ``judge_depth`` by fused rank), exactly as ``fuse`` does."""
    key = (id(q), mode, id(model), -1)
    if key not in _BY_P:
        depth = RankingConfig().judge_depth
        _BY_P[key] = sorted(
            ranked(q, mode, model)[:depth],
            key=lambda r: (-r.probability, -r.fused, str(r.scored.id)),
        )
    return [r for r in _BY_P[key] if r.probability >= threshold][:TOP_N]


_BY_P: dict[tuple[int, str, int, int], list[Ranked]] = {}


def _judged_at(q: Query, *, mode: Mode, model: JudgeModel, threshold: float) -> list[Ranked]:
    return judged(q, mode, model, threshold)


def old_floor(q: Query, mode: Mode) -> list[Ranked]:
    """The fixed floor this judge replaces: cosine >= 0.55, or >= 0.35 with 60 % of the query's
    words; without vectors, 50 % of the words. Same fusion and top-N."""
    cfg = RankingConfig(use_floor=False, top_n=10_000)
    ranked, _ = fuse(rows_of(q, mode), cfg, lexical_only=mode == "lexical")

    def passes(s: Scored) -> bool:
        coverage = s.coverage or 0.0
        if mode == "lexical":
            return coverage >= 0.5
        sim = s.sim if s.sim is not None else -1.0
        return sim >= 0.55 or (sim >= 0.35 and coverage >= 0.6)

    return [r for r in ranked if passes(r.scored)][:TOP_N]


def metrics(queries: Sequence[Query], select: Callable[[Query], list[Ranked]]) -> dict[str, Any]:
    """Per dataset: hit@3 / hit@8 (right memory among the first 3 / 8 kept, by fused rank),
    reach (any relevant memory kept), abstain (nothing kept for a negative)."""
    out: dict[str, Any] = {}
    for name in sorted({q.dataset for q in queries}):
        pos = [q for q in queries if q.dataset == name and q.kind == "positive"]
        neg = [q for q in queries if q.dataset == name and q.kind == "negative"]
        h3 = h8 = 0
        for q in pos:
            ids = [r.scored.id for r in select(q)]
            h3 += bool(q.relevant & set(ids[:3]))
            h8 += bool(q.relevant & set(ids[:8]))
        abstain = sum(not select(q) for q in neg)
        out[name] = {
            "hit@3": round(h3 / max(len(pos), 1), 3),
            "hit@8": round(h8 / max(len(pos), 1), 3),
            "reach": round(h8 / max(len(pos), 1), 3),
            "abstain": round(abstain / max(len(neg), 1), 3),
            "positives": len(pos),
            "negatives": len(neg),
        }
    return out


def shortfall(m: dict[str, Any]) -> tuple[float, float]:
    short = 0.0
    total = 0.0
    for ds, metric, goal in GOALS:
        if ds in m:
            short += min(0.0, m[ds][metric] - goal)
            total += m[ds][metric]
    return short, total


def choose_threshold(
    queries: Sequence[Query], mode: Mode, model: JudgeModel
) -> tuple[float, list[dict[str, Any]]]:
    curve = []
    best: tuple[tuple[float, float], float] | None = None
    for t in np.round(np.arange(0.01, 0.96, 0.01), 3):
        m = metrics(queries, partial(_judged_at, mode=mode, model=model, threshold=float(t)))
        curve.append({"threshold": float(t), **m})
        key = shortfall(m)
        if best is None or key > best[0]:
            best = (key, float(t))
    assert best is not None
    return best[1], curve


def calibration(queries: Sequence[Query], mode: Mode, model: JudgeModel) -> dict[str, float]:
    """Expected calibration error (10 bins) and Brier score over the judged candidates."""
    x, y, _ = design(queries, mode)
    names = feature_names(mode)
    p = model.params(mode)
    z = p.intercept + x @ np.asarray([p.weights.get(n, 0.0) for n in names])
    prob = 1.0 / (1.0 + np.exp(-z))
    bins = np.minimum((prob * 10).astype(int), 9)
    ece = sum(
        abs(prob[bins == b].mean() - y[bins == b].mean()) * (bins == b).sum()
        for b in range(10)
        if (bins == b).any()
    ) / max(len(y), 1)
    return {"ece": round(float(ece), 4), "brier": round(float(np.mean((prob - y) ** 2)), 4)}


def write_params(model: JudgeModel, path: Path = PARAMS_FILE) -> None:
    def block(p: JudgeParams) -> str:
        weights = ", ".join(f'"{k}": {v:.6g}' for k, v in p.weights.items())
        return (
            f'{{"intercept": {p.intercept:.6g}, "weights": {{{weights}}}, '
            f'"threshold": {p.threshold:.6g}}}'
        )

    path.write_text(
        '"""Fitted relevance-judge parameters. Written by ``python -m bench.judge_fit``; '
        'do not edit."""\n\n'
        "from __future__ import annotations\n\n"
        "from typing import Any\n\n"
        "# fmt: off\n"
        "PARAMS: dict[str, Any] = {\n"
        f'    "hybrid": {block(model.hybrid)},\n'
        f'    "lexical": {block(model.lexical)},\n'
        "}\n"
        "# fmt: on\n",
        encoding="utf-8",
    )


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = report["hybrid"]["dev_curve"]
    names = [
        n
        for n in ("lessons", "workplace", "lessonfacts", "facts1k", "facts10k", "locomo")
        if n in curve[0]
    ]
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 4))
    for ax, name in zip(np.atleast_1d(axes), names, strict=True):
        for split, style in (("dev_curve", "-"), ("test_curve", "--")):
            pts = report["hybrid"][split]
            ax.plot(
                [p[name]["abstain"] for p in pts],
                [p[name]["reach"] for p in pts],
                style,
                label=f"judge ({split.split('_')[0]})",
            )
        chosen = report["hybrid"]["test"][name]
        old = report["hybrid"]["old_floor_test"][name]
        ax.scatter([chosen["abstain"]], [chosen["reach"]], c="red", zorder=3, label="chosen (test)")
        ax.scatter(
            [old["abstain"]],
            [old["reach"]],
            c="black",
            marker="x",
            zorder=3,
            label="old floor (test)",
        )
        ax.set_xlabel("abstain on negatives")
        ax.set_ylabel("right memory recalled (hit@8 / evidence reach)")
        ax.set_title(name)
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def run(signals: str, report_only: bool, keep: Sequence[str] = ()) -> dict[str, Any]:
    sets = load(signals)
    queries = [q for qs in sets.values() for q in qs]
    dev = [q for q in queries if q.split == "dev"]
    test = [q for q in queries if q.split == "test"]
    report: dict[str, Any] = {}
    if report_only:
        model = default_judge()
    else:
        fitted: dict[str, JudgeParams] = {}
        shipped = default_judge()
        for mode in ("hybrid", "lexical"):
            if mode in keep:
                fitted[mode] = shipped.params(mode)  # type: ignore[arg-type]
                continue
            x, y, w = design(dev, mode)  # type: ignore[arg-type]
            intercept, weights = fit(x, y, w, feature_names(mode))  # type: ignore[arg-type]
            # Negatives were weighed up to shape the decision; recalibrate the scale on the
            # natural mix so the probability means what it says (a > 0 keeps the order).
            xn, yn, wn = design(dev, mode, negative_weight=1.0)  # type: ignore[arg-type]
            names = feature_names(mode)  # type: ignore[arg-type]
            z = intercept + xn @ np.asarray([weights[n] for n in names])
            a, b = platt(z, yn, wn)
            fitted[mode] = JudgeParams(
                a * intercept + b, {n: a * v for n, v in weights.items()}, 0.5
            )
        model = JudgeModel(fitted["hybrid"], fitted["lexical"])
        thresholds = {}
        for mode in ("hybrid", "lexical"):
            if mode in keep:
                thresholds[mode] = fitted[mode].threshold
                continue
            t, _ = choose_threshold(dev, mode, model)  # type: ignore[arg-type]
            thresholds[mode] = t
        model = JudgeModel(
            JudgeParams(model.hybrid.intercept, model.hybrid.weights, thresholds["hybrid"]),
            JudgeParams(model.lexical.intercept, model.lexical.weights, thresholds["lexical"]),
        )
        write_params(model)
    for mode in ("hybrid", "lexical"):
        m: Mode = mode  # type: ignore[assignment]
        t = model.params(m).threshold
        _, dev_curve = choose_threshold(dev, m, model)
        _, test_curve = choose_threshold(test, m, model)
        report[mode] = {
            "intercept": model.params(m).intercept,
            "weights": dict(model.params(m).weights),
            "threshold": t,
            "dev": metrics(dev, partial(_judged_at, mode=m, model=model, threshold=t)),
            "test": metrics(test, partial(_judged_at, mode=m, model=model, threshold=t)),
            "old_floor_dev": metrics(dev, partial(old_floor, mode=m)),
            "old_floor_test": metrics(test, partial(old_floor, mode=m)),
            "calibration_test": calibration(test, m, model),
            "dev_curve": dev_curve,
            "test_curve": test_curve,
        }
        print(f"[{mode}] threshold={t} weights={report[mode]['weights']}")
        for split in ("dev", "test", "old_floor_dev", "old_floor_test"):
            print(
                f"  {split:15} "
                + json.dumps(
                    {
                        k: {kk: vv for kk, vv in v.items() if kk in ("hit@3", "hit@8", "abstain")}
                        for k, v in report[mode][split].items()
                    }
                )
            )
        print(f"  calibration(test) {report[mode]['calibration_test']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "judge.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    try:
        plot(report, RESULTS / "judge.png")
    except ImportError:
        print("matplotlib not installed (pip install -e '.[bench]'): no plot")
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--signals", default="signals.pkl")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument(
        "--keep",
        action="append",
        default=[],
        choices=("hybrid", "lexical"),
        help="keep the shipped parameters of this mode (refit the other)",
    )
    args = parser.parse_args()
    run(args.signals, args.report_only, args.keep)
