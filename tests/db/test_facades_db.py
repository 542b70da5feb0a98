"""One suite, both facades: MemoryStore and AsyncMemoryStore must behave alike (same results,
same errors, same degradation) because they run the same operations.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_facades.py."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import (
    ConflictingState,
    InvalidInput,
    MemoryNotFound,
    MemoryRejected,
)
from harness.memory import (
    Answer,
    IdempotencyOutcome,
    Idempotent,
    RecallRequest,
    Status,
    WorkflowDeleted,
)
from tests.support.facades import KINDS, Facade, TickingClock, open_facade
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import T0
from tests.unit.test_facades import cand

SHA_A = hashlib.sha256(b"a").hexdigest()
SHA_B = hashlib.sha256(b"b").hexdigest()


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


@pytest.fixture(params=KINDS)
def facade(request: pytest.FixtureRequest, db_url: str, runner: asyncio.Runner) -> Iterator[Facade]:
    f = open_facade(request.param, db_url, HashEmbedder(), runner, TickingClock(T0))
    yield f
    f.close()


def test_write_get_and_keyed_supersede_with_history(facade: Facade, tenant: str) -> None:
    first = facade.write(cand(tenant, key="tone", kind="preference", content="Formal tone"))
    second = facade.write(cand(tenant, key="tone", kind="preference", content="Casual tone"))
    assert second.supersedes == first.id
    old = facade.get(first.id, tenant=tenant)
    assert old is not None and old.status is Status.SUPERSEDED
    versions = facade.history(tenant, "user", "alice", "tone")
    assert [m.content for m in versions] == ["Formal tone", "Casual tone"]
    # keyless: the same content again is the same memory (idempotent)
    a = facade.write(cand(tenant))
    b = facade.write(dict(cand(tenant).model_dump(mode="json")))
    assert a.id == b.id
    # another tenant does not see it
    assert facade.get(a.id, tenant=f"{tenant}-other") is None


def test_write_many_is_all_or_nothing_with_positions(facade: Facade, tenant: str) -> None:
    good = cand(tenant, content="Alpha fact")
    with pytest.raises(InvalidInput, match="candidate 1") as info:
        facade.write_many([good, {"tenant": tenant, "scope": "user", "kind": "fact"}])
    assert info.value.fields
    with pytest.raises(MemoryRejected) as rejected:
        facade.write_many(
            [good, cand(tenant, content="Deploy with key AKIAIOSFODNN7EXAMPLE for the bucket")]
        )
    assert rejected.value.index == 1
    with pytest.raises(InvalidInput, match="candidates"):
        facade.write_many("not a list")
    assert facade.history(tenant, "user", "alice", "k") == []
    assert not facade.recall(RecallRequest(tenant=tenant, user_id="alice", query="Alpha")).items
    written = facade.write_many([good, cand(tenant, content="Beta fact")])
    assert [m.content for m in written] == ["Alpha fact", "Beta fact"]
    assert facade.write_many([]) == []


def test_recall_finds_what_was_written_for_that_reader_only(facade: Facade, tenant: str) -> None:
    facade.write(cand(tenant, content="The badge reader is model HX-200"))
    facade.write(cand(tenant, kind="constraint", content="Never share badge codes"))
    facade.write(cand(tenant, scope_id="bob", content="Bob's badge reader is broken"))
    result = facade.recall(RecallRequest(tenant=tenant, user_id="alice", query="badge reader"))
    contents = {i.memory.content for i in result.items}
    assert "The badge reader is model HX-200" in contents
    assert "Never share badge codes" in contents
    assert "Bob's badge reader is broken" not in contents
    assert result.complete and not result.degraded
    mapped = facade.recall({"tenant": tenant, "user_id": "alice", "query": "badge reader"})
    assert [i.memory.id for i in mapped.items] == [i.memory.id for i in result.items]
    with pytest.raises(InvalidInput, match="request"):
        facade.recall(["not", "a", "request"])


def test_approve_reject_audit_and_errors(facade: Facade, tenant: str) -> None:
    platform: dict[str, Any] = {"scope": "platform", "scope_id": None, "kind": "constraint"}
    old = facade.write(
        cand(tenant, key="pii", content="Mask e-mails", source={"origin": "admin"}, **platform)
    )
    new = facade.write(
        cand(
            tenant,
            key="pii",
            content="Never output e-mails",
            source={"origin": "verdict"},
            **platform,
        )
    )
    other = facade.write(
        cand(tenant, content="Answer in French", source={"origin": "completion"}, **platform)
    )
    assert {m.id for m in facade.pending(tenant)} == {new.id, other.id}
    approved = facade.approve(new.id, "root", tenant=tenant)
    assert approved.status is Status.ACTIVE and approved.supersedes == old.id
    with pytest.raises(ConflictingState, match="not pending"):
        facade.approve(new.id, "root", tenant=tenant)
    with pytest.raises(MemoryNotFound):
        facade.approve(other.id, "root", tenant=f"{tenant}-other")
    with pytest.raises(InvalidInput) as blank:
        facade.reject(other.id, "root", "   ", tenant=tenant)
    assert blank.value.fields == ("reason",)
    rejected = facade.reject(other.id, "root", "not a platform rule", tenant=tenant)
    assert rejected.status is Status.REJECTED
    decisions = [(r["memory_id"], r["decision"]) for r in facade.audit(tenant)]
    assert decisions == [(new.id, "approved"), (other.id, "rejected")]
    with pytest.raises(InvalidInput, match="memory_id"):
        facade.approve("not-a-uuid", "root", tenant=tenant)


def test_forget_delete_scope_and_purge(facade: Facade, tenant: str) -> None:
    one = facade.write(cand(tenant, content="Gone soon"))
    assert facade.forget(one.id, tenant=f"{tenant}-other") is False
    assert facade.forget(str(one.id), tenant=tenant) is True
    assert facade.forget(one.id, tenant=tenant) is False
    assert facade.get(one.id, tenant=tenant) is None
    facade.write_many(
        [cand(tenant, scope="workflow", scope_id="wf-1", content=f"step {i}") for i in range(3)]
    )
    assert facade.delete_scope(tenant, "workflow", "wf-1") == 3
    assert facade.delete_scope(tenant, "workflow", "wf-1") == 0
    with pytest.raises(InvalidInput, match="scope"):
        facade.delete_scope(tenant, "galaxy", "x")
    with pytest.raises(InvalidInput, match="scope_id"):
        facade.delete_scope(tenant, "platform", "x")
    expiring = facade.write(cand(tenant, content="Short lived", expires_at=T0 + timedelta(hours=1)))
    assert facade.purge_expired(T0) == 0
    assert facade.purge_expired(T0 + timedelta(hours=2)) >= 1
    assert facade.get(expiring.id, tenant=tenant) is None
    with pytest.raises(InvalidInput, match="now"):
        facade.purge_expired("yesterday")


def test_delete_workflow_removes_its_memories_and_runs_in_one_call(
    facade: Facade, tenant: str
) -> None:
    facade.write_many(
        [cand(tenant, scope="workflow", scope_id="wf-1", content=f"step {i}") for i in range(2)]
    )
    pending = facade.write(
        cand(
            tenant,
            scope="workflow",
            scope_id="wf-1",
            content="proposed",
            source={"origin": "completion"},
        )
    )
    keep = facade.write(cand(tenant, scope="workflow", scope_id="wf-2", content="other"))
    for run_id, workflow in (("r1", "wf-1"), ("r2", "wf-1"), ("r3", "wf-2")):
        facade.runs.start(
            run_id=f"{tenant}-{facade.kind}-{run_id}",
            tenant=tenant,
            user_id="alice",
            workflow_id=workflow,
            session_id=None,
            at=T0,
        )
    assert facade.delete_workflow(tenant, "wf-1") == WorkflowDeleted(memories=3, runs=2)
    assert facade.get(pending.id, tenant=tenant) is None
    assert facade.get(keep.id, tenant=tenant) is not None
    assert [r["id"] for r in facade.runs.list(tenant)] == [f"{tenant}-{facade.kind}-r3"]
    assert facade.delete_workflow(tenant, "wf-1") == WorkflowDeleted(memories=0, runs=0)
    assert facade.delete_workflow(f"{tenant}-other", "wf-2") == WorkflowDeleted(memories=0, runs=0)
    with pytest.raises(InvalidInput, match="workflow_id"):
        facade.delete_workflow(tenant, " wf-2")


def test_runs_idempotency_and_status(facade: Facade, tenant: str) -> None:
    facade.runs.start(
        run_id=f"run-{uuid.uuid4().hex[:8]}",
        tenant=tenant,
        user_id="alice",
        workflow_id="wf-1",
        session_id=None,
        at=T0,
    )
    assert [r["workflow_id"] for r in facade.runs.list(tenant, "wf-1")] == ["wf-1"]

    calls: list[int] = []

    def attempt(write_many: Any) -> Any:
        async def async_attempt(write_many: Any) -> Answer:
            written = await write_many([cand(tenant, content="Idempotent fact")])
            calls.append(len(written))
            return Answer(7, {"ids": [str(m.id) for m in written]})

        def sync_attempt(write_many: Any) -> Answer:
            written = write_many([cand(tenant, content="Idempotent fact")])
            calls.append(len(written))
            return Answer(7, {"ids": [str(m.id) for m in written]})

        return async_attempt if facade.kind == "async" else sync_attempt

    first = facade.idempotent(tenant, "key-1", SHA_A, attempt(None))
    again = facade.idempotent(tenant, "key-1", SHA_A, attempt(None))
    other = facade.idempotent(tenant, "key-1", SHA_B, attempt(None))
    assert first.outcome is IdempotencyOutcome.NEW and first.answer.code == 7
    assert again == Idempotent(IdempotencyOutcome.REPLAY, first.answer) and again.replayed
    assert other == Idempotent(IdempotencyOutcome.CONFLICT, None)
    assert calls == [1]
    status = facade.status()
    assert status.counts[tenant]["active"] == 1
    assert status.embedder_mode == "hybrid"


def test_unexpected_failure_inside_recall_degrades(
    facade: Facade, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise KeyError("a bug, not an outage")

    monkeypatch.setattr(facade.store.retriever, "assemble_result", broken)
    r = facade.recall(RecallRequest(tenant=tenant, user_id="alice", query="anything"))
    assert r.items == [] and r.degraded
    with pytest.raises(KeyError):
        facade.recall(RecallRequest(tenant=tenant, user_id="alice", query="x", strict=True))


_words = st.sampled_from(["printer", "badge", "lunch", "deploy", "vpn", "invoice", "coffee"])
_ops = st.lists(
    st.tuples(
        st.sampled_from(["keyed", "keyless", "forget"]),
        st.sampled_from(["k1", "k2"]),
        st.lists(_words, min_size=1, max_size=4).map(" ".join),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_ops, query=st.lists(_words, min_size=1, max_size=3).map(" ".join))
def test_twins_agree_on_any_sequence(
    db_url: str,
    runner: asyncio.Runner,
    ops: list[tuple[str, str, str]],
    query: str,
) -> None:
    """The same operations on each facade (each its own tenant) leave the same histories; and
    both facades recall the same items, in the same order, from either tenant's rows."""
    facades = {k: open_facade(k, db_url, HashEmbedder(), runner, TickingClock(T0)) for k in KINDS}
    tenants = {k: f"t-{uuid.uuid4().hex[:10]}" for k in KINDS}
    try:
        histories: dict[str, Any] = {}
        for kind_, f in facades.items():
            tenant = tenants[kind_]
            last = None
            for op, key, content in ops:
                if op == "keyed":
                    last = f.write(cand(tenant, key=key, content=content))
                elif op == "keyless":
                    last = f.write(cand(tenant, content=content))
                elif last is not None:
                    f.forget(last.id, tenant=tenant)
                    last = None
            histories[kind_] = {
                k: [(m.content, m.status) for m in f.history(tenant, "user", "alice", k)]
                for k in ("k1", "k2")
            }
        assert histories["sync"] == histories["async"]
        for tenant in tenants.values():
            req = RecallRequest(tenant=tenant, user_id="alice", query=query)
            seen = {k: f.recall(req) for k, f in facades.items()}
            assert seen["sync"].text == seen["async"].text
            assert [i.memory.id for i in seen["sync"].items] == [
                i.memory.id for i in seen["async"].items
            ]
    finally:
        for f in facades.values():
            f.close()
