"""The readable set at its edges (SPEC section 5 step 1), through each statement that uses it:
always-kinds, the narrow scopes, relevance ranking, and the pool probe of the HNSW path.

An item is unexpired while ``expires_at > now``: at ``expires_at`` itself it is gone.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from harness.clock import FixedClock
from harness.memory import MemoryCandidate, MemoryStore, RecallConfig, RecallRequest
from tests.support.stores import make_store

TOPIC = "quarterly invoice reconciliation"


def write(
    store: MemoryStore, tenant: str, scope: str, scope_id: str | None, kind: str, **kw: object
):  # type: ignore[no-untyped-def]
    return store.write(
        MemoryCandidate(
            tenant=tenant,
            scope=scope,  # type: ignore[arg-type]
            scope_id=scope_id,
            kind=kind,  # type: ignore[arg-type]
            content=f"{TOPIC}: {scope} {kind}",
            source={"origin": "admin"},  # type: ignore[arg-type]
            **kw,
        )
    )


@pytest.mark.parametrize("strategy", ["exact", "hnsw"])
@pytest.mark.parametrize(
    ("scope", "scope_id", "kind"),
    [
        ("platform", None, "constraint"),  # always-kinds
        ("user", "alice", "preference"),
        ("session", "s-1", "fact"),  # narrow scopes
        ("workflow", "wf-1", "lesson"),
        ("user", "alice", "fact"),  # ranked by relevance
        ("platform", None, "decision"),
    ],
)
def test_expiry_is_exclusive_at_its_instant(
    store: MemoryStore,
    tenant: str,
    clock: FixedClock,
    scope: str,
    scope_id: str | None,
    kind: str,
    strategy: str,
) -> None:
    ends = clock.at + timedelta(hours=1)
    item = write(store, tenant, scope, scope_id, kind, expires_at=ends)
    # large_pool=0 makes "hnsw" take the probed, index path whatever the pool size
    configured = make_store(
        store.url,
        store.embedder,
        clock,
        recall=RecallConfig(strategy=strategy, large_pool=0),  # type: ignore[arg-type]
    )

    def recalled(now: object) -> set[object]:
        r = configured.recall(
            RecallRequest(
                tenant=tenant,
                user_id="alice",
                workflow_id="wf-1",
                session_id="s-1",
                query=TOPIC,
                now=now,  # type: ignore[arg-type]
            )
        )
        return {i.memory.id for i in r.items} | {o.memory_id for o in r.omitted}

    try:
        assert recalled(ends - timedelta(microseconds=1)) == {item.id}
        assert recalled(ends) == set()
    finally:
        configured.close()


def test_scope_ids_match_exactly_for_every_scope(store: MemoryStore, tenant: str) -> None:
    """Each scope reads its own id only: a workflow id that names a session (or a user id
    that names a workflow) reads nothing."""
    mine = {
        write(store, tenant, "user", "alice", "fact").id,
        write(store, tenant, "workflow", "wf-1", "fact").id,
        write(store, tenant, "session", "s-1", "fact").id,
        write(store, tenant, "platform", None, "fact").id,
    }
    write(store, tenant, "user", "wf-1", "constraint")
    write(store, tenant, "workflow", "s-1", "constraint")
    write(store, tenant, "session", "alice", "constraint")
    r = store.recall(
        RecallRequest(
            tenant=tenant, user_id="alice", workflow_id="wf-1", session_id="s-1", query=TOPIC
        )
    )
    assert {i.memory.id for i in r.items} | {o.memory_id for o in r.omitted} == mine
