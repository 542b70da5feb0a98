"""Assembly's full account of one recall, entry by entry (SPEC section 5, steps 3-6).

Pure. One scenario that meets every limit (a conflict, an item too long, ``max_items``, the
budget) with its exact items, omissions and trace; the caller's trace kept in front; the same
memory offered twice counted once; losers reported in the order of the rule; the log line and
the strict error of an incomplete recall. Written to kill the assembly mutants ``make mutate``
had not reached before (docs/mutation.md).
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from harness.errors import IncompleteRecall
from harness.memory.domain.recall import (
    Candidate,
    Omission,
    RecalledItem,
    TraceEntry,
    assemble,
    order_key,
    render_item,
)
from harness.memory.domain.types import Kind, Memory, Origin, Scope, Source, Status

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def memory(
    n: int,
    scope: Scope,
    kind: Kind,
    content: str,
    key: str | None = None,
    priority: int = 0,
    age_days: int = 0,
) -> Memory:
    return Memory(
        id=uuid.UUID(int=n),
        tenant="t",
        scope=scope,
        scope_id="" if scope is Scope.PLATFORM else "x",
        kind=kind,
        key=key,
        content=content,
        context=None,
        priority=priority,
        status=Status.ACTIVE,
        source=Source(origin=Origin.ADMIN),
        created_at=T0 - timedelta(days=age_days),
        expires_at=None,
        supersedes=None,
        superseded_by=None,
        fingerprint=f"f{n}",
    )


def test_one_recall_accounted_entry_by_entry() -> None:
    rule = memory(1, Scope.PLATFORM, Kind.CONSTRAINT, "never share keys", priority=1)
    mine = memory(2, Scope.SESSION, Kind.PREFERENCE, "terse", key="tone")
    theirs = memory(3, Scope.USER, Kind.PREFERENCE, "verbose", key="tone")
    long = memory(4, Scope.USER, Kind.FACT, "x" * 200)
    fact = memory(5, Scope.WORKFLOW, Kind.FACT, "uses tabs")
    big = memory(6, Scope.USER, Kind.LESSON, "y" * 60)
    last = memory(7, Scope.USER, Kind.DECISION, "ok", age_days=1)
    over = memory(8, Scope.PLATFORM, Kind.DECISION, "over the item cap", age_days=2)
    given = TraceEntry(None, "dropped", "relevance", "filtered before assembly")
    cands = [
        Candidate(rule),
        Candidate(mine, 0.0, "always"),
        Candidate(theirs),
        Candidate(long, 0.5, "relevant"),
        Candidate(fact, 0.0, "narrow"),
        Candidate(big, 0.4, "relevant"),
        Candidate(last, 0.3, "relevant"),
        Candidate(over, 0.2, "relevant"),
    ]
    text = {m.id: render_item(m) for m in (rule, mine, theirs, long, fact, big, last, over)}
    n = {k: len(v) for k, v in text.items()}
    budget = n[rule.id] + 1 + n[mine.id] + 1 + n[fact.id] + 1 + n[last.id]
    r = assemble(
        reversed(cands),
        budget_chars=budget,
        max_items=5,
        max_item_chars=100,
        trace=[given],
    )
    assert r.items == [
        RecalledItem(rule, text[rule.id], 0.0),
        RecalledItem(mine, text[mine.id], 0.0),
        RecalledItem(fact, text[fact.id], 0.0),
        RecalledItem(last, text[last.id], 0.3),
    ]
    assert r.text == "\n".join(text[m.id] for m in (rule, mine, fact, last))
    assert len(r.text) == budget
    assert r.complete
    assert r.omitted == [
        Omission(theirs.id, "conflict", n[theirs.id], mine.id),
        Omission(long.id, "item_too_long", n[long.id]),
        Omission(big.id, "budget", n[big.id]),
        Omission(over.id, "max_items", n[over.id]),
    ]
    assert r.trace == [
        given,
        TraceEntry(
            theirs.id, "dropped", "precedence", f"key 'tone': user preference loses to {mine.id}"
        ),
        TraceEntry(
            rule.id, "kept", "assembly", f"platform constraint (always), {n[rule.id]} chars"
        ),
        TraceEntry(mine.id, "kept", "assembly", f"session preference (always), {n[mine.id]} chars"),
        TraceEntry(fact.id, "kept", "assembly", f"workflow fact (narrow), {n[fact.id]} chars"),
        TraceEntry(long.id, "dropped", "item_too_long", f"user fact, {n[long.id]} chars"),
        TraceEntry(big.id, "dropped", "budget", f"user lesson, {n[big.id]} chars"),
        TraceEntry(last.id, "kept", "assembly", f"user decision (relevant), {n[last.id]} chars"),
        TraceEntry(over.id, "dropped", "max_items", f"platform decision, {n[over.id]} chars"),
    ]


def test_the_same_memory_offered_twice_counts_once() -> None:
    a = memory(1, Scope.USER, Kind.FACT, "a")
    b = memory(2, Scope.USER, Kind.FACT, "b")
    r = assemble(
        [Candidate(a, 0.1), Candidate(b, 0.2), Candidate(a, 0.9)],
        budget_chars=1000,
        max_items=10,
        max_item_chars=1000,
    )
    assert r.items == [RecalledItem(a, render_item(a), 0.9), RecalledItem(b, render_item(b), 0.2)]
    assert r.omitted == []


def test_losers_are_reported_in_the_order_of_the_rule() -> None:
    winners = [
        memory(1, Scope.SESSION, Kind.PREFERENCE, "w1", key="k1"),
        memory(2, Scope.SESSION, Kind.PREFERENCE, "w2", key="k2"),
        memory(3, Scope.SESSION, Kind.PREFERENCE, "w3", key="k3"),
    ]
    losers = [
        memory(11, Scope.USER, Kind.PREFERENCE, "l1", key="k1", priority=0),
        memory(12, Scope.USER, Kind.PREFERENCE, "l2", key="k2", priority=5),
        memory(13, Scope.PLATFORM, Kind.PREFERENCE, "l3", key="k3", priority=2),
    ]
    r = assemble(
        [Candidate(m) for m in (*winners, *losers)],
        budget_chars=1000,
        max_items=10,
        max_item_chars=1000,
    )
    expected = sorted((Candidate(m) for m in losers), key=order_key)
    assert [o.memory_id for o in r.omitted] == [c.memory.id for c in expected]
    assert [o.memory_id for o in r.omitted] == [losers[1].id, losers[2].id, losers[0].id]


def test_an_incomplete_recall_logs_the_missing_constraints_and_strict_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Only constraints that could not be placed are named; a constraint that lost its key
    group to a broader one is not missing (it does not apply)."""
    small = memory(1, Scope.PLATFORM, Kind.CONSTRAINT, "fits", key="k")
    huge = memory(2, Scope.USER, Kind.CONSTRAINT, "z" * 300)
    loser = memory(3, Scope.USER, Kind.CONSTRAINT, "overridden", key="k")
    huge2 = memory(4, Scope.USER, Kind.CONSTRAINT, "w" * 300)
    pref = memory(5, Scope.USER, Kind.PREFERENCE, "p" * 300)
    cands = [Candidate(m) for m in (small, huge, loser, huge2, pref)]
    limits = {"budget_chars": 1000, "max_items": 10, "max_item_chars": 100}
    with caplog.at_level(logging.DEBUG, logger="harness.memory.domain.recall"):
        r = assemble(cands, **limits)  # type: ignore[arg-type]
    assert not r.complete
    assert [o.memory_id for o in r.omitted] == [loser.id, huge.id, huge2.id, pref.id]
    assert r.explain().splitlines()[-1] == (
        "INCOMPLETE: a constraint could not be placed in the context"
    )
    assert [rec.getMessage() for rec in caplog.records] == [
        f"recall incomplete: 2 constraint(s) could not be placed: {huge.id}, {huge2.id}"
    ]
    with pytest.raises(IncompleteRecall) as caught:
        assemble(cands, strict=True, **limits)  # type: ignore[arg-type]
    assert str(caught.value) == f"constraints could not be placed: [{huge.id!r}, {huge2.id!r}]"


def test_full_ties_are_broken_by_id_whatever_the_input_order() -> None:
    same = [memory(n, Scope.USER, Kind.FACT, f"fact {n}") for n in (7, 3, 5)]
    for ordering in (same, same[::-1]):
        r = assemble(
            [Candidate(m, 0.5) for m in ordering],
            budget_chars=1000,
            max_items=10,
            max_item_chars=1000,
        )
        assert [i.memory.id for i in r.items] == [uuid.UUID(int=n) for n in (3, 5, 7)]


def test_a_complete_recall_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    pref = memory(3, Scope.USER, Kind.PREFERENCE, "p" * 300)
    with caplog.at_level(logging.DEBUG, logger="harness.memory.domain.recall"):
        r = assemble([Candidate(pref)], budget_chars=1000, max_items=10, max_item_chars=100)
    assert r.complete
    assert caplog.records == []
