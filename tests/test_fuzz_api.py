"""Hypothesis fuzz of the public API against the embedded PostgreSQL: whatever the shape of the
input, the answer is a result or a typed error naming the field, and a refused call writes
nothing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import InvalidInput, MemoryNotFound, MemoryRejected
from harness.memory import Memory, MemoryCandidate, MemoryStore, RecallResult

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Strings an attacker or a careless caller would send: padding, controls, NUL, lone
# surrogates, over-long, plus arbitrary text with surrogates allowed.
nasty_strings = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "alice ",
            "\u3000tA\u3000",
            "a\x00b",
            "\x00",
            "lone\ud800",
            "\udfff",
            "a\nb",
            "x" * 201,
            "y" * 5000,
            "'; DROP TABLE memories; --",
        ]
    ),
    st.text(alphabet=st.characters(exclude_categories=()), max_size=30),
)
datetimes = st.one_of(
    st.datetimes(),  # naive
    st.datetimes(timezones=st.just(UTC)),
    st.sampled_from(
        [
            datetime.max.replace(tzinfo=UTC),
            datetime.min.replace(tzinfo=timezone(timedelta(hours=14))),
            datetime(9999, 12, 31, tzinfo=timezone(timedelta(hours=-12))),
        ]
    ),
)
json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | nasty_strings,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
anything = st.one_of(json_like, nasty_strings, datetimes, st.just(object()))

GOOD: dict[str, Any] = {
    "scope": "user",
    "scope_id": "alice",
    "kind": "fact",
    "key": None,
    "content": "the printer on floor 3 jams on A3 paper",
    "context": None,
    "priority": 0,
    "expires_at": None,
    "source": {"origin": "api"},
}
FIELDS = [*GOOD, "tenant", "surprise"]


@st.composite
def candidate_dicts(draw: st.DrawFn, tenant: str) -> dict[str, Any]:
    raw: dict[str, Any] = {"tenant": tenant, **GOOD}
    for name in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True)):
        raw[name] = draw(anything)
    if draw(st.booleans()):
        raw["source"] = {"origin": "api", "run_id": draw(anything)}
    return raw


TYPED = (InvalidInput, MemoryRejected, MemoryNotFound)


def outcome(call: Callable[[], Any]) -> tuple[Any, Exception | None]:
    """(result, None) or (None, the typed error); any other exception fails the test."""
    try:
        return call(), None
    except TYPED as exc:
        return None, exc


def names_fields(exc: Exception | None) -> bool:
    return not isinstance(exc, InvalidInput) or (
        bool(exc.fields) and all(isinstance(f, str) and f for f in exc.fields)
    )


def total_rows(store: MemoryStore) -> int:
    with store.maintenance("test") as conn:
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
def test_model_validate_is_typed(tenant: str, data: st.DataObject) -> None:
    raw = data.draw(candidate_dicts(tenant))
    _, error = outcome(lambda: MemoryCandidate.model_validate(raw))
    assert names_fields(error)
    encoded = json.dumps(raw, default=str)
    _, error = outcome(lambda: MemoryCandidate.model_validate_json(encoded))
    assert names_fields(error)


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
