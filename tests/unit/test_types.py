"""Bad input gets a typed error naming the field (SPEC section 12)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError, InvalidInput
from harness.memory import Kind, MemoryCandidate, RecallRequest, Scope, Status
from harness.memory.domain.types import Memory, Origin
from harness.memory.store.rows import memory_from_row

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


# --- rows read back from the store ------------------------------------------------------------

_texts = st.text(min_size=0, max_size=40)
_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=20)
_moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


@settings(max_examples=200)
@given(
    st.fixed_dictionaries(
        {
            "id": st.uuids(),
            "tenant": _ids,
            "scope": st.sampled_from([s.value for s in Scope]),
            "scope_id": _ids | st.just(""),
            "kind": st.sampled_from([k.value for k in Kind]),
            "memory_key": st.none() | _ids,
            "content": _texts,
            "context": st.none() | _texts,
            "priority": st.integers(-1000, 1000),
            "status": st.sampled_from([s.value for s in Status]),
            "origin": st.sampled_from([o.value for o in Origin]),
            "run_id": st.none() | _ids,
            "verdict_id": st.none() | _ids,
            "created_at": _moments,
            "expires_at": st.none() | _moments,
            "supersedes": st.none() | st.uuids(),
            "superseded_by": st.none() | st.uuids(),
            "fingerprint": _ids,
            "approval_decision": st.none() | st.sampled_from(["approved", "rejected"]),
            "approved_by": _ids,
            "approved_at": _moments,
            "approval_reason": st.none() | _texts,
            "has_vector": st.booleans(),
        }
    )
)
def test_a_row_reads_back_as_the_validated_memory_would(row: dict[str, object]) -> None:
    """A row of the store reads back as the memory its values describe: every field, in its
    domain type (enums, nested provenance and approval), equal and hashing alike."""
    built = memory_from_row(row)
    validated = Memory.model_validate(
        {
            "id": row["id"],
            "tenant": row["tenant"],
            "scope": row["scope"],
            "scope_id": row["scope_id"],
            "kind": row["kind"],
            "key": row["memory_key"],
            "content": row["content"],
            "context": row["context"],
            "priority": row["priority"],
            "status": row["status"],
            "source": {
                "origin": row["origin"],
                "run_id": row["run_id"],
                "verdict_id": row["verdict_id"],
            },
            "created_at": row["created_at"],
            "expires_at": row["expires_at"],
            "supersedes": row["supersedes"],
            "superseded_by": row["superseded_by"],
            "fingerprint": row["fingerprint"],
            "approval": (
                {
                    "decision": row["approval_decision"],
                    "by": row["approved_by"],
                    "at": row["approved_at"],
                    "reason": row["approval_reason"],
                }
                if row["approval_decision"]
                else None
            ),
            "has_embedding": row["has_vector"],
        }
    )
    assert built == validated
    assert built.model_dump() == validated.model_dump()
    assert hash(built) == hash(validated)
    assert type(built.scope) is Scope and type(built.kind) is Kind and type(built.status) is Status
    assert type(built.source.origin) is Origin
    assert (built.approval is None) == (not row["approval_decision"])
