"""Tenant isolation on every write and cleanup path.

Each test writes the same content under the same scope ids into two tenants, acts in one, and
checks the other is exactly as it was: memories (ids, statuses, links) and run records. The
tenants are this test's own, so no other test's rows can make a missing tenant condition pass
or fail.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bench.common import all_tenants
from harness.clock import FixedClock
from harness.memory import MemoryCandidate, MemoryStore, Status
from product_adapter import ProductAdapter
from tests.support.stores import unreachable_store

#: (scope, scope_id) pairs every world fills, the same in both tenants.
# Also run on the Citus cluster (make test-citus): the same tests, sharded by tenant.
pytestmark = pytest.mark.citus


PLACES: list[tuple[str, str | None]] = [
    ("session", "s-1"),
    ("session", "s-2"),
    ("workflow", "wf-1"),
    ("workflow", "wf-2"),
    ("user", "alice"),
    ("platform", None),
]


def cand(tenant: str, scope: str, scope_id: str | None, content: str, **kw: Any) -> MemoryCandidate:
    return MemoryCandidate(
        tenant=tenant,
        scope=scope,  # type: ignore[arg-type]
        scope_id=scope_id,
        kind=kw.pop("kind", "fact"),
        content=content,
        source=kw.pop("source", {"origin": "admin"}),
        **kw,
    )


def seed(store: MemoryStore, tenant: str, clock: FixedClock) -> None:
    """Keyless facts, a keyed history and a run per workflow, identical in every tenant."""
    store.write_many([cand(tenant, s, i, f"note of {s} {i}") for s, i in PLACES])
    for s, i in PLACES:
        for n in range(2):
            clock.at += timedelta(seconds=1)
            store.write(cand(tenant, s, i, f"tone version {n}", key="tone", kind="preference"))
    for wf in ("wf-1", "wf-2"):
        store.runs.start(
            run_id=f"{tenant}-{wf}",
            tenant=tenant,
            user_id="alice",
            workflow_id=wf,
            session_id="s-1",
            at=clock.now(),
        )


def snapshot(store: MemoryStore, tenant: str) -> dict[str, Any]:
    """Everything a tenant holds, comparable before and after an action elsewhere."""
    with all_tenants(store) as conn:
        memories = conn.execute(
            sa.text(
                "SELECT id, scope, scope_id, content, status, supersedes, superseded_by "
                "FROM memories WHERE tenant = :t ORDER BY id"
            ),
            {"t": tenant},
        ).all()
        runs = conn.execute(
            sa.text("SELECT id, workflow_id, status FROM runs WHERE tenant = :t ORDER BY id"),
            {"t": tenant},
        ).all()
    return {"memories": [tuple(r) for r in memories], "runs": [tuple(r) for r in runs]}


def count(store: MemoryStore, tenant: str, scope: str, scope_id: str) -> int:
    with all_tenants(store) as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT count(*) FROM memories WHERE tenant=:t AND scope=:s AND scope_id=:i"
                ),
                {"t": tenant, "s": scope, "i": scope_id},
            ).scalar_one()
        )


@pytest.fixture
def two_worlds(
    store: MemoryStore, tenant: str, other_tenant: str, clock: FixedClock
) -> dict[str, Any]:
    seed(store, tenant, clock)
    seed(store, other_tenant, clock)
    before = snapshot(store, other_tenant)
    assert len(before["memories"]) == 3 * len(PLACES) and len(before["runs"]) == 2
    return before


# --- writes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scope", "scope_id"), PLACES)
def test_keyless_dedup_is_per_tenant(
    store: MemoryStore, tenant: str, other_tenant: str, scope: str, scope_id: str | None
) -> None:
    a = store.write(cand(tenant, scope, scope_id, "Deploys go out on Thursdays"))
    b = store.write(cand(other_tenant, scope, scope_id, "deploys go out on  thursdays"))
    assert a.id != b.id
    assert (a.tenant, b.tenant) == (tenant, other_tenant)
    # a second write in each tenant is its own duplicate, not the other tenant's row
    assert (
        store.write(cand(other_tenant, scope, scope_id, "Deploys go out on Thursdays")).id == b.id
    )
    assert store.write(cand(tenant, scope, scope_id, "Deploys go out on Thursdays")).id == a.id


@pytest.mark.parametrize(("scope", "scope_id"), PLACES)
def test_keyed_write_supersedes_only_in_its_tenant(
    store: MemoryStore, tenant: str, other_tenant: str, scope: str, scope_id: str | None
) -> None:
    a = store.write(cand(tenant, scope, scope_id, "Answer in English", key="lang"))
    b = store.write(cand(other_tenant, scope, scope_id, "Answer in French", key="lang"))
    for m in (a, b):
        got = store.get(m.id, tenant=m.tenant)
        assert got is not None and got.status is Status.ACTIVE and got.superseded_by is None
    assert b.supersedes is None


def test_approval_supersedes_only_in_its_tenant(
    store: MemoryStore, tenant: str, other_tenant: str
) -> None:
    live = {
        t: store.write(cand(t, "platform", None, "Mask e-mail addresses", key="pii"))
        for t in (tenant, other_tenant)
    }
    waiting = store.write(
        cand(tenant, "platform", None, "Never show e-mail", key="pii", source={"origin": "verdict"})
    )
    assert waiting.status is Status.PENDING_APPROVAL
    store.approve(waiting.id, "carol", tenant=tenant)
    mine = store.get(live[tenant].id, tenant=tenant)
    theirs = store.get(live[other_tenant].id, tenant=other_tenant)
    assert mine is not None and mine.status is Status.SUPERSEDED
    assert theirs is not None and theirs.status is Status.ACTIVE and theirs.superseded_by is None
    assert store.pending(other_tenant) == [] and store.audit(other_tenant) == []


# --- deletion and cleanup -----------------------------------------------------------------------


@pytest.mark.parametrize(("scope", "scope_id"), PLACES)
def test_delete_scope_leaves_the_other_tenant_whole(
    store: MemoryStore,
    tenant: str,
    other_tenant: str,
    two_worlds: dict[str, Any],
    scope: str,
    scope_id: str | None,
) -> None:
    assert store.delete_scope(tenant, scope, scope_id) == 3
    assert count(store, tenant, scope, scope_id or "") == 0
    assert snapshot(store, other_tenant) == two_worlds


def test_forget_leaves_the_other_tenant_whole(
    store: MemoryStore, tenant: str, other_tenant: str, two_worlds: dict[str, Any]
) -> None:
    mine = store.history(tenant, "user", "alice", "tone")
    assert len(mine) == 2
    for m in mine:
        assert store.forget(m.id, tenant=tenant) is True
    assert store.history(tenant, "user", "alice", "tone") == []
    assert snapshot(store, other_tenant) == two_worlds


def test_workflow_deleted_leaves_the_other_tenant_whole(
    store: MemoryStore,
    tenant: str,
    other_tenant: str,
    two_worlds: dict[str, Any],
    tmp_path: Path,
) -> None:
    assert ProductAdapter(store, tmp_path / "spool").workflow_deleted(tenant, "wf-1") is True
    assert count(store, tenant, "workflow", "wf-1") == 0
    assert store.runs.list(tenant, "wf-1") == []
    assert len(store.runs.list(tenant, "wf-2")) == 1
    assert snapshot(store, other_tenant) == two_worlds


def test_session_ended_leaves_the_other_tenant_whole(
    store: MemoryStore,
    tenant: str,
    other_tenant: str,
    two_worlds: dict[str, Any],
    tmp_path: Path,
) -> None:
    assert ProductAdapter(store, tmp_path / "spool").session_ended(tenant, "s-1") is True
    assert count(store, tenant, "session", "s-1") == 0
    assert count(store, tenant, "session", "s-2") == 3
    assert snapshot(store, other_tenant) == two_worlds


def test_queued_cleanups_leave_the_other_tenant_whole(
    private_store: MemoryStore,
    tenant: str,
    other_tenant: str,
    clock: FixedClock,
    tmp_path: Path,
) -> None:
    store = private_store
    seed(store, tenant, clock)
    seed(store, other_tenant, clock)
    before = snapshot(store, other_tenant)
    spool = tmp_path / "spool.jsonl"
    down = unreachable_store()
    try:
        adapter = ProductAdapter(down, spool)
        assert adapter.workflow_deleted(tenant, "wf-2") is False
        assert adapter.session_ended(tenant, "s-2") is False
    finally:
        down.close()
    assert ProductAdapter(store, spool).reconcile() == 2
    assert count(store, tenant, "workflow", "wf-2") == 0
    assert count(store, tenant, "session", "s-2") == 0
    assert store.runs.list(tenant, "wf-2") == []
    assert snapshot(store, other_tenant) == before


def test_purge_expired_keeps_every_unexpired_row_of_every_tenant(
    private_store: MemoryStore, tenant: str, other_tenant: str, clock: FixedClock
) -> None:
    store = private_store
    seed(store, tenant, clock)
    seed(store, other_tenant, clock)
    untouched = snapshot(store, other_tenant)
    soon = clock.at + timedelta(hours=1)
    doomed = store.write(cand(tenant, "user", "alice", "expiring note", expires_at=soon))
    lasting = store.write(
        cand(tenant, "user", "alice", "lasting note", expires_at=soon + timedelta(days=9))
    )
    mine = snapshot(store, tenant)
    assert store.purge_expired(now=soon + timedelta(minutes=1)) == 1
    assert store.get(doomed.id, tenant=tenant) is None
    assert store.get(lasting.id, tenant=tenant) is not None
    after = snapshot(store, tenant)
    assert after["memories"] == [r for r in mine["memories"] if r[0] != doomed.id]
    assert snapshot(store, other_tenant) == untouched
