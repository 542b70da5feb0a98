"""The write path on the embedded PostgreSQL: supersession, approval, deletion, atomicity."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from bench.common import all_tenants
from harness.clock import FixedClock
from harness.errors import ConflictingState, InvalidInput, MemoryNotFound, MemoryRejected
from harness.memory import Kind, MemoryCandidate, MemoryStore, Scope, Status
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import make_store

# Also run on the Citus cluster (make test-citus): the same tests, sharded by tenant.
pytestmark = pytest.mark.citus


def cand(tenant: str, **kw: object) -> MemoryCandidate:
    base: dict[str, object] = {
        "tenant": tenant,
        "scope": "user",
        "scope_id": "alice",
        "kind": "preference",
        "content": "Prefers short answers",
    }
    base.update(kw)
    return MemoryCandidate(**base)  # type: ignore[arg-type]


def count_rows(store: MemoryStore, tenant: str) -> int:
    with all_tenants(store) as conn:
        return int(
            conn.execute(
                sa.text("SELECT count(*) FROM memories WHERE tenant = :t"), {"t": tenant}
            ).scalar_one()
        )


def test_write_then_get_round_trips(store: MemoryStore, tenant: str) -> None:
    m = store.write(
        cand(tenant, key="answer.length", priority=3, source={"origin": "api", "run_id": "run-1"})
    )
    assert m.status is Status.ACTIVE and m.priority == 3 and m.has_embedding
    got = store.get(m.id, tenant=tenant)
    assert got == m
    assert got is not None and got.source.run_id == "run-1"
    assert store.get(uuid.uuid4(), tenant=tenant) is None
    assert store.get(str(m.id), tenant=tenant) == m


def test_keyed_write_supersedes_with_linear_history(
    store: MemoryStore, tenant: str, clock: FixedClock
) -> None:
    ids = []
    for i in range(3):
        clock.at += timedelta(seconds=1)
        ids.append(store.write(cand(tenant, key="lang", content=f"Answer in language {i}")).id)
    hist = store.history(tenant, Scope.USER, "alice", "lang")
    assert [h.id for h in hist] == ids
    assert [h.status for h in hist] == [Status.SUPERSEDED, Status.SUPERSEDED, Status.ACTIVE]
    assert hist[0].supersedes is None and hist[0].superseded_by == ids[1]
    assert hist[1].supersedes == ids[0] and hist[1].superseded_by == ids[2]
    assert hist[2].supersedes == ids[1] and hist[2].superseded_by is None


def test_supersession_is_per_scope_id_and_tenant(store: MemoryStore, tenant: str) -> None:
    a = store.write(cand(tenant, key="lang", scope_id="alice"))
    b = store.write(cand(tenant, key="lang", scope_id="bob"))
    c = store.write(cand(tenant + "-other", key="lang", scope_id="alice"))
    for m in (a, b, c):
        got = store.get(m.id, tenant=m.tenant)
        assert got is not None and got.status is Status.ACTIVE


def test_keyless_duplicate_returns_existing(store: MemoryStore, tenant: str) -> None:
    a = store.write(cand(tenant, content="Likes  tables"))
    b = store.write(cand(tenant, content="likes tables "))
    assert a.id == b.id
    assert count_rows(store, tenant) == 1


def test_platform_automatic_origins_wait_for_approval(store: MemoryStore, tenant: str) -> None:
    auto = store.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            kind="constraint",
            key="pii",
            content="Never include customer e-mail addresses",
            source={"origin": "completion"},
        )
    )
    admin = store.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            kind="constraint",
            content="Answers cite sources",
            source={"origin": "admin"},
        )
    )
    verdict = store.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            kind="lesson",
            content="Tables need headers",
            source={"origin": "verdict"},
        )
    )
    assert auto.status is Status.PENDING_APPROVAL and verdict.status is Status.PENDING_APPROVAL
    assert admin.status is Status.ACTIVE
    assert {m.id for m in store.pending(tenant)} == {auto.id, verdict.id}
    # user-scope automatic writes are active at once
    assert store.write(cand(tenant, source={"origin": "verdict"})).status is Status.ACTIVE


def test_approve_activates_supersedes_and_audits(store: MemoryStore, tenant: str) -> None:
    old = store.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            kind="constraint",
            key="pii",
            content="Mask e-mail addresses",
            source={"origin": "admin"},
        )
    )
    new = store.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            kind="constraint",
            key="pii",
            content="Never output e-mail addresses",
            source={"origin": "completion"},
        )
    )
    still = store.get(old.id, tenant=tenant)
    assert still is not None and still.status is Status.ACTIVE  # pending does not supersede
    approved = store.approve(new.id, approver="root", tenant=tenant)
    assert approved.status is Status.ACTIVE and approved.supersedes == old.id
    assert approved.approval is not None and approved.approval.by == "root"
    old_now = store.get(old.id, tenant=tenant)
    assert old_now is not None and old_now.status is Status.SUPERSEDED
    assert old_now.superseded_by == new.id
    audit = store.audit(tenant)
    assert [(a["memory_id"], a["decision"], a["actor"]) for a in audit] == [
        (new.id, "approved", "root")
    ]
    with pytest.raises(ConflictingState, match="not pending"):
        store.approve(new.id, approver="root", tenant=tenant)
    with pytest.raises(MemoryNotFound):
        store.approve(uuid.uuid4(), approver="root", tenant=tenant)


def test_reject_needs_reason_and_is_audited(store: MemoryStore, tenant: str) -> None:
    m = store.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            kind="fact",
            content="The office closes at 5",
            source={"origin": "completion"},
        )
    )
    with pytest.raises(InvalidInput, match="reason"):
        store.reject(m.id, approver="root", reason=" ", tenant=tenant)
    with pytest.raises(InvalidInput, match="approver"):
        store.approve(m.id, approver="", tenant=tenant)
    r = store.reject(m.id, approver="root", reason="not a policy", tenant=tenant)
    assert r.status is Status.REJECTED and r.approval is not None
    assert r.approval.reason == "not a policy"
    assert store.audit(tenant)[-1]["reason"] == "not a policy"
    assert store.pending(tenant) == []


def test_forget_removes_row_and_links(store: MemoryStore, tenant: str, clock: FixedClock) -> None:
    a = store.write(cand(tenant, key="k", content="first"))
    clock.at += timedelta(seconds=1)
    b = store.write(cand(tenant, key="k", content="second"))
    assert store.forget(b.id, tenant=tenant) is True
    assert store.get(b.id, tenant=tenant) is None
    a_now = store.get(a.id, tenant=tenant)
    assert a_now is not None and a_now.superseded_by is None
    assert a_now.status is Status.SUPERSEDED  # forgetting never resurrects history
    assert store.forget(b.id, tenant=tenant) is False
    with all_tenants(store) as conn:
        assert (
            conn.execute(
                sa.text("SELECT count(*) FROM memories WHERE id = :i"), {"i": b.id}
            ).scalar_one()
            == 0
        )


def test_delete_scope_and_purge_expired(
    private_store: MemoryStore, tenant: str, clock: FixedClock
) -> None:
    store = private_store  # purge_expired spans every tenant: a database of its own
    store.write(cand(tenant, scope="workflow", scope_id="wf-1", content="wf a"))
    store.write(cand(tenant, scope="workflow", scope_id="wf-1", content="wf b"))
    keep = store.write(cand(tenant, scope="workflow", scope_id="wf-2", content="wf c"))
    assert store.delete_scope(tenant, "workflow", "wf-1") == 2
    assert store.get(keep.id, tenant=tenant) is not None
    soon = store.write(cand(tenant, content="temporary", expires_at=clock.at + timedelta(hours=1)))
    later = store.write(cand(tenant, content="lasting", expires_at=clock.at + timedelta(days=9)))
    assert store.purge_expired(now=clock.at + timedelta(hours=2)) == 1
    assert (
        store.get(soon.id, tenant=tenant) is None and store.get(later.id, tenant=tenant) is not None
    )


def test_content_over_maximum_is_invalid_and_nothing_written(db_url: str, tenant: str) -> None:
    s = make_store(db_url, HashEmbedder(), max_content_chars=50)
    try:
        with pytest.raises(InvalidInput) as info:
            s.write(cand(tenant, content="x" * 51))
        assert info.value.fields == ("content",)
        assert count_rows(s, tenant) == 0
    finally:
        s.close()


def test_write_many_is_all_or_nothing(store: MemoryStore, tenant: str) -> None:
    good = [cand(tenant, content=f"fact {i}", kind="fact") for i in range(3)]
    bad = cand(tenant, content="password: hunter2!", kind="fact")
    with pytest.raises(MemoryRejected) as info:
        store.write_many([*good, bad])
    assert info.value.index == 3
    with pytest.raises(InvalidInput) as info2:
        store.write_many(
            [*good, {"tenant": tenant, "scope": "user", "kind": "fact", "content": "x"}]
        )
    assert "candidate 3" in str(info2.value)
    assert count_rows(store, tenant) == 0
    written = store.write_many(good)
    assert [m.content for m in written] == ["fact 0", "fact 1", "fact 2"]
    assert all(m.has_embedding for m in written)


def test_write_many_rolls_back_on_database_error(store: MemoryStore, tenant: str) -> None:
    # A constraint violation in the middle of the batch must leave nothing behind.
    cands = [cand(tenant, content=f"fact {i}", kind="fact") for i in range(3)]
    with all_tenants(store, as_owner=True) as conn:
        conn.execute(
            sa.text(
                "ALTER TABLE memories ADD CONSTRAINT ck_test_no_fact_2 "
                "CHECK (content <> 'fact 2') NOT VALID"
            )
        )
    try:
        with pytest.raises(Exception, match="ck_test_no_fact_2"):
            store.write_many(cands)
        assert count_rows(store, tenant) == 0
    finally:
        with all_tenants(store, as_owner=True) as conn:
            conn.execute(sa.text("ALTER TABLE memories DROP CONSTRAINT ck_test_no_fact_2"))


def test_eight_concurrent_writers_leave_one_active(store: MemoryStore, tenant: str) -> None:
    from harness.clock import SystemClock

    store.clock = SystemClock()
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            barrier.wait()
            for j in range(3):
                store.write(cand(tenant, key="race", content=f"writer {i} value {j}"))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    hist = store.history(tenant, Scope.USER, "alice", "race")
    assert len(hist) == 24
    active = [h for h in hist if h.status is Status.ACTIVE]
    assert len(active) == 1
    # The chain is linear: following supersedes from the active item visits every version once.
    by_id = {h.id: h for h in hist}
    seen = []
    cursor: uuid.UUID | None = active[0].id
    while cursor is not None:
        seen.append(cursor)
        cursor = by_id[cursor].supersedes
    assert len(seen) == 24 and len(set(seen)) == 24
    assert sum(1 for h in hist if h.superseded_by is None) == 1


def test_bad_scope_in_read_api_is_typed(store: MemoryStore, tenant: str) -> None:
    with pytest.raises(InvalidInput, match="scope"):
        store.history(tenant, "team", "x", "k")
    with pytest.raises(InvalidInput, match="memory_id"):
        store.get("not-a-uuid", tenant=tenant)
    assert Kind("fact") is Kind.FACT


@pytest.mark.parametrize("expires_at", ["2000-01-01T00:00:00+00:00", "past", 0])
def test_a_keyed_write_that_has_already_expired_is_refused_and_the_live_value_stays(
    store: MemoryStore, tenant: str, expires_at: object
) -> None:
    live = store.write(cand(tenant, key="printer", content="the printer is on floor 3"))
    if expires_at == "past":
        expires_at = store.clock.now() - timedelta(seconds=1)
    with pytest.raises(InvalidInput) as info:
        store.write(cand(tenant, key="printer", content="it moved", expires_at=expires_at))
    assert info.value.fields == ("expires_at",)
    assert store.get(live.id, tenant=tenant).status is Status.ACTIVE  # type: ignore[union-attr]
    assert [m.id for m in store.history(tenant, "user", "alice", "printer")] == [live.id]
