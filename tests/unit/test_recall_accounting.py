"""What assembly reports about what it left out: conflict sizes, the constraints named when
recall is incomplete, and the typed error of an empty key group (SPEC section 5, steps 5-6)."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime

import pytest

from harness.errors import IncompleteRecall
from harness.memory.domain.recall import (
    Candidate,
    TraceEntry,
    assemble,
    precedence_winner,
    render_item,
)
from harness.memory.domain.types import Kind, Memory, Scope, Source, Status

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def memory(n: int, scope: Scope, kind: Kind, content: str, key: str | None = None) -> Memory:
    return Memory(
        id=uuid.UUID(int=n),
        tenant="t",
        scope=scope,
        scope_id="" if scope is Scope.PLATFORM else "x",
        kind=kind,
        key=key,
        content=content,
        context=None,
        priority=0,
        status=Status.ACTIVE,
        source=Source(),
        created_at=T0,
        expires_at=None,
        supersedes=None,
        superseded_by=None,
        fingerprint=f"f{n}",
    )


def test_empty_key_group_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"^empty key group$"):
        precedence_winner([])


def test_conflict_omission_records_the_losers_rendered_size() -> None:
    winner = memory(1, Scope.SESSION, Kind.PREFERENCE, "short", key="tone")
    loser = memory(2, Scope.USER, Kind.PREFERENCE, "a much longer losing preference", key="tone")
    r = assemble(
        [Candidate(winner), Candidate(loser)],
        budget_chars=1000,
        max_items=10,
        max_item_chars=1000,
    )
    [omission] = r.omitted
    assert (omission.memory_id, omission.reason, omission.winner_id) == (
        loser.id,
        "conflict",
        winner.id,
    )
    assert omission.chars == len(render_item(loser)) > 0
    assert r.trace[0] == TraceEntry(
        loser.id, "dropped", "precedence", f"key 'tone': user preference loses to {winner.id}"
    )


@pytest.mark.parametrize("max_items", [0, 1, 2, 5])
def test_max_items_places_exactly_that_many_when_all_fit(max_items: int) -> None:
    cands = [Candidate(memory(n, Scope.USER, Kind.FACT, f"fact {n}")) for n in range(1, 5)]
    r = assemble(cands, budget_chars=10_000, max_items=max_items, max_item_chars=1000)
    assert len(r.items) == min(max_items, len(cands))
    assert [o.reason for o in r.omitted] == ["max_items"] * (len(cands) - len(r.items))


def test_incomplete_recall_names_exactly_the_constraints_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    placed = memory(1, Scope.PLATFORM, Kind.CONSTRAINT, "Cite sources")
    too_long = memory(2, Scope.PLATFORM, Kind.CONSTRAINT, "Never " + "x" * 300)
    long_fact = memory(3, Scope.USER, Kind.FACT, "fact " + "y" * 300)
    cands = [Candidate(placed), Candidate(too_long), Candidate(long_fact)]
    limits = {"budget_chars": 5000, "max_items": 10, "max_item_chars": 200}
    # Logged at debug per recall; the retriever warns once per caller and interval.
    with caplog.at_level(logging.DEBUG, logger="harness.memory.domain.recall"):
        r = assemble(cands, **limits)
    assert r.complete is False
    assert [i.memory.id for i in r.items] == [placed.id]
    assert caplog.messages == [
        f"recall incomplete: 1 constraint(s) could not be placed: {too_long.id}"
    ]
    with pytest.raises(IncompleteRecall) as err:
        assemble(cands, strict=True, **limits)
    assert str(err.value) == f"constraints could not be placed: {[too_long.id]}"


def test_max_item_chars_is_inclusive_and_longer_items_are_left_out_whole() -> None:
    fits = memory(1, Scope.USER, Kind.FACT, "exactly at the limit")
    limit = len(render_item(fits))
    longer = memory(2, Scope.USER, Kind.FACT, "exactly at the limit!")
    r = assemble(
        [Candidate(fits), Candidate(longer)],
        budget_chars=10_000,
        max_items=10,
        max_item_chars=limit,
    )
    assert [i.memory.id for i in r.items] == [fits.id]
    [omission] = r.omitted
    assert (omission.memory_id, omission.reason, omission.chars) == (
        longer.id,
        "item_too_long",
        limit + 1,
    )


def test_budget_counts_the_separator_between_items() -> None:
    first = memory(1, Scope.SESSION, Kind.FACT, "first")
    second = memory(2, Scope.USER, Kind.FACT, "second")
    both = len(render_item(first)) + len(render_item(second))
    tight = assemble(
        [Candidate(first), Candidate(second)], budget_chars=both, max_items=10, max_item_chars=1000
    )
    assert [i.memory.id for i in tight.items] == [first.id]
    assert [(o.memory_id, o.reason) for o in tight.omitted] == [(second.id, "budget")]
    roomy = assemble(
        [Candidate(first), Candidate(second)],
        budget_chars=both + 1,
        max_items=10,
        max_item_chars=1000,
    )
    assert len(roomy.text) == both + 1 and len(roomy.items) == 2
