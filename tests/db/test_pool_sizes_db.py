"""The pool-size memo: recall's strategy probe is one round trip per caller and interval.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_pool_sizes.py."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from harness.memory import MemoryCandidate, MemoryStore, RecallRequest


def test_recall_probes_a_caller_once_per_interval(store: MemoryStore, tenant: str) -> None:
    store.write(
        MemoryCandidate(tenant=tenant, scope="user", scope_id="alice", kind="fact", content="x y")
    )
    statements: list[str] = []

    def seen(*args: Any) -> None:
        statements.append(args[2])

    event.listen(sa.Engine, "before_cursor_execute", seen)
    try:
        for user in ("alice", "alice", "bob", "alice"):
            store.recall(RecallRequest(tenant=tenant, user_id=user, query="x y"))
    finally:
        event.remove(sa.Engine, "before_cursor_execute", seen)
    probes = [s for s in statements if "AS bounded" in s]
    assert len(probes) == 2  # alice once, bob once
    store.retriever.pool_sizes.clear()
    statements.clear()
    event.listen(sa.Engine, "before_cursor_execute", seen)
    try:
        store.recall(RecallRequest(tenant=tenant, user_id="alice", query="x y"))
    finally:
        event.remove(sa.Engine, "before_cursor_execute", seen)
    assert len([s for s in statements if "AS bounded" in s]) == 1
