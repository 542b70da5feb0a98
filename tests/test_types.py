"""Bad input gets a typed error naming the field (SPEC section 12)."""

from __future__ import annotations

from datetime import datetime

import pytest

from harness.errors import HarnessError, InvalidInput
from harness.memory import Kind, MemoryCandidate, RecallRequest, Scope, Status

GOOD = {
    "tenant": "acme",
    "scope": "user",
    "scope_id": "alice",
    "kind": "preference",
    "content": "Prefers short answers",
}


def test_enums_accept_lower_case_strings() -> None:
    assert Scope("user") is Scope.USER
    assert Kind("constraint") is Kind.CONSTRAINT
    assert Status("pending_approval") is Status.PENDING_APPROVAL
    cand = MemoryCandidate(**GOOD)
    assert cand.scope is Scope.USER and cand.kind is Kind.PREFERENCE


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"scope": "team"}, "scope"),
        ({"kind": "opinion"}, "kind"),
        ({"scope_id": None}, "scope_id"),
        ({"scope_id": "  "}, "scope_id"),
        ({"scope": "platform", "scope_id": "x"}, "scope_id"),
        ({"content": ""}, "content"),
        ({"content": "   \n\t"}, "content"),
        ({"tenant": ""}, "tenant"),
        ({"tenant": "   "}, "tenant"),
        ({"expires_at": datetime(2030, 1, 1)}, "expires_at"),
        ({"priority": "high"}, "priority"),
        ({"source": {"origin": "gossip"}}, "source.origin"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_candidate_names_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as info:
        MemoryCandidate(**{**GOOD, **change})
    assert isinstance(info.value, HarnessError) and isinstance(info.value, ValueError)
    assert field in info.value.fields
    assert field in str(info.value) and "__root__" not in str(info.value)


def test_scope_id_messages_are_specific() -> None:
    with pytest.raises(InvalidInput, match="scope_id is required for user scope"):
        MemoryCandidate(**{**GOOD, "scope_id": None})
    with pytest.raises(InvalidInput, match="scope_id must be empty for platform"):
        MemoryCandidate(**{**GOOD, "scope": "platform"})


def test_candidate_is_frozen() -> None:
    cand = MemoryCandidate(**GOOD)
    with pytest.raises(Exception, match="frozen"):
        cand.content = "other"  # type: ignore[misc]


def test_recall_request_validation() -> None:
    with pytest.raises(InvalidInput) as info:
        RecallRequest(tenant="acme", user_id="", budget_chars=-1)
    assert {"user_id", "budget_chars"} <= set(info.value.fields)
    with pytest.raises(InvalidInput, match="now"):
        RecallRequest(tenant="acme", user_id="a", now=datetime(2026, 1, 1))
