"""Deferred candidates: assembly reads heads and builds only the memories it places, with the
same result as over built memories (the store's recall path defers every row)."""

from __future__ import annotations

import uuid
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from harness.memory.domain.recall import Candidate, Head, RecallResult, assemble
from harness.memory.domain.types import Kind, Memory, Origin, Scope, Source
from harness.memory.store.rows import head_from_row, memory_from_row
from tests.unit.test_ordering_property import memory as ordered_memory


def memory(n: int, scope: Scope, kind: Kind, key: str | None, words: int, origin: Origin) -> Memory:
    content = " ".join(f"w{n}" for _ in range(words)) + ("\nsecond line" if n % 3 == 0 else "")
    return ordered_memory(n, scope, kind, n % 3 - 1, n % 4).model_copy(
        update={"key": key, "content": content, "source": Source(origin=origin)}
    )


@st.composite
def pools(draw: st.DrawFn) -> list[tuple[Memory, float]]:
    size = draw(st.integers(0, 24))
    return [
        (
            memory(
                n,
                draw(st.sampled_from(list(Scope))),
                draw(st.sampled_from(list(Kind))),
                draw(st.sampled_from([None, None, "k1", "k2"])),
                draw(st.integers(1, 30)),
                draw(st.sampled_from(list(Origin))),
            ),
            draw(st.sampled_from([0.0, 0.3, 0.9])),
        )
        for n in range(size)
    ]


def account(result: RecallResult) -> tuple[object, ...]:
    return (
        [(i.memory, i.text, i.relevance) for i in result.items],
        result.omitted,
        result.text,
        result.complete,
        [(e.memory_id, e.decision, e.stage, e.detail) for e in result.trace],
    )


@given(
    pool=pools(),
    budget=st.integers(0, 600),
    max_items=st.integers(0, 12),
    max_item_chars=st.integers(20, 300),
)
def test_deferred_candidates_assemble_as_built_ones_and_build_only_what_is_placed(
    pool: list[tuple[Memory, float]], budget: int, max_items: int, max_item_chars: int
) -> None:
    built: Counter[uuid.UUID] = Counter()

    def deferred(m: Memory, relevance: float) -> Candidate:
        def build() -> Memory:
            built[m.id] += 1
            return m

        return Candidate.deferred(Head.of(m), build, relevance, "why")

    limits = {"budget_chars": budget, "max_items": max_items, "max_item_chars": max_item_chars}
    eager = assemble([Candidate(m, rel, "why") for m, rel in pool], **limits)
    lazy = assemble([deferred(m, rel) for m, rel in pool], **limits)
    assert account(lazy) == account(eager)
    # each placed memory built exactly once; nothing left out was built
    assert built == Counter(item.memory.id for item in lazy.items)


def test_a_deferred_candidate_builds_its_memory_once() -> None:
    m = memory(1, Scope.USER, Kind.PREFERENCE, None, 3, Origin.API)
    calls = []
    cand = Candidate.deferred(Head.of(m), lambda: calls.append(1) or m)
    assert calls == []
    assert cand.memory is m and cand.memory is m
    assert calls == [1]
    assert Candidate(m).head == cand.head == Head.of(m)


def row_of(m: Memory) -> dict[str, object]:
    return {
        "id": m.id,
        "tenant": m.tenant,
        "scope": m.scope.value,
        "scope_id": m.scope_id,
        "kind": m.kind.value,
        "memory_key": m.key,
        "content": m.content,
        "context": m.context,
        "priority": m.priority,
        "status": m.status.value,
        "origin": m.source.origin.value,
        "run_id": None,
        "verdict_id": None,
        "created_at": m.created_at,
        "expires_at": None,
        "supersedes": None,
        "superseded_by": None,
        "fingerprint": m.fingerprint,
        "approval_decision": None,
        "has_vector": True,
    }


@given(
    st.sampled_from(list(Scope)),
    st.sampled_from(list(Kind)),
    st.sampled_from(list(Origin)),
    st.sampled_from([None, "key"]),
)
def test_a_rows_head_is_the_head_of_its_memory(
    scope: Scope, kind: Kind, origin: Origin, key: str | None
) -> None:
    row = row_of(memory(7, scope, kind, key, 4, origin))
    assert head_from_row(row) == Head.of(memory_from_row(row))
    # members, not the stored strings: precedence compares them by identity
    head = head_from_row(row)
    assert head.kind is kind and head.scope is scope and head.origin is origin
