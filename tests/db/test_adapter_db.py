"""product_adapter: best-effort lifecycle cleanup with real faults, reconcile, approvals.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_adapter.py, tests/system/test_adapter_system.py."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bench.common import all_tenants
from harness.clock import FixedClock
from harness.errors import ConflictingState, MemoryNotFound, StoreUnavailable
from harness.memory import MemoryCandidate, MemoryStore, Status
from product_adapter import Backoff, ProductAdapter
from tests.support.citus import citus_url
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import make_store, unreachable_store

# Also run on the Citus cluster (make test-citus): the same tests, sharded by tenant.
pytestmark = pytest.mark.citus


def mem(tenant: str, scope: str, scope_id: str | None, content: str) -> MemoryCandidate:
    return MemoryCandidate(
        tenant=tenant, scope=scope, scope_id=scope_id, kind="fact", content=content
    )  # type: ignore[arg-type]


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


def test_workflow_deleted_removes_memories_and_runs(
    store: MemoryStore, tenant: str, tmp_path: Path
) -> None:
    store.write_many([mem(tenant, "workflow", "wf-1", f"wf fact {i}") for i in range(3)])
    other = store.write(mem(tenant, "workflow", "wf-2", "other workflow"))
    store.runs.start(
        run_id="r1",
        tenant=tenant,
        user_id="u",
        workflow_id="wf-1",
        session_id=None,
        at=store.clock.now(),
    )
    adapter = ProductAdapter(store, tmp_path / "spool.jsonl")
    assert adapter.workflow_deleted(tenant, "wf-1") is True
    assert count(store, tenant, "workflow", "wf-1") == 0
    assert store.get(other.id, tenant=tenant) is not None
    assert store.runs.list(tenant, "wf-1") == []
    assert adapter.pending_cleanups(tenant) == 0


def test_session_ended_removes_session_memories(
    store: MemoryStore, tenant: str, tmp_path: Path
) -> None:
    store.write(mem(tenant, "session", "s-1", "temporary choice"))
    keep = store.write(mem(tenant, "user", "alice", "lasting preference"))
    assert ProductAdapter(store, tmp_path / "spool").session_ended(tenant, "s-1") is True
    assert count(store, tenant, "session", "s-1") == 0
    assert store.get(keep.id, tenant=tenant) is not None


def test_closed_port_queues_durably_and_reconcile_finishes(
    private_store: MemoryStore, tenant: str, tmp_path: Path
) -> None:
    store = private_store  # reconcile finishes every tenant's cleanups: a database of its own
    spool = tmp_path / "spool.jsonl"
    store.write_many([mem(tenant, "workflow", "wf-9", f"fact {i}") for i in range(2)])
    down = unreachable_store()
    try:
        adapter = ProductAdapter(down, spool)
        assert adapter.workflow_deleted(tenant, "wf-9") is False  # returned normally
        assert adapter.session_ended(tenant, "s-9") is False
        # A restart while the database is still down still sees both.
        restarted = ProductAdapter(down, spool)
        assert restarted.pending_cleanups(tenant) == 2
        with pytest.raises(StoreUnavailable):
            restarted.reconcile()
        assert restarted.pending_cleanups(tenant) == 2
    finally:
        down.close()
    back = ProductAdapter(store, spool)
    assert back.pending_cleanups(tenant) == 2
    assert back.reconcile() == 2
    assert count(store, tenant, "workflow", "wf-9") == 0
    assert back.pending_cleanups(tenant) == 0
    assert back.reconcile() == 0


def test_failure_inside_transaction_queues_in_database(
    private_store: MemoryStore, tenant: str, tmp_path: Path
) -> None:
    store = private_store  # reconcile finishes every tenant's cleanups: a database of its own
    store.write(mem(tenant, "session", "s-lock", "held"))
    adapter = ProductAdapter(store, tmp_path / "spool.jsonl")
    # Another transaction holds the row lock: the hook hits lock_timeout, queues, returns.
    with all_tenants(store) as holder:
        holder.execute(sa.text("SET lock_timeout = 0"))
        holder.execute(sa.text("SELECT id FROM memories WHERE tenant=:t FOR UPDATE"), {"t": tenant})
        short = make_store(store.url, HashEmbedder(), lock_timeout_ms=200)
        try:
            assert (
                ProductAdapter(short, tmp_path / "spool.jsonl").session_ended(tenant, "s-lock")
                is False
            )
        finally:
            short.close()
        holder.rollback()
    assert not (tmp_path / "spool.jsonl").exists() or adapter.spool.entries() == []
    assert adapter.pending_cleanups(tenant) == 1
    assert adapter.reconcile() == 1
    assert count(store, tenant, "session", "s-lock") == 0


def test_admin_approval_through_adapter(store: MemoryStore, tenant: str, tmp_path: Path) -> None:
    adapter = ProductAdapter(store, tmp_path / "spool")
    m = store.write(
        MemoryCandidate(
            tenant=tenant,
            scope="platform",
            kind="constraint",
            content="Cite sources",
            source={"origin": "completion"},
        )  # type: ignore[arg-type]
    )
    assert [p.id for p in adapter.pending_approvals(tenant)] == [m.id]
    assert adapter.approve(m.id, "carol", tenant=tenant).status is Status.ACTIVE
    with pytest.raises(ConflictingState):
        adapter.reject(m.id, "carol", "too late", tenant=tenant)
    with pytest.raises(MemoryNotFound):
        adapter.approve("00000000-0000-0000-0000-000000000000", "carol", tenant=tenant)
    assert [a["actor"] for a in adapter.audit(tenant)] == ["carol"]


def test_a_failing_head_cleanup_backs_off_and_the_others_proceed(
    private_store: MemoryStore, tenant: str, tmp_path: Path, clock: FixedClock
) -> None:
    store = private_store  # reconcile finishes every tenant's cleanups: a database of its own
    spool = tmp_path / "spool.jsonl"
    store.write(mem(tenant, "session", "s-stuck", "held by another transaction"))
    store.write_many([mem(tenant, "session", f"s-{i}", f"fact {i}") for i in range(3)])
    down = unreachable_store()
    try:  # queued while the store is down, the stuck one first: it is the queue's head
        queued = ProductAdapter(down, spool, clock=clock)
        for session in ("s-stuck", "s-0", "s-1", "s-2"):
            assert queued.session_ended(tenant, session) is False
            clock.at += timedelta(seconds=1)
    finally:
        down.close()
    backoff = Backoff(first=timedelta(minutes=1), cap=timedelta(minutes=10))
    adapter = ProductAdapter(store, spool, clock=clock, backoff=backoff)
    short = make_store(store.url, HashEmbedder(), clock, lock_timeout_ms=200)
    stuck = ProductAdapter(short, spool, clock=clock, backoff=backoff)
    try:
        with all_tenants(store) as holder:  # a row lock the head's delete cannot get
            holder.execute(
                sa.text(
                    "SELECT id FROM memories WHERE tenant=:t AND scope_id='s-stuck' FOR UPDATE"
                ),
                {"t": tenant},
            )
            for round_ in (1, 2):
                assert stuck.reconcile() == (3 if round_ == 1 else 0)  # the others go ahead
                assert [count(store, tenant, "session", f"s-{i}") for i in range(3)] == [0, 0, 0]
                assert adapter.pending_cleanups(tenant) == 1  # the failure is still queued
                clock.at += backoff.after(round_)  # due again only after its backoff
                assert stuck.reconcile() == 0  # ...and fails again while the lock is held
            holder.rollback()
        row = _task(store, tenant, "s-stuck")
        # The lock wait ended the attempt: lock_timeout on one server; on Citus the wait is on a
        # worker, whose connection has no lock_timeout, and the statement timeout ends it.
        on_citus = citus_url() is not None
        waited = "lock" in row.last_error or (on_citus and "statement timeout" in row.last_error)
        assert row.attempts == 3 and waited and row.done_at is None
        assert row.next_attempt_at == clock.at + backoff.after(3)
        assert adapter.reconcile() == 0  # not due yet: nothing is retried early
        clock.at = row.next_attempt_at
        assert adapter.reconcile() == 1  # retried after its backoff, and done
    finally:
        short.close()
    assert count(store, tenant, "session", "s-stuck") == 0
    assert adapter.pending_cleanups(tenant) == 0
    assert _task(store, tenant, "s-stuck").attempts == 4  # nothing lost, every try counted


def _task(store: MemoryStore, tenant: str, target_id: str) -> Any:
    with all_tenants(store) as conn:
        return conn.execute(
            sa.text("SELECT * FROM cleanup_tasks WHERE tenant=:t AND target_id=:i"),
            {"t": tenant, "i": target_id},
        ).one()
