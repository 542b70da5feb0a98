"""Settings (pydantic-settings, secrets hidden), the LLM extractor's HARNESS_LLM_* settings,
the HTTP server's header timeout and token expiry, --help texts and single-write error texts.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_ops_settings_http.py, tests/system/test_ops_settings_http_system.py."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import InvalidInput
from harness.memory import MemoryCandidate, MemoryStore


def test_single_write_errors_do_not_mention_candidate_indexes(
    store: MemoryStore, tenant: str
) -> None:
    bad: dict[str, Any] = {"tenant": tenant, "scope": "user", "kind": "fact", "content": "x"}
    with pytest.raises(InvalidInput) as single:
        store.write(bad)
    assert "candidate" not in str(single.value) and "__root__" not in str(single.value)
    assert "scope_id" in single.value.fields
    good = {**bad, "scope_id": "u"}
    with pytest.raises(InvalidInput) as batch:
        store.write_many([good, bad])
    assert "candidate 1" in str(batch.value)
    with pytest.raises(InvalidInput) as long:
        store.write(MemoryCandidate(**{**good, "content": "y" * 10_000}))
    assert str(long.value).startswith("content:")
