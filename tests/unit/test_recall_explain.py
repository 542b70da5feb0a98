"""The account recall gives of itself: ``RecallResult.explain`` and ``RecallResult.empty``,
exactly (operators read it, and ``harness-memory`` prints it)."""

from __future__ import annotations

import uuid

from harness.memory.domain.recall import RecallResult, TraceEntry


def test_empty_result_of_a_healthy_store() -> None:
    r = RecallResult.empty()
    assert (r.items, r.omitted, r.text, r.trace) == ([], [], "", [])
    assert r.complete is True and r.degraded is False
    assert r.explain() == "no candidates"


def test_degraded_result_says_why_and_is_incomplete() -> None:
    r = RecallResult.empty(degraded=True, reason="memory unavailable: connection refused")
    assert r.complete is False and r.degraded is True
    assert (r.items, r.omitted, r.text) == ([], [], "")
    assert r.trace == [
        TraceEntry(None, "dropped", "store", "memory unavailable: connection refused")
    ]
    assert r.explain() == (
        "dropped store      -  memory unavailable: connection refused\n"
        "MEMORY UNAVAILABLE: no memory could be read; the context is empty"
    )


def test_degraded_without_reason_still_says_memory_was_unavailable() -> None:
    r = RecallResult.empty(degraded=True)
    assert r.trace == []
    assert r.explain() == "no candidates (memory unavailable; recall degraded)"


def test_explain_has_one_aligned_line_per_trace_entry() -> None:
    kept, dropped = uuid.UUID(int=1), uuid.UUID(int=2)
    r = RecallResult(
        items=[],
        omitted=[],
        text="",
        complete=True,
        trace=[
            TraceEntry(None, "kept", "strategy", "vectors: exact scan"),
            TraceEntry(kept, "kept", "assembly", "user fact, 40 chars"),
            TraceEntry(dropped, "dropped", "budget", "user fact, 90 chars"),
        ],
    )
    assert r.explain().split("\n") == [
        "kept    strategy   -  vectors: exact scan",
        f"kept    assembly   {kept}  user fact, 40 chars",
        f"dropped budget     {dropped}  user fact, 90 chars",
    ]
