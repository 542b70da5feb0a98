"""Hypothesis fuzz of the public API against the embedded PostgreSQL: whatever the shape of the
input, the answer is a result or a typed error naming the field, and a refused call writes
nothing.

Here the tests that need no database, model or other process; the others are in
tests/db/test_fuzz_api_db.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import InvalidInput, MemoryNotFound, MemoryRejected
from harness.memory import MemoryCandidate

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


@FUZZ
@given(data=st.data())
def test_model_validate_is_typed(tenant: str, data: st.DataObject) -> None:
    raw = data.draw(candidate_dicts(tenant))
    _, error = outcome(lambda: MemoryCandidate.model_validate(raw))
    assert names_fields(error)
    encoded = json.dumps(raw, default=str)
    _, error = outcome(lambda: MemoryCandidate.model_validate_json(encoded))
    assert names_fields(error)
