"""Recall quality on a small generated history (paraphrased questions, entity-sharing
distractors) and negative controls, with the real embedding model."""

from __future__ import annotations

from bench.synthetic import generate
from harness.memory import MemoryCandidate, MemoryStore, RecallRequest
from harness.memory.domain.types import Kind


def test_hit_rate_and_negative_abstain(semantic_store: MemoryStore, tenant: str) -> None:
    ds = generate(n_facts=200, n_questions=40, n_negatives=20, seed=11)
    written = semantic_store.write_many(
        [
            MemoryCandidate(tenant=tenant, scope="user", scope_id="u", kind="fact", content=f)
            for f in ds.facts
        ]
    )
    ids = [m.id for m in written]
    hit3 = hit8 = 0
    for q in ds.questions:
        assert q.answer is not None
        got = [
            i.memory.id
            for i in semantic_store.recall(
                RecallRequest(tenant=tenant, user_id="u", query=q.text)
            ).items
        ]
        hit3 += ids[q.answer] in got[:3]
        hit8 += ids[q.answer] in got[:8]
    abstained = 0
    for q in ds.negatives:
        r = semantic_store.recall(RecallRequest(tenant=tenant, user_id="u", query=q.text))
        abstained += not any(i.memory.kind in (Kind.LESSON, Kind.FACT) for i in r.items)
    n = len(ds.questions)
    print(f"hit@3={hit3 / n:.3f} hit@8={hit8 / n:.3f} abstain={abstained / len(ds.negatives):.3f}")
    assert hit8 / n >= 0.9
    assert abstained / len(ds.negatives) >= 0.9


def test_lesson_is_found_through_its_task_context(semantic_store: MemoryStore, tenant: str) -> None:
    lesson = semantic_store.write(
        MemoryCandidate(
            tenant=tenant,
            scope="user",
            scope_id="u",
            kind="lesson",
            content="A reviewer rejected an earlier answer: include a side-by-side table.",
            context="Compare the pricing of the Basic and Pro subscription plans for the Q2 review",
        )
    )
    semantic_store.write_many(
        [
            MemoryCandidate(tenant=tenant, scope="user", scope_id="u", kind="fact", content=c)
            for c in (
                "The office coffee machine is descaled on Fridays.",
                "Quarterly reviews happen in the large meeting room.",
            )
        ]
    )
    r = semantic_store.recall(
        RecallRequest(
            tenant=tenant,
            user_id="u",
            query="Compare pricing between the Team and Enterprise plans for Q3",
        )
    )
    assert [i.memory.id for i in r.items][:1] == [lesson.id]
