"""SPEC section 5, step 4, as a property of the pure assembly: constraints first (broadest
first), then priority, scope proximity (narrowest first), relevance, recency, id."""

from __future__ import annotations

import functools
import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from harness.memory.domain.recall import Candidate, assemble, order_key
from harness.memory.domain.types import SCOPE_BREADTH, Kind, Memory, Scope, Source, Status

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCOPE_IDS = {Scope.SESSION: "s", Scope.WORKFLOW: "w", Scope.USER: "u", Scope.PLATFORM: ""}
#: Few distinct values, so every rule is often the one that decides.
RELEVANCES = [0.0, 0.25, 0.5, 0.875]


def memory(n: int, scope: Scope, kind: Kind, priority: int, minute: int) -> Memory:
    return Memory(
        # ids whose string order differs from their numeric order
        id=uuid.UUID(int=(n * 0x9E3779B97F4A7C15) % (1 << 128)),
        tenant="t",
        scope=scope,
        scope_id=SCOPE_IDS[scope],
        kind=kind,
        key=None,
        content=f"item {n}",
        context=None,
        priority=priority,
        status=Status.ACTIVE,
        source=Source(),
        created_at=T0 + timedelta(minutes=minute),
        expires_at=None,
        supersedes=None,
        superseded_by=None,
        fingerprint=f"f{n}",
    )


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    size = draw(st.integers(0, 16))
    return [
        Candidate(
            memory(
                n,
                draw(st.sampled_from(list(Scope))),
                draw(st.sampled_from(list(Kind))),
                draw(st.integers(-1, 1)),
                draw(st.integers(0, 2)),
            ),
            draw(st.sampled_from(RELEVANCES)),
        )
        for n in range(size)
    ]


def compare(a: Candidate, b: Candidate) -> int:
    """SPEC section 5 step 4, rule by rule: negative when ``a`` comes before ``b``."""
    ma, mb = a.memory, b.memory
    a_con, b_con = ma.kind is Kind.CONSTRAINT, mb.kind is Kind.CONSTRAINT
    if a_con != b_con:
        return -1 if a_con else 1
    breadth_a, breadth_b = SCOPE_BREADTH[ma.scope], SCOPE_BREADTH[mb.scope]
    if a_con and breadth_a != breadth_b:  # constraints: broadest first
        return -1 if breadth_a > breadth_b else 1
    if ma.priority != mb.priority:  # higher priority first
        return -1 if ma.priority > mb.priority else 1
    if breadth_a != breadth_b:  # proximity: narrowest first
        return -1 if breadth_a < breadth_b else 1
    if a.relevance != b.relevance:  # more relevant first
        return -1 if a.relevance > b.relevance else 1
    if ma.created_at != mb.created_at:  # newer first
        return -1 if ma.created_at > mb.created_at else 1
    return -1 if str(ma.id) < str(mb.id) else (1 if str(ma.id) > str(mb.id) else 0)


def spec_order(cands: list[Candidate]) -> list[uuid.UUID]:
    return [c.memory.id for c in sorted(cands, key=functools.cmp_to_key(compare))]


ROOMY = {"budget_chars": 1_000_000, "max_items": 1000, "max_item_chars": 10_000}


@given(candidates())
def test_assembly_orders_by_the_spec_rule(cands: list[Candidate]) -> None:
    result = assemble(cands, **ROOMY)
    assert [i.memory.id for i in result.items] == spec_order(cands)


@given(candidates())
def test_order_key_is_the_spec_rule(cands: list[Candidate]) -> None:
    assert [c.memory.id for c in sorted(cands, key=order_key)] == spec_order(cands)


@given(candidates(), st.integers(0, 400), st.integers(0, 16))
def test_limits_keep_the_spec_order(cands: list[Candidate], budget: int, max_items: int) -> None:
    """Whatever the limits leave out, what stays is in the spec's order."""
    result = assemble(cands, budget_chars=budget, max_items=max_items, max_item_chars=10_000)
    placed = [i.memory.id for i in result.items]
    assert placed == [i for i in spec_order(cands) if i in set(placed)]


def test_non_constraints_narrowest_scope_first() -> None:
    """The rule the broadest-first mutant breaks, in one example: same priority, relevance
    and age, a session fact precedes a workflow lesson, a user fact, a platform fact."""
    cands = [
        Candidate(memory(n, scope, kind, 0, 0), 0.5)
        for n, (scope, kind) in enumerate(
            [
                (Scope.PLATFORM, Kind.FACT),
                (Scope.USER, Kind.FACT),
                (Scope.SESSION, Kind.FACT),
                (Scope.WORKFLOW, Kind.LESSON),
            ]
        )
    ]
    got = [i.memory.scope for i in assemble(cands, **ROOMY).items]
    assert got == [Scope.SESSION, Scope.WORKFLOW, Scope.USER, Scope.PLATFORM]


def test_priority_outranks_proximity_and_relevance_outranks_recency() -> None:
    near_low = Candidate(memory(1, Scope.SESSION, Kind.FACT, 0, 0), 0.9)
    far_high = Candidate(memory(2, Scope.PLATFORM, Kind.FACT, 1, 0), 0.0)
    old_relevant = Candidate(memory(3, Scope.USER, Kind.FACT, -1, 0), 0.9)
    new_unrelated = Candidate(memory(4, Scope.USER, Kind.FACT, -1, 2), 0.1)
    got = [
        i.memory.id
        for i in assemble([near_low, old_relevant, new_unrelated, far_high], **ROOMY).items
    ]
    assert got == [
        far_high.memory.id,
        near_low.memory.id,
        old_relevant.memory.id,
        new_unrelated.memory.id,
    ]


def test_relevance_equal_up_to_float_noise_falls_through_to_recency() -> None:
    """Fused scores computed in a different order differ in the last bits; they must not
    decide the order over recency (assembly rounds relevance to 9 digits, so 3e-10 is noise
    and 2e-9 is not)."""
    older = Candidate(memory(1, Scope.USER, Kind.FACT, 0, 0), 0.5 + 3e-10)
    newer = Candidate(memory(2, Scope.USER, Kind.FACT, 0, 1), 0.5)
    assert [i.memory.id for i in assemble([older, newer], **ROOMY).items] == [
        newer.memory.id,
        older.memory.id,
    ]
    better = Candidate(memory(1, Scope.USER, Kind.FACT, 0, 0), 0.5 + 2e-9)
    assert [i.memory.id for i in assemble([better, newer], **ROOMY).items] == [
        better.memory.id,
        newer.memory.id,
    ]
