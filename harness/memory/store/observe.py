"""What the store's methods tell the process's metrics and traces (:mod:`harness.metrics`,
:mod:`harness.tracing`): recall's stages and the judge's verdicts, writes by outcome."""

from __future__ import annotations

from harness import metrics, tracing
from harness.memory.domain.types import Memory, RecallRequest, Status
from harness.memory.store.base import StoreBase
from harness.memory.store.ops.retrieval import Fetched

__all__ = ["count_written", "observe_recall"]


def observe_recall(
    store: StoreBase,
    req: RecallRequest,
    fetched: Fetched,
    span: tracing.Span,
    marks: tuple[int, int, int, int],
) -> None:
    """Recall's stages into ``harness_recall_stage_seconds`` and as the span's children."""
    t0, t1, t2, t3 = marks
    j0, j1 = fetched.judged_ns
    if not t1 <= j0 <= j1 <= t2:  # a clock step: the judge's time is not inside the read
        j0 = j1 = t1
    metrics.recall_stage("embed", (t1 - t0) / 1e9)
    metrics.recall_stage("sql", (t2 - t1 - (j1 - j0)) / 1e9)
    metrics.recall_stage("judge", (j1 - j0) / 1e9)
    metrics.recall_stage("assemble", (t3 - t2) / 1e9)
    passed, failed = fetched.verdicts()
    ranking = store.retriever.ranking
    bar = (
        ranking.bar(lexical_only=fetched.lexical_only, override=req.relevance_threshold)
        if ranking.use_floor
        else None
    )
    metrics.judge_observed(passed, failed, bar)
    if span.is_recording():
        lexical = fetched.lexical_only
        tracing.stage(span, "harness.recall.embed", t0, t1, {"harness.vector": not lexical})
        tracing.stage(span, "harness.recall.sql", t1, j0)
        tracing.stage(span, "harness.recall.judge", j0, j1, {"harness.passed": passed})
        tracing.stage(span, "harness.recall.sql", j1, t2)
        tracing.stage(span, "harness.recall.assemble", t2, t3)


def count_written(written: list[Memory]) -> None:
    """Count written memories as stored or pending approval (``harness_writes``)."""
    pending = sum(1 for m in written if m.status is Status.PENDING_APPROVAL)
    metrics.write_outcome("pending_approval", pending)
    metrics.write_outcome("stored", len(written) - pending)
