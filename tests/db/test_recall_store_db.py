"""Recall on PostgreSQL: isolation through every path, lifecycle filters, degradation, trace.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_recall_store.py."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.clock import FixedClock
from harness.memory import Kind, MemoryCandidate, MemoryStore, RecallConfig, RecallRequest, Scope
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import make_store

# Also run on the Citus cluster (make test-citus): the same tests, sharded by tenant.
pytestmark = pytest.mark.citus


TOPIC = "deploy checklist for the payment service rollout"


def cand(
    tenant: str, scope: str, scope_id: str | None, kind: str, content: str, **kw: object
) -> MemoryCandidate:
    return MemoryCandidate(
        tenant=tenant, scope=scope, scope_id=scope_id, kind=kind, content=content, **kw
    )  # type: ignore[arg-type]


def seed_world(store: MemoryStore, tenants: list[str]) -> dict[uuid.UUID, tuple[str, str, str]]:
    """Every tenant x scope x owner x kind gets one item about the same topic."""
    owners = {
        "session": ["s-1", "s-2"],
        "workflow": ["wf-1", "wf-2"],
        "user": ["alice", "bob"],
        "platform": [None],
    }
    where: dict[uuid.UUID, tuple[str, str, str]] = {}
    batch = []
    for t in tenants:
        for scope, ids in owners.items():
            for sid in ids:
                for kind in Kind:
                    batch.append(
                        cand(
                            t,
                            scope,
                            sid,
                            kind.value,
                            f"{TOPIC}: {kind.value} note of {scope} {sid or 'all'} in {t}",
                            source={"origin": "admin"},
                        )
                    )
    for m in store.write_many(batch):
        where[m.id] = (m.tenant, m.scope.value, m.scope_id)
    return where


def allowed(tenant: str, user: str, wf: str | None, sess: str | None) -> set[tuple[str, str, str]]:
    out = {(tenant, "platform", ""), (tenant, "user", user)}
    if wf:
        out.add((tenant, "workflow", wf))
    if sess:
        out.add((tenant, "session", sess))
    return out


@pytest.mark.parametrize("path", ["vector", "lexical"])
def test_nothing_crosses_tenants_users_workflows_sessions(
    db_url: str, clock: FixedClock, tenant: str, path: str
) -> None:
    store = (
        make_store(db_url, HashEmbedder(), clock)
        if path == "vector"
        else make_store(db_url, None, clock)
    )
    try:
        other = tenant + "-b"
        where = seed_world(store, [tenant, other])
        for user, wf, sess in [
            ("alice", "wf-1", "s-1"),
            ("bob", "wf-2", None),
            ("alice", None, "s-2"),
            ("carol", None, None),
        ]:
            r = store.recall(
                RecallRequest(
                    tenant=tenant,
                    user_id=user,
                    workflow_id=wf,
                    session_id=sess,
                    query=TOPIC,
                    budget_chars=100_000,
                    max_items=500,
                    max_item_chars=5000,
                    # every readable item must come back, so the relevance judge may not
                    # drop any: with hash vectors a row's probability can sit at the bar
                    relevance_threshold=0.0,
                )
            )
            ok = allowed(tenant, user, wf, sess)
            got = {where[i.memory.id] for i in r.items}
            assert got <= ok
            assert all(where[o.memory_id] in ok for o in r.omitted)
            # and what is readable does come back (the paths actually ran)
            kinds = {(where[i.memory.id], i.memory.kind) for i in r.items}
            for place in ok & set(where.values()):
                for kind in (Kind.CONSTRAINT, Kind.PREFERENCE, Kind.FACT):
                    assert (place, kind) in kinds, (place, kind)
    finally:
        store.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    layout=st.lists(
        st.tuples(
            st.sampled_from(["A", "B"]),
            st.sampled_from(["session", "workflow", "user", "platform"]),
            st.sampled_from(["1", "2"]),
            st.sampled_from([k.value for k in Kind]),
        ),
        min_size=1,
        max_size=12,
    ),
    who=st.tuples(
        st.sampled_from(["1", "2"]),
        st.sampled_from([None, "1", "2"]),
        st.sampled_from([None, "1", "2"]),
    ),
    query=st.sampled_from(["", TOPIC, "something else entirely", "note of user 2"]),
)
def test_isolation_property(store: MemoryStore, layout: list, who: tuple, query: str) -> None:
    run = uuid.uuid4().hex[:8]
    tenants = {"A": f"iso-{run}-a", "B": f"iso-{run}-b"}
    batch = []
    for n, (t, scope, sid, kind) in enumerate(layout):
        batch.append(
            cand(
                tenants[t],
                scope,
                None if scope == "platform" else f"{scope}{sid}",
                kind,
                f"{TOPIC} note of {scope} {sid} number {n}",
                source={"origin": "api"},
            )
        )
    written = store.write_many(batch)
    user, wf, sess = who
    r = store.recall(
        RecallRequest(
            tenant=tenants["A"],
            user_id=f"user{user}",
            workflow_id=f"workflow{wf}" if wf else None,
            session_id=f"session{sess}" if sess else None,
            query=query,
            budget_chars=100_000,
            max_items=500,
            max_item_chars=5000,
        )
    )
    ok = allowed(
        tenants["A"],
        f"user{user}",
        f"workflow{wf}" if wf else None,
        f"session{sess}" if sess else None,
    )
    place = {m.id: (m.tenant, m.scope.value, m.scope_id) for m in written}
    for item in r.items:
        assert place[item.memory.id] in ok
    for o in r.omitted:
        assert place[o.memory_id] in ok


def test_expired_pending_rejected_superseded_are_never_recalled(
    store: MemoryStore, tenant: str, clock: FixedClock
) -> None:
    live = store.write(cand(tenant, "user", "alice", "fact", f"{TOPIC} live"))
    store.write(
        cand(
            tenant,
            "user",
            "alice",
            "fact",
            f"{TOPIC} expired",
            expires_at=clock.at + timedelta(minutes=5),
        )
    )
    pending = store.write(
        cand(
            tenant,
            "platform",
            None,
            "constraint",
            f"{TOPIC} pending",
            source={"origin": "completion"},
        )
    )
    rejected = store.write(
        cand(
            tenant,
            "platform",
            None,
            "constraint",
            f"{TOPIC} rejected",
            source={"origin": "verdict"},
        )
    )
    store.reject(rejected.id, "admin", "no", tenant=tenant)
    old = store.write(cand(tenant, "user", "alice", "preference", f"{TOPIC} old", key="k"))
    new = store.write(cand(tenant, "user", "alice", "preference", f"{TOPIC} new", key="k"))
    later = clock.at + timedelta(minutes=10)
    r = store.recall(RecallRequest(tenant=tenant, user_id="alice", query=TOPIC, now=later))
    got = {i.memory.id for i in r.items} | {o.memory_id for o in r.omitted}
    assert got == {live.id, new.id}
    assert pending.id not in got and old.id not in got
    # at a time before expiry, the expiring item is readable
    r2 = store.recall(RecallRequest(tenant=tenant, user_id="alice", query=TOPIC, now=clock.at))
    assert len({i.memory.id for i in r2.items}) == 3


def test_relevance_floor_keeps_unrelated_facts_out(
    semantic_store: MemoryStore, tenant: str
) -> None:
    s = semantic_store
    pref = s.write(cand(tenant, "user", "alice", "preference", "Answers in British English"))
    fact = s.write(
        cand(tenant, "user", "alice", "fact", "The Lyon office badge reader is model HX-200")
    )
    r = s.recall(
        RecallRequest(tenant=tenant, user_id="alice", query="Write a haiku about autumn leaves")
    )
    assert [i.memory.id for i in r.items] == [pref.id]
    assert f"dropped judge      {fact.id}" in r.explain()
    r2 = s.recall(
        RecallRequest(tenant=tenant, user_id="alice", query="which badge reader do we use in Lyon?")
    )
    assert fact.id in [i.memory.id for i in r2.items]


def test_narrow_scope_over_cap_is_ranked(db_url: str, clock: FixedClock, tenant: str) -> None:
    s = make_store(db_url, HashEmbedder(), clock, narrow_scope_cap=3, recall_top_n=2)
    try:
        s.write_many(
            [cand(tenant, "workflow", "wf", "lesson", f"unrelated lesson {i}") for i in range(4)]
        )
        hit = s.write(cand(tenant, "workflow", "wf", "lesson", "tables need a header row"))
        r = s.recall(
            RecallRequest(
                tenant=tenant, user_id="u", workflow_id="wf", query="tables need a header row"
            )
        )
        assert hit.id in [i.memory.id for i in r.items]
        assert len(r.items) <= 2
        assert "ranked by relevance" in r.explain()
        few = make_store(db_url, HashEmbedder(), clock, narrow_scope_cap=50)
        r_all = few.recall(
            RecallRequest(
                tenant=tenant, user_id="u", workflow_id="wf", query="nothing related at all"
            )
        )
        assert len(r_all.items) == 5  # under the cap: every workflow lesson, whatever the query
        few.close()
    finally:
        s.close()


def test_explain_covers_precedence_and_budget(store: MemoryStore, tenant: str) -> None:
    store.write(cand(tenant, "user", "alice", "preference", "Detailed answers", key="len"))
    store.write(cand(tenant, "workflow", "wf", "preference", "Three-line summary", key="len"))
    store.write(cand(tenant, "user", "alice", "preference", "x" * 300))
    r = store.recall(
        RecallRequest(
            tenant=tenant, user_id="alice", workflow_id="wf", budget_chars=200, max_item_chars=1000
        )
    )
    text = r.explain()
    assert "precedence" in text and "loses to" in text
    assert "budget" in text
    assert {o.reason for o in r.omitted} == {"conflict", "budget"}
    assert r.complete  # only preferences were left out
    assert Scope.WORKFLOW.value in r.text


def test_unexpected_failure_inside_recall_also_degrades(
    store: MemoryStore, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise KeyError("a bug, not an outage")

    monkeypatch.setattr(store.retriever, "fetch_op", broken)
    r = store.recall(RecallRequest(tenant=tenant, user_id="alice", query="anything"))
    assert r.items == [] and r.degraded and not r.complete
    with pytest.raises(KeyError):
        store.recall(RecallRequest(tenant=tenant, user_id="alice", query="x", strict=True))


def test_explain_names_the_vector_strategy(store: MemoryStore, tenant: str) -> None:
    store.write(cand(tenant, "user", "alice", "fact", "The badge reader is model HX-200"))
    r = store.recall(RecallRequest(tenant=tenant, user_id="alice", query="badge reader"))
    assert "exact scan of the readable rows" in r.explain()
    hnsw = make_store(store.url, store.embedder, recall=RecallConfig(strategy="hnsw"))
    try:
        r2 = hnsw.recall(RecallRequest(tenant=tenant, user_id="alice", query="badge reader"))
    finally:
        hnsw.close()
    assert "HNSW index" in r2.explain()
    assert [i.memory.content for i in r2.items] == [i.memory.content for i in r.items]


def test_explain_says_a_missing_word_match_in_words(store: MemoryStore, tenant: str) -> None:
    """A signal a retriever did not return reads as words, never as ``idf_coverage=-``."""
    store.write(
        MemoryCandidate(
            tenant=tenant, scope="user", scope_id="u", kind="fact", content="kestrel cluster"
        )
    )
    vector_only = store.recall(
        RecallRequest(tenant=tenant, user_id="u", query="zebra", relevance_threshold=1.0)
    ).explain()
    assert "no word match" in vector_only and "idf_coverage=-" not in vector_only
