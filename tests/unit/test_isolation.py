"""Isolation and integrity against the embedded PostgreSQL: identity strings, tenant-checked
calls on ids, keyless dedup under concurrency, admin writes over pending ones, one model's
vectors per store.

Here the tests that need no database, model or other process; the others are in
tests/db/test_isolation_db.py."""

from __future__ import annotations

import pytest

from harness.errors import InvalidInput
from harness.memory import MemoryCandidate


def test_model_validate_raises_invalid_input_naming_fields() -> None:
    with pytest.raises(InvalidInput) as info:
        MemoryCandidate.model_validate({"tenant": 1, "scope": "user", "kind": "fact"})
    assert {"tenant", "content"} <= set(info.value.fields)
    with pytest.raises(InvalidInput) as info:
        MemoryCandidate.model_validate_json(
            '{"tenant": "t", "scope": "user", "scope_id": "a", '
            '"kind": "fact", "content": "x\\u0000"}'
        )
    assert info.value.fields == ("content",)
