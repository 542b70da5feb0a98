"""Hypothesis fuzz of the public API against the embedded PostgreSQL: whatever the shape of the
input, the answer is a result or a typed error naming the field, and a refused call writes
nothing.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_fuzz_api.py."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from bench.common import all_tenants
from harness.errors import InvalidInput, MemoryNotFound
from harness.memory import Memory, MemoryStore, RecallResult
from tests.unit.test_fuzz_api import FUZZ, GOOD, anything, candidate_dicts, names_fields, outcome


def total_rows(store: MemoryStore) -> int:
    with all_tenants(store) as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM memories")).scalar_one())


@FUZZ
@given(data=st.data())
def test_write_answers_a_memory_or_a_typed_error(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    raw = data.draw(candidate_dicts(tenant))
    as_list = data.draw(st.booleans())
    before = total_rows(store)
    written, error = outcome(
        lambda: (
            store.write_many([raw, dict(GOOD, tenant=tenant)]) if as_list else [store.write(raw)]
        )
    )
    assert names_fields(error) and not isinstance(error, MemoryNotFound)
    if error is not None:
        assert total_rows(store) == before
    else:
        assert all(isinstance(m, Memory) for m in written)


@FUZZ
@given(data=st.data())
def test_recall_answers_a_result_or_a_typed_error(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    request: Any = {"tenant": tenant, "user_id": "alice", "query": "printer"}
    for name in data.draw(
        st.lists(
            st.sampled_from(
                [
                    "tenant",
                    "user_id",
                    "workflow_id",
                    "session_id",
                    "query",
                    "budget_chars",
                    "max_items",
                    "now",
                    "strict",
                    "extra",
                ]
            ),
            max_size=3,
            unique=True,
        )
    ):
        request[name] = data.draw(anything)
    if data.draw(st.integers(0, 9)) == 0:
        request = data.draw(anything)
    result, error = outcome(lambda: store.recall(request))
    assert isinstance(error, InvalidInput | None) and names_fields(error)
    if error is None:
        assert isinstance(result, RecallResult) and not result.degraded


@FUZZ
@given(data=st.data())
def test_calls_on_ids_answer_not_found_or_a_typed_error(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    memory_id = data.draw(st.one_of(anything, st.uuids(), st.uuids().map(str)))
    approver = data.draw(st.one_of(st.just("admin"), anything))
    reason = data.draw(st.one_of(st.just("no"), anything))
    who = data.draw(st.one_of(st.just(tenant), anything))
    for call in (
        lambda: store.approve(memory_id, approver, tenant=who),
        lambda: store.reject(memory_id, approver, reason, tenant=who),
    ):
        _, error = outcome(call)
        # No memory exists: nothing can be approved or rejected.
        assert isinstance(error, InvalidInput | MemoryNotFound) and names_fields(error)
    for read, empty in (
        (lambda: store.get(memory_id, tenant=who), None),
        (lambda: store.forget(memory_id, tenant=who), False),
    ):
        answer, error = outcome(read)
        assert isinstance(error, InvalidInput | None) and names_fields(error)
        assert error is not None or answer is empty


def test_a_valid_id_of_the_fuzzed_shapes_still_works(store: MemoryStore, tenant: str) -> None:
    m = store.write(dict(GOOD, tenant=tenant))
    assert store.get(str(m.id), tenant=tenant) == m
    assert store.get(uuid.UUID(str(m.id)), tenant=tenant) == m
