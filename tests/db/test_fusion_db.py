"""Hybrid fusion: the full-text rank counts even when vectors exist.

Unit tests of the pure reciprocal rank fusion (``harness.memory.domain.ranking.fuse``), and one end
to end with the real model: a rare identifier that only full text finds, among more than
top-N vector-similar distractors. The floor is off here (``use_floor=False``): these tests
are about ranking, the relevance judge has its own.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_fusion.py.
"""

from __future__ import annotations

import uuid

from harness.memory import MemoryCandidate, MemoryStore, RecallConfig, RecallRequest
from harness.memory.domain.ranking import RankingConfig
from tests.support.stores import make_store
from tests.unit.test_fusion import TOP_N

DISTRACTORS = [
    "Rolling back a failed payment service deployment: redeploy the previous image",
    "To roll back the payment service, revert the deployment to the last good release",
    "A failed deployment of the payment service is rolled back with the rollback script",
    "Payment service deployments that fail are reverted by the on-call engineer",
    "Rollback procedure for payment deployments: scale down, restore previous version",
    "When a payment service deploy fails, roll it back before investigating",
    "Failed payment deployments are rolled back automatically after five minutes",
    "The payment service rollback runbook lives in the ops wiki",
    "Roll back payment service releases with the deploy tool's revert command",
    "Deployment failures in the payment service trigger an automatic rollback",
    "Payment rollback: restore the database snapshot, then redeploy the old build",
    "We roll back failed payment service deployments using blue-green switching",
]
RARE = "Ticket KX-93177 is assigned to Priya from the ledger team"
QUERY = "payment rollback KX-93177"


def test_rare_identifier_found_by_full_text_among_vector_distractors(
    semantic_store: MemoryStore, tenant: str
) -> None:
    assert len(DISTRACTORS) > TOP_N
    rare = None
    for content in [*DISTRACTORS, RARE]:
        m = semantic_store.write(
            MemoryCandidate(
                tenant=tenant,
                scope="user",
                scope_id="alice",
                kind="fact",
                content=content,
                source={"origin": "admin"},  # type: ignore[arg-type]
            )
        )
        rare = m if content == RARE else rare
    assert rare is not None
    request = RecallRequest(
        tenant=tenant, user_id="alice", query=QUERY, budget_chars=100_000, max_items=100
    )

    def recalled(mode: str) -> list[uuid.UUID]:
        cfg = RankingConfig(top_n=TOP_N, use_floor=False, mode=mode)  # type: ignore[arg-type]
        # one store per configuration (recall is configured at connect), on the same rows
        ranked = make_store(
            semantic_store.url, semantic_store.embedder, recall=RecallConfig(ranking=cfg)
        )
        try:
            return [i.memory.id for i in ranked.recall(request).items]
        finally:
            ranked.close()

    # the premise: vectors alone rank more than N distractors above it, full text first
    assert rare.id not in recalled("vector")
    assert recalled("lexical")[0] == rare.id
    hybrid = recalled("hybrid")
    assert len(hybrid) == TOP_N and rare.id in hybrid
