"""Grounding: memories extracted from an archived conversation keep its conversation and turn
ids (the Engine's extractor path, a direct write), and ``source_passage`` returns the turn they
came from with its neighbours, from the caller's own archive only."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from harness import RunInput, Verdict
from harness.errors import InvalidInput, MemoryNotFound
from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.domain.types import Source
from harness.run.extract import RuleExtractor
from tests.support.stores import T0
from tests.unit.test_engine import Script, run_engine

TURNS = [
    {
        "seq": n,
        "ts": (T0 + timedelta(minutes=n)).isoformat(),
        "role": "user" if n % 2 == 0 else "assistant",
        "text": text,
        "turn_id": f"m{n}",
    }
    for n, text in enumerate(
        [
            "Let us plan the week.",
            "Sure, what comes first?",
            "I prefer tables over prose.",
            "Noted, tables from now on.",
            "And the budget review is on Friday.",
        ]
    )
]


def test_an_engine_run_in_a_conversation_grounds_its_extracted_memories(
    store: MemoryStore, tenant: str, mode: str
) -> None:
    store.put_conversation(tenant=tenant, user_id="alice", conversation_id="plan", turns=TURNS)
    run = RunInput(
        tenant=tenant,
        user_id="alice",
        input="I prefer tables over prose.",
        conversation_id="plan",
        turn_id="m2",
    )
    out = run_engine(
        mode,
        store,
        run,
        model=Script(),
        judge=lambda i, o: Verdict(accepted=True),
        extractor=RuleExtractor(),
    )
    (memory,) = out.memories_written
    stored = store.get(memory.id, tenant=tenant)
    assert stored is not None
    assert (stored.source.conversation_id, stored.source.turn_id) == ("plan", "m2")
    passage = store.source_passage(memory.id, tenant=tenant, user_id="alice")
    assert passage is not None and passage.conversation_id == "plan"
    assert passage.hit_seqs == (2,) and passage.seqs == (1, 2, 3)
    assert "I prefer tables over prose." in passage.render()


def test_the_source_passage_is_only_the_callers(store: MemoryStore, tenant: str) -> None:
    store.put_conversation(tenant=tenant, user_id="alice", conversation_id="plan", turns=TURNS)
    grounded = store.write(
        MemoryCandidate(
            tenant=tenant,
            scope="user",
            scope_id="alice",
            kind="fact",
            content="The budget review is on Friday.",
            source=Source(conversation_id="plan", turn_id="m4"),
        )
    )
    assert store.source_passage(grounded.id, tenant=tenant, user_id="bob") is None
    mine = store.source_passage(grounded.id, tenant=tenant, user_id="alice", neighbours=0)
    assert mine is not None and mine.seqs == (4,)
    plain = store.write(
        MemoryCandidate(
            tenant=tenant, scope="user", scope_id="alice", kind="fact", content="No source here."
        )
    )
    assert store.source_passage(plain.id, tenant=tenant, user_id="alice") is None
    with pytest.raises(MemoryNotFound):
        store.source_passage(uuid.uuid4(), tenant=tenant, user_id="alice")
    store.forget_conversation(tenant=tenant, user_id="alice", conversation_id="plan")
    assert store.source_passage(grounded.id, tenant=tenant, user_id="alice") is None


def test_a_bad_source_id_is_refused() -> None:
    with pytest.raises(InvalidInput):
        MemoryCandidate(
            tenant="t",
            scope="user",
            scope_id="alice",
            kind="fact",
            content="x",
            source=Source(conversation_id="../etc"),
        )


def test_the_user_deleted_hook_removes_the_archive_and_user_memories(
    store: MemoryStore, tenant: str, tmp_path: Any
) -> None:
    from product_adapter import ProductAdapter

    store.put_conversation(tenant=tenant, user_id="alice", conversation_id="plan", turns=TURNS)
    store.put_conversation(tenant=tenant, user_id="bob", conversation_id="plan", turns=TURNS)
    kept = store.write(
        MemoryCandidate(tenant=tenant, scope="user", scope_id="bob", kind="fact", content="Bob's.")
    )
    store.write(
        MemoryCandidate(tenant=tenant, scope="user", scope_id="alice", kind="fact", content="Hers.")
    )
    adapter = ProductAdapter(store, tmp_path / "spool.jsonl")
    assert adapter.user_deleted(tenant, "alice")
    assert store.list_conversations(tenant=tenant, user_id="alice") == []
    assert [c.conversation_id for c in store.list_conversations(tenant=tenant, user_id="bob")] == [
        "plan"
    ]
    assert store.get(kept.id, tenant=tenant) is not None
    assert store.browse(tenant) == [store.get(kept.id, tenant=tenant)]
    assert adapter.user_deleted(tenant, "alice")  # idempotent
