"""Isolation and integrity against the embedded PostgreSQL: identity strings, tenant-checked
calls on ids, keyless dedup under concurrency, admin writes over pending ones, one model's
vectors per store.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_isolation.py."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from bench.common import all_tenants
from harness.errors import EmbeddingModelMismatch, InvalidInput, MemoryNotFound
from harness.memory import Caller, MemoryCandidate, MemoryStore, RecallRequest, Scope, Status
from product_adapter import ProductAdapter
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import make_store

# Also run on the Citus cluster (make test-citus): the same tests, sharded by tenant.
pytestmark = pytest.mark.citus


BAD_IDENTITIES = [
    "\u3000tA\u3000",
    "alice ",
    " wf-9 ",
    "\tx",
    "a\x00b",
    "a\nb",
    "a\x1bb",
    "a\u2028b",
    "lone\ud800",
]


def user_fact(tenant: str, content: str = "likes tea", **over: Any) -> MemoryCandidate:
    return MemoryCandidate(
        **{
            "tenant": tenant,
            "scope": "user",
            "scope_id": "alice",
            "kind": "fact",
            "content": content,
            **over,
        }
    )


def rows_of(store: MemoryStore, tenant: str) -> int:
    with all_tenants(store) as conn:
        return int(
            conn.execute(
                sa.text("SELECT count(*) FROM memories WHERE tenant = :t"), {"t": tenant}
            ).scalar_one()
        )


def all_rows(store: MemoryStore) -> int:
    with all_tenants(store) as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM memories")).scalar_one())


# --- 1. one identity rule at every entry --------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_IDENTITIES)
@pytest.mark.parametrize("field", ["tenant", "scope_id", "key"])
def test_write_refuses_ambiguous_identity(
    store: MemoryStore, tenant: str, bad: str, field: str
) -> None:
    raw = {
        "tenant": tenant,
        "scope": "user",
        "scope_id": "alice",
        "kind": "fact",
        "key": "k",
        "content": "likes tea",
        field: bad,
    }
    before = all_rows(store)
    with pytest.raises(InvalidInput) as info:
        store.write(raw)
    assert field in info.value.fields
    assert all_rows(store) == before


def test_padded_user_does_not_supersede_the_real_one(store: MemoryStore, tenant: str) -> None:
    real = store.write(user_fact(tenant, key="drink"))
    with pytest.raises(InvalidInput, match="scope_id"):
        store.write(
            {
                **real.model_dump(include={"tenant", "kind"}),
                "scope": "user",
                "scope_id": "alice ",
                "key": "drink",
                "content": "likes coffee",
            }
        )
    got = store.get(real.id, tenant=tenant)
    assert got is not None and got.status is Status.ACTIVE


@pytest.mark.parametrize("bad", BAD_IDENTITIES)
def test_every_entry_point_refuses_ambiguous_identity(
    store: MemoryStore, tenant: str, bad: str
) -> None:
    kept = store.write(user_fact(tenant, key="k"))
    adapter = ProductAdapter(store)
    calls: list[tuple[str, Callable[[], object]]] = [
        ("tenant", lambda: store.recall(RecallRequest(tenant=bad, user_id="alice"))),
        ("user_id", lambda: store.recall({"tenant": tenant, "user_id": bad})),
        (
            "workflow_id",
            lambda: store.recall({"tenant": tenant, "user_id": "a", "workflow_id": bad}),
        ),
        ("session_id", lambda: store.recall({"tenant": tenant, "user_id": "a", "session_id": bad})),
        ("tenant", lambda: store.history(bad, Scope.USER, "alice", "k")),
        ("scope_id", lambda: store.history(tenant, Scope.USER, bad, "k")),
        ("key", lambda: store.history(tenant, Scope.USER, "alice", bad)),
        ("tenant", lambda: store.delete_scope(bad, Scope.USER, "alice")),
        ("scope_id", lambda: store.delete_scope(tenant, Scope.USER, bad)),
        ("tenant", lambda: store.forget(kept.id, tenant=bad)),
        ("tenant", lambda: store.get(kept.id, tenant=bad)),
        ("tenant", lambda: store.pending(bad)),
        ("tenant", lambda: store.audit(bad)),
        ("approver", lambda: store.approve(kept.id, approver=bad, tenant=tenant)),
        ("tenant", lambda: adapter.workflow_deleted(bad, "wf-9")),
        ("workflow_id", lambda: adapter.workflow_deleted(tenant, bad)),
        ("session_id", lambda: adapter.session_ended(tenant, bad)),
        ("tenant", lambda: Caller(bad, "alice")),
        ("user_id", lambda: Caller(tenant, bad)),
        ("workflow_id", lambda: Caller(tenant, "alice", bad)),
    ]
    for field, call in calls:
        with pytest.raises(InvalidInput) as info:
            call()
        assert field in info.value.fields, (field, info.value)
    got = store.get(kept.id, tenant=tenant)
    assert got is not None and got.status is Status.ACTIVE
    assert adapter.pending_cleanups(tenant) == 0


def test_workflow_deleted_with_padded_id_is_refused_not_a_silent_noop(
    store: MemoryStore, tenant: str
) -> None:
    kept = store.write(
        MemoryCandidate(tenant=tenant, scope="workflow", scope_id="wf-9", kind="fact", content="x")
    )
    with pytest.raises(InvalidInput):
        ProductAdapter(store).workflow_deleted(tenant, " wf-9 ")
    assert store.get(kept.id, tenant=tenant) is not None
    assert ProductAdapter(store).workflow_deleted(tenant, "wf-9") is True
    assert store.get(kept.id, tenant=tenant) is None


# --- 2. calls on an id are tenant-checked -------------------------------------------------------


def test_another_tenants_id_is_not_found(store: MemoryStore, tenant: str) -> None:
    other = tenant + "-b"
    pending = store.write(
        MemoryCandidate(
            tenant=tenant,
            scope="platform",
            kind="constraint",
            content="Cite sources",
            source={"origin": "verdict"},
        )
    )
    assert pending.status is Status.PENDING_APPROVAL
    adapter = ProductAdapter(store)
    with pytest.raises(MemoryNotFound):
        adapter.approve(pending.id, "mallory", tenant=other)
    with pytest.raises(MemoryNotFound):
        store.approve(pending.id, approver="mallory", tenant=other)
    with pytest.raises(MemoryNotFound):
        adapter.reject(pending.id, "mallory", "no", tenant=other)
    assert store.get(pending.id, tenant=other) is None
    assert store.forget(pending.id, tenant=other) is False
    assert store.audit(other) == [] and store.audit(tenant) == []
    still = store.get(pending.id, tenant=tenant)
    assert still is not None and still.status is Status.PENDING_APPROVAL
    approved = adapter.approve(pending.id, "carol", tenant=tenant)
    assert approved.status is Status.ACTIVE
    assert [(a["tenant"], a["actor"]) for a in store.audit(tenant)] == [(tenant, "carol")]
    assert store.forget(pending.id, tenant=tenant) is True


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda s, m: s.approve(m, 123, tenant="t"), "approver"),
        (lambda s, m: s.approve(m, "x" * 201, tenant="t"), "approver"),
        (lambda s, m: s.reject(m, "root", "bad\x00reason", tenant="t"), "reason"),
        (lambda s, m: s.reject(m, "root", None, tenant="t"), "reason"),
        (lambda s, m: s.get(12345, tenant="t"), "memory_id"),
        (lambda s, m: s.get(m, tenant=None), "tenant"),
        (lambda s, m: s.write_many(None), "candidates"),
        (lambda s, m: s.recall("str"), "request"),
        (lambda s, m: s.recall({1: "x"}), "request"),
        (lambda s, m: s.write_many("abc"), "candidates"),
        (lambda s, m: s.write_many([42]), "candidate"),
        (lambda s, m: s.history("t", "team", "x", "k"), "scope"),
        (lambda s, m: s.delete_scope("t", Scope.PLATFORM, "x"), "scope_id"),
        (lambda s, m: s.purge_expired("yesterday"), "now"),
    ],
)
def test_untyped_bad_arguments_are_invalid_input(
    store: MemoryStore, call: Callable[[MemoryStore, uuid.UUID], object], field: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        call(store, uuid.uuid4())
    assert field in info.value.fields


# --- 6. keyless dedup holds under concurrency ---------------------------------------------------


def test_keyless_dedup_holds_across_threads(store: MemoryStore, tenant: str) -> None:
    contents = [f"the office plant number {i} needs water" for i in range(20)]
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        try:
            barrier.wait()
            for i in range(20):
                c = contents[(i + offset) % 20]
                store.write(user_fact(tenant, c))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n * 3,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert rows_of(store, tenant) == 20


def test_keyless_batches_in_opposite_order_do_not_deadlock(store: MemoryStore, tenant: str) -> None:
    batch = [user_fact(tenant, f"item {i}") for i in range(10)]
    errors: list[BaseException] = []

    def writer(items: list[MemoryCandidate]) -> None:
        try:
            for _ in range(5):
                store.write_many(items)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(b,)) for b in (batch, batch[::-1], batch, batch[::-1])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and rows_of(store, tenant) == 10


# --- 10. an admin's write over an identical pending proposal ------------------------------------


def test_admin_write_identical_to_pending_takes_effect(store: MemoryStore, tenant: str) -> None:
    proposal = {
        "tenant": tenant,
        "scope": "platform",
        "kind": "constraint",
        "content": "Never email customers on Sundays",
    }
    pending = store.write({**proposal, "source": {"origin": "completion"}})
    assert pending.status is Status.PENDING_APPROVAL
    admin = store.write({**proposal, "source": {"origin": "admin"}})
    assert admin.id != pending.id
    assert admin.status is Status.ACTIVE
    assert admin.supersedes == pending.id
    closed = store.get(pending.id, tenant=tenant)
    assert closed is not None
    assert closed.status is Status.SUPERSEDED and closed.superseded_by == admin.id
    assert store.pending(tenant) == []
    # Idempotent afterwards: the same admin write returns the active item.
    assert store.write({**proposal, "source": {"origin": "admin"}}).id == admin.id
    # An automatic proposal identical to an active item stays that item.
    assert store.write({**proposal, "source": {"origin": "verdict"}}).id == admin.id


# --- 5. vectors never mix models ----------------------------------------------------------------


def vector_stats(store: MemoryStore) -> tuple[int, int, str]:
    with all_tenants(store) as conn:
        total, with_vec = conn.execute(
            sa.text("SELECT count(*), count(embedding) FROM memories")
        ).one()
        typ = conn.execute(
            sa.text(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
            )
        ).scalar_one()
    return int(total), int(with_vec), str(typ)


@pytest.mark.parametrize("new_dim", [384, 16])
def test_stale_model_writer_is_refused_after_reembed(
    fresh_db_url: str, tenant: str, new_dim: int
) -> None:
    model_a = HashEmbedder(384, name="model-a")
    model_b = HashEmbedder(new_dim, name="model-b")
    old = MemoryStore.connect(fresh_db_url, embedder=model_a, check_model=False)
    try:
        old.write_many([user_fact(tenant, f"fact number {i}") for i in range(30)])
        new = make_store(fresh_db_url, model_b)
        try:
            assert new.reembed() == 30
            with pytest.raises(EmbeddingModelMismatch):
                old.write(user_fact(tenant, "written by a process still on model A"))
            assert vector_stats(new) == (30, 30, f"vector({new_dim})")
            assert new.stored_model() == ("model-b", new_dim)
            new.write(user_fact(tenant, "written with model B"))
            assert vector_stats(new) == (31, 31, f"vector({new_dim})")
        finally:
            new.close()
    finally:
        old.close()


def test_first_writers_with_two_models_record_one(fresh_db_url: str, tenant: str) -> None:
    stores = [
        MemoryStore.connect(
            fresh_db_url, embedder=HashEmbedder(384, name=f"m{i}"), check_model=False
        )
        for i in range(4)
    ]
    barrier = threading.Barrier(len(stores))
    outcomes: list[str] = []

    def first_write(s: MemoryStore, n: int) -> None:
        barrier.wait()
        try:
            s.write(user_fact(tenant, f"first write {n}"))
            outcomes.append("ok")
        except EmbeddingModelMismatch:
            outcomes.append("mismatch")

    threads = [threading.Thread(target=first_write, args=(s, n)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert sorted(outcomes) == ["mismatch", "mismatch", "mismatch", "ok"]
        assert vector_stats(stores[0])[:2] == (1, 1)
    finally:
        for s in stores:
            s.close()
