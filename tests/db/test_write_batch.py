"""A batched ``write_many`` stores what the same candidates written one by one store.

The batch path looks up a whole tenant's keys and contents at once, supersedes in one
statement and inserts in one; this property holds it to the one-by-one rules (dedup by
fingerprint, key supersession, pending platform proposals, intra-batch order), across two
tenants in one batch and on top of rows already stored.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.memory import Memory, MemoryCandidate, MemoryStore

#: (tenant index, scope/scope_id, key, kind, content, origin): a small domain, so that keys
#: and contents collide often.
# Also run on the Citus cluster (make test-citus): the same tests, sharded by tenant.
pytestmark = pytest.mark.citus


Spec = tuple[int, tuple[str, str | None], str | None, str, str, str]

specs = st.tuples(
    st.sampled_from([0, 1]),
    st.sampled_from([("user", "alice"), ("platform", None), ("session", "s1")]),
    st.sampled_from([None, None, "lang", "tone"]),
    st.sampled_from(["preference", "fact"]),
    st.sampled_from(["short answers", "Short  answers", "use french", "tabs"]),
    st.sampled_from(["api", "completion", "admin"]),
)


def _cand(spec: Spec, tenants: tuple[str, str]) -> MemoryCandidate:
    t, (scope, scope_id), key, kind, content, origin = spec
    return MemoryCandidate(
        tenant=tenants[t],
        scope=scope,
        scope_id=scope_id,
        kind=kind,
        key=key,
        content=content,
        source={"origin": origin},
    )


def _tenants() -> tuple[str, str]:
    base = uuid.uuid4().hex[:10]
    return (f"wb-{base}-a", f"wb-{base}-b")


def _rows(engine: sa.Engine, tenants: tuple[str, str]) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT id, tenant, scope, scope_id, kind, memory_key, content, status, origin, "
                "supersedes, superseded_by, fingerprint, embedding IS NOT NULL AS has_vector "
                "FROM memories WHERE tenant = ANY(:t)"
            ),
            {"t": list(tenants)},
        )
        return [dict(r) for r in rows.mappings()]


def _canonical(
    answers: list[Memory], rows: list[dict[str, Any]], tenants: tuple[str, str]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Answers and stored rows with ids replaced by the first position that answered them
    and tenants by their index (the two runs use different tenants and fresh ids)."""
    position: dict[uuid.UUID | None, int | None] = {None: None}
    for i, mem in enumerate(answers):
        position.setdefault(mem.id, i)
    tenant_index = {t: i for i, t in enumerate(tenants)}

    def answer(mem: Memory) -> tuple[Any, ...]:
        return (
            position[mem.id],
            tenant_index[mem.tenant],
            mem.scope.value,
            mem.key,
            mem.content,
            mem.status.value,
            position[mem.supersedes],
            position[mem.superseded_by],
        )

    stored = sorted(
        (
            position[r["id"]],
            tenant_index[r["tenant"]],
            r["scope"],
            r["scope_id"],
            r["kind"],
            r["memory_key"],
            r["content"],
            r["status"],
            r["origin"],
            position[r["supersedes"]],
            position[r["superseded_by"]],
            r["fingerprint"],
            r["has_vector"],
        )
        for r in rows
    )
    return [answer(m) for m in answers], stored


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    e = sa.create_engine(db_url)
    yield e
    e.dispose()


@settings(
    max_examples=40,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(before=st.lists(specs, max_size=5), batch=st.lists(specs, min_size=1, max_size=12))
def test_batched_write_many_equals_one_by_one(
    store: MemoryStore, engine: sa.Engine, before: list[Spec], batch: list[Spec]
) -> None:
    one_by_one, batched = _tenants(), _tenants()
    results = []
    for tenants, write_batch in ((one_by_one, False), (batched, True)):
        answers = [store.write(_cand(s, tenants)) for s in before]
        cands = [_cand(s, tenants) for s in batch]
        if write_batch:
            answers += store.write_many(cands)
        else:
            answers += [store.write(c) for c in cands]
        results.append(_canonical(answers, _rows(engine, tenants), tenants))
    (answers_seq, stored_seq), (answers_batch, stored_batch) = results
    assert answers_batch == answers_seq
    assert stored_batch == stored_seq
    # Every row stored is one some write answered (nothing inserted silently).
    assert all(row[0] is not None for row in stored_batch)


def test_batch_of_one_key_keeps_one_active_and_links_the_chain(store: MemoryStore) -> None:
    """Three writes of one key in one batch: the last is active, each links to the next."""
    tenant = _tenants()[0]
    written = store.write_many(
        [
            MemoryCandidate(
                tenant=tenant,
                scope="user",
                scope_id="bob",
                kind="preference",
                key="k",
                content=f"version {i}",
            )
            for i in range(3)
        ]
    )
    history = store.history(tenant, "user", "bob", "k")
    assert [m.content for m in history if m.status.value == "active"] == ["version 2"]
    by_id = {m.id: m for m in history}
    assert by_id[written[1].id].supersedes == written[0].id
    assert by_id[written[0].id].superseded_by == written[1].id
    assert by_id[written[2].id].supersedes == written[1].id
    assert by_id[written[1].id].superseded_by == written[2].id
