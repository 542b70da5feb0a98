"""Over-budget platform constraints: warned once per caller and interval, counted in status.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_constraint_warning.py."""

from __future__ import annotations

import logging

import pytest

from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.domain.types import RecallRequest


def test_store_warns_once_per_caller_and_status_counts(
    store: MemoryStore, tenant: str, caplog: pytest.LogCaptureFixture
) -> None:
    store.write_many(
        [
            MemoryCandidate(
                tenant=tenant,
                scope="platform",
                kind="constraint",
                content=f"Rule {i}: " + "always double-check the figures " * 9,
            )
            for i in range(8)
        ]
    )
    caplog.set_level(logging.WARNING)
    for _ in range(5):
        for user in ("alice", "bob"):
            result = store.recall(RecallRequest(tenant=tenant, user_id=user, query="figures"))
            assert not result.complete
    warnings = [r.getMessage() for r in caplog.records if "recall incomplete" in r.getMessage()]
    assert len(warnings) == 2
    assert any(f"{tenant}/alice" in w for w in warnings)
    assert any(f"{tenant}/bob" in w for w in warnings)
    placed = len(result.items)
    assert 0 < placed < 8
    caplog.clear()
    status = store.status()
    assert status.constraints_over_budget == {tenant: 8 - placed}
    assert not [r for r in caplog.records if "recall incomplete" in r.getMessage()]
