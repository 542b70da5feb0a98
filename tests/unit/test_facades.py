"""One suite, both facades: MemoryStore and AsyncMemoryStore must behave alike (same results,
same errors, same degradation) because they run the same operations.

Here the tests that need no database, model or other process; the others are in
tests/db/test_facades_db.py."""

from __future__ import annotations

import asyncio
import logging

import pytest

from harness.errors import (
    InvalidInput,
    StoreUnavailable,
)
from harness.memory import (
    MemoryCandidate,
    RecallRequest,
)
from tests.support.facades import KINDS, unreachable_facade
from tests.support.hash_embedder import HashEmbedder


def cand(tenant: str, **kw: object) -> MemoryCandidate:
    base: dict[str, object] = {
        "tenant": tenant,
        "scope": "user",
        "scope_id": "alice",
        "kind": "fact",
        "content": "The office printer is on floor three",
    }
    base.update(kw)
    return MemoryCandidate(**base)  # type: ignore[arg-type]


def test_unreachable_database_degrades_recall_and_refuses_writes(
    tenant: str, runner: asyncio.Runner, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    f = unreachable_facade(kind, HashEmbedder(), runner)
    try:
        with caplog.at_level(logging.WARNING):
            r = f.recall(RecallRequest(tenant=tenant, user_id="alice", query="anything"))
        assert r.items == [] and r.degraded and not r.complete
        assert "recall failed" in caplog.text
        with pytest.raises(StoreUnavailable):
            f.recall(RecallRequest(tenant=tenant, user_id="alice", query="x", strict=True))
        with pytest.raises(StoreUnavailable):
            f.write(cand(tenant))
        with pytest.raises(InvalidInput):  # validation comes before any IO
            f.write({"tenant": tenant})
    finally:
        f.close()


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)
