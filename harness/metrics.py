"""Prometheus metrics of this process (``docs/operations.md``): recall by stage and outcome,
writes by outcome, guard refusals, the relevance judge, the connection pools, ingest, memos.

One registry of this package's own (:data:`REGISTRY`), served as Prometheus' text format by
the HTTP server's and the console's ``/metrics`` (:func:`exposition`). Labels are
low-cardinality by construction: stages, outcomes, rule families, status codes; never a
tenant, user, id or content. Recording is a counter or histogram update on metric children
bound once at import (no per-call label lookup or allocation on the hot path).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = [
    "CONTENT_TYPE",
    "RECALL_STAGES",
    "REGISTRY",
    "Pool",
    "exposition",
    "ingest_answered",
    "judge_observed",
    "memo_event",
    "recall_outcome",
    "recall_stage",
    "reembedded",
    "watch_pool",
    "write_outcome",
]

#: The content type of :func:`exposition` (Prometheus text format 0.0.4).
CONTENT_TYPE = CONTENT_TYPE_LATEST

REGISTRY = CollectorRegistry(auto_describe=True)

#: Recall's stages, in order: the query's vector, the SQL round trips (the judge's time taken
#: out), the relevance judge, and assembly (resolve, budget, render).
RECALL_STAGES = ("embed", "sql", "judge", "assemble")

# Buckets from 0.1 ms: a cached query vector or a small assembly takes well under a millisecond.
_BUCKETS: tuple[float, ...] = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025)
_BUCKETS += (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_stage = Histogram(
    "harness_recall_stage_seconds",
    "Time of one recall stage (embed, sql, judge, assemble)",
    ["stage"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)
_STAGES = {name: _stage.labels(name) for name in RECALL_STAGES}

_recalls = Counter(
    "harness_recalls",
    "Recalls by outcome: items placed, abstained (nothing relevant), degraded (store failed)",
    ["outcome"],
    registry=REGISTRY,
)
_RECALLS = {name: _recalls.labels(name) for name in ("items", "abstained", "degraded")}

_writes = Counter(
    "harness_writes",
    "Memories written by outcome: stored, rejected (guard), pending_approval, conflict",
    ["outcome"],
    registry=REGISTRY,
)
_WRITES = {
    name: _writes.labels(name) for name in ("stored", "rejected", "pending_approval", "conflict")
}

_refusals = Counter(
    "harness_guard_refusals",
    "Candidates the write guard refused, by rule family (the rule id's first part)",
    ["family"],
    registry=REGISTRY,
)

_judged = Counter(
    "harness_judge_candidates",
    "Candidates the relevance judge scored, by verdict (passed or failed its threshold)",
    ["verdict"],
    registry=REGISTRY,
)
_PASSED, _FAILED = _judged.labels("passed"), _judged.labels("failed")
_threshold = Gauge(
    "harness_judge_threshold",
    "The relevance judge's threshold (probability) of the last judged recall",
    registry=REGISTRY,
)

_ingest = Counter(
    "harness_ingest_responses",
    "Ingest endpoint answers by HTTP status code",
    ["code"],
    registry=REGISTRY,
)

_memos = Counter(
    "harness_memos",
    "MCP RecallSet memos by event: opened, and uses of one expired or not found",
    ["event"],
    registry=REGISTRY,
)

_reembedded = Counter(
    "harness_reembedded_memories",
    "Memories given new vectors by reembed",
    registry=REGISTRY,
)


def recall_stage(stage: str, seconds: float) -> None:
    """Record one stage's time (``stage`` one of :data:`RECALL_STAGES`)."""
    _STAGES[stage].observe(seconds)


def recall_outcome(outcome: str) -> None:
    """Count a recall as ``items``, ``abstained`` or ``degraded``."""
    _RECALLS[outcome].inc()


def write_outcome(outcome: str, n: int = 1, *, rule: str | None = None) -> None:
    """Count ``n`` writes as ``stored``, ``rejected`` (``rule``: the guard's), ``pending_approval``
    or ``conflict``."""
    _WRITES[outcome].inc(n)
    if rule is not None:
        _refusals.labels(rule.split(".", 1)[0].split(":", 1)[0]).inc(n)


def judge_observed(passed: int, failed: int, threshold: float | None) -> None:
    """The judge's verdicts of one recall, and the threshold it applied."""
    if passed:
        _PASSED.inc(passed)
    if failed:
        _FAILED.inc(failed)
    if threshold is not None:
        _threshold.set(threshold)


def ingest_answered(code: int) -> None:
    """Count an ingest answer by status code."""
    _ingest.labels(str(code)).inc()


def memo_event(event: str) -> None:
    """Count a memo ``opened``, or a use of one ``expired`` or ``not_found``."""
    _memos.labels(event).inc()


def reembedded(n: int) -> None:
    """Count memories re-embedded."""
    _reembedded.inc(n)


class Pool(Protocol):
    """What a connection pool shows (SQLAlchemy's ``QueuePool``)."""

    def size(self) -> int: ...

    def checkedout(self) -> int: ...


class _Pools(Collector):
    """Connections of every watched pool, read at scrape time (no cost between scrapes)."""

    def __init__(self) -> None:
        self._pools: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()

    def add(self, pool: Pool) -> None:
        with self._lock:
            self._pools.add(pool)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            pools = list(self._pools)
        family = GaugeMetricFamily(
            "harness_pool_connections",
            "Pooled database connections: size (the pool's) and in_use (checked out)",
            labels=["state"],
        )
        family.add_metric(["size"], sum(p.size() for p in pools))
        family.add_metric(["in_use"], sum(p.checkedout() for p in pools))
        yield family

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return []


_POOLS = _Pools()
REGISTRY.register(_POOLS)


def watch_pool(pool: object) -> None:
    """Count ``pool``'s connections in ``harness_pool_connections`` while it lives (a pool
    without ``size``/``checkedout``, e.g. ``NullPool``, is not counted)."""
    if callable(getattr(pool, "size", None)) and callable(getattr(pool, "checkedout", None)):
        _POOLS.add(pool)  # type: ignore[arg-type]


def exposition() -> bytes:
    """Every metric in Prometheus' text format (the body of ``/metrics``)."""
    return generate_latest(REGISTRY)
