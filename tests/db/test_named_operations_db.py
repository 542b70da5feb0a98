"""The named store operations other packages use now that the store is closed (console
listings, the cleanup queue, the MCP server's memos, readiness, the LangGraph listing, the
guard check), each run through both facades on the same database."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
import sqlalchemy as sa

from bench.common import all_tenants
from harness.errors import InvalidInput, MemoryRejected
from harness.memory import Caller, Kind, Scope, Status
from harness.memory.domain.listing import BrowseFilter, CleanupTask
from harness.memory.domain.memos import MemoPolicy
from harness.memory.store.migrate import head_revision
from tests.support.facades import KINDS, Facade, TickingClock, open_facade
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import T0
from tests.unit.test_facades import cand

POLICY = MemoPolicy(
    idle_s=60.0, idle_reason="idle", max_memos=2, cap_reason="over the cap", max_ended=8
)


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


@pytest.fixture(params=KINDS)
def facade(request: pytest.FixtureRequest, db_url: str, runner: asyncio.Runner) -> Iterator[Facade]:
    f = open_facade(request.param, db_url, HashEmbedder(), runner, TickingClock(T0))
    yield f
    f.close()


@pytest.fixture(params=KINDS)
def private_facade(
    request: pytest.FixtureRequest, private_db_url: str, runner: asyncio.Runner
) -> Iterator[Facade]:
    """A facade on a database of this test alone (the cleanup queue spans every tenant)."""
    f = open_facade(request.param, private_db_url, HashEmbedder(), runner, TickingClock(T0))
    yield f
    f.close()


def test_browse_pages_newest_first_and_filters(
    facade: Facade, tenant: str, other_tenant: str
) -> None:
    written = [facade.write(cand(tenant, content=f"fact number {i}")) for i in range(5)]
    facade.write(cand(tenant, kind="preference", content="answers in French"))
    facade.write(cand(other_tenant, content="fact number 0"))
    first = facade.browse(tenant, BrowseFilter(kind=Kind.FACT), limit=3)
    assert [m.content for m in first] == ["fact number 4", "fact number 3", "fact number 2"]
    rest = facade.browse(
        tenant, BrowseFilter(kind=Kind.FACT), before=(first[-1].created_at, first[-1].id)
    )
    assert [m.id for m in rest] == [written[1].id, written[0].id]
    everything = facade.browse(tenant)
    assert {m.tenant for m in everything} == {tenant} and len(everything) == 6
    assert [m.content for m in facade.browse(tenant, BrowseFilter(text="French"))] == [
        "answers in French"
    ]
    with pytest.raises(InvalidInput) as err:
        facade.browse(tenant, limit=0)
    assert err.value.fields == ("limit",)


def test_pending_reviews_show_what_a_decision_replaces_and_audit_of_records_it(
    facade: Facade, tenant: str
) -> None:
    active = facade.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            key="tone",
            kind="constraint",
            content="Answer formally",
            source={"origin": "admin"},
        )
    )
    pending = facade.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            key="tone",
            kind="constraint",
            content="Answer formally and briefly",
            source={"origin": "completion"},
        )
    )
    assert pending.status is Status.PENDING_APPROVAL
    [review] = facade.pending_reviews(tenant)
    assert review.memory.id == pending.id
    assert review.would_supersede is not None and review.would_supersede.id == active.id
    assert [m.id for m, _ in review.similar] == [active.id]
    assert facade.audit_of(pending.id, tenant=tenant) == []
    facade.approve(pending.id, "admin-1", tenant=tenant)
    [decision] = facade.audit_of(pending.id, tenant=tenant)
    assert (decision["actor"], decision["decision"]) == ("admin-1", "approved")
    assert facade.pending_reviews(tenant) == []


def test_activity_counts_only_the_tenants_asked_for(
    facade: Facade, tenant: str, other_tenant: str
) -> None:
    facade.write(cand(tenant, content="one"))
    facade.write(cand(tenant, content="two"))
    facade.write(cand(other_tenant, content="three"))
    seen = facade.activity([tenant], since=T0 - timedelta(days=1))
    assert {row["tenant"] for row in seen.counts} == {tenant}
    assert sum(int(row["n"]) for row in seen.counts) == 2
    assert seen.revision == head_revision() and seen.stored_model == "test/hash-embedder"
    assert set(seen.per_day) == {tenant}


def test_the_cleanup_queue_finishes_each_task_once_and_defers_a_failing_one(
    private_facade: Facade, tenant: str
) -> None:
    f = private_facade
    f.write(cand(tenant, scope="session", scope_id="s-1", content="only for this session"))
    tasks = [
        CleanupTask(uuid.uuid4().hex, tenant, "session", "s-1", T0),
        CleanupTask(uuid.uuid4().hex, tenant, "workflow", "wf-9", T0 + timedelta(seconds=1)),
    ]
    f.queue_cleanup(tasks[0])
    f.queue_cleanups(tasks)  # idempotent by task id: the first is not queued twice
    assert f.count_open_cleanups(tenant) == 2 and f.count_open_cleanups() == 2
    done = [f.reconcile_next_cleanup(now=T0 + timedelta(minutes=1), retry_delay=_never)]
    done.append(f.reconcile_next_cleanup(now=T0 + timedelta(minutes=1), retry_delay=_never))
    assert [o.task.id for o in done if o.task] == [t.id for t in tasks]
    assert all(o.done and o.attempts == 1 for o in done)
    assert f.reconcile_next_cleanup(now=T0 + timedelta(minutes=1), retry_delay=_never).task is None
    assert f.count_open_cleanups(tenant) == 0
    assert f.browse(tenant, BrowseFilter(scope=Scope.SESSION)) == []
    with pytest.raises(InvalidInput) as err:
        f.queue_cleanup(CleanupTask("x", tenant, "planet", "p-1", T0))
    assert err.value.fields == ("target",)
    f.write(cand(tenant, scope="session", scope_id="s-2", content="gone at once"))
    f.write(cand(tenant, scope="workflow", scope_id="wf-2", content="gone with its workflow"))
    f.cleanup_now(tenant, "session", "s-2")
    f.cleanup_now(tenant, "workflow", "wf-2")
    f.cleanup_now(tenant, "workflow", "wf-2")  # idempotent
    assert f.browse(tenant) == [] and f.count_open_cleanups(tenant) == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_failing_cleanup_is_recorded_and_deferred(
    kind: str, private_db_url: str, runner: asyncio.Runner, tenant: str
) -> None:
    f = open_facade(
        kind, private_db_url, HashEmbedder(), runner, TickingClock(T0), lock_timeout_ms=200
    )
    try:
        f.write(cand(tenant, scope="session", scope_id="s-held", content="held by another"))
        f.queue_cleanup(CleanupTask("held", tenant, "session", "s-held", T0))
        now = T0 + timedelta(minutes=1)
        with all_tenants(f.store) as holder:  # a row lock the cleanup's delete cannot get
            holder.execute(
                sa.text("SELECT id FROM memories WHERE tenant = :t FOR UPDATE"), {"t": tenant}
            )
            failed = f.reconcile_next_cleanup(
                now=now, retry_delay=lambda n: timedelta(minutes=5 * n)
            )
            holder.rollback()
        assert failed.task is not None and not failed.done and "lock" in (failed.error or "")
        assert failed.attempts == 1 and failed.retry_at == now + timedelta(minutes=5)
        assert f.reconcile_next_cleanup(now=now, retry_delay=_never).task is None  # not due yet
        assert f.count_open_cleanups(tenant) == 1  # deferred, not lost
        assert len(f.browse(tenant)) == 1  # the savepoint rolled the failed delete back
        later = f.reconcile_next_cleanup(now=failed.retry_at, retry_delay=_never)
        assert later.done and later.attempts == 2 and f.browse(tenant) == []
    finally:
        f.close()


def _never(failures: int) -> timedelta:
    return timedelta(days=365)


def test_memos_open_use_discard_and_count(facade: Facade, tenant: str, other_tenant: str) -> None:
    alice, bob = Caller(tenant, "alice"), Caller(other_tenant, "alice")
    facade.memo_open(
        alice, "a" * 64, json.dumps({"n": 0}), token="", now=10.0, policy=POLICY, sweep_before=0.0
    )

    def bump(state: str) -> tuple[int, str]:
        n = json.loads(state)["n"] + 1
        return n, json.dumps({"n": n})

    used = facade.memo_use(alice, "a" * 64, bump, token="", now=11.0, policy=POLICY)
    assert used.found and used.value == 1 and used.error is None
    assert facade.memo_use(alice, "a" * 64, bump, token="", now=12.0, policy=POLICY).value == 2
    assert not facade.memo_use(bob, "a" * 64, bump, token="", now=12.0, policy=POLICY).found
    assert facade.memo_count(alice, now=12.0, idle_s=60.0) == 1
    assert facade.memo_count(alice, token="", now=12.0, idle_s=60.0) == 1
    assert facade.memo_count(alice, token="k" * 64, now=12.0, idle_s=60.0) == 0
    assert not facade.memo_use(alice, "a" * 64, bump, token="k" * 64, now=12.0, policy=POLICY).found
    assert facade.memo_count(bob, now=12.0, idle_s=60.0) == 0

    def broken(state: str) -> tuple[int, str]:
        raise ValueError("the action failed")

    failed = facade.memo_use(alice, "a" * 64, broken, token="", now=13.0, policy=POLICY)
    assert failed.found and isinstance(failed.error, ValueError)
    ended = facade.memo_use(alice, "a" * 64, bump, token="", now=13.0 + 61.0, policy=POLICY)
    assert ended.found and ended.ended_why == "idle"
    facade.memo_open(alice, "b" * 64, "{}", token="", now=200.0, policy=POLICY, sweep_before=0.0)
    facade.memo_discard(alice, "b" * 64, token="")
    facade.memo_discard(alice, "b" * 64, token="")  # idempotent
    assert not facade.memo_use(alice, "b" * 64, bump, token="", now=201.0, policy=POLICY).found


def test_schema_state_is_the_head_and_check_candidate_guards_without_writing(
    facade: Facade, tenant: str
) -> None:
    state = facade.schema_state()
    assert state.revision == state.head == head_revision() and state.current
    checked = facade.check_candidate(cand(tenant, content="Prefers short answers"))
    assert checked.content == "Prefers short answers"
    with pytest.raises(MemoryRejected):
        facade.check_candidate(cand(tenant, content="api key sk-" + "a1B2c3D4e5" * 4))
    assert facade.browse(tenant) == []  # nothing was written
    assert facade.connections_in_use() == 0
