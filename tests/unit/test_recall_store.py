"""Recall on PostgreSQL: isolation through every path, lifecycle filters, degradation, trace.

Here the tests that need no database, model or other process; the others are in
tests/db/test_recall_store_db.py."""

from __future__ import annotations

import logging

import pytest

from harness.errors import StoreUnavailable
from harness.memory import RecallRequest
from tests.support.stores import unreachable_store


def test_database_outage_gives_empty_incomplete_result(caplog: pytest.LogCaptureFixture) -> None:
    down = unreachable_store()
    try:
        req = RecallRequest(tenant="acme", user_id="alice", query="anything")
        with caplog.at_level(logging.WARNING):
            r = down.recall(req)
        assert r.items == [] and r.text == "" and r.complete is False and r.degraded
        assert "recall failed" in caplog.text
        assert "unavailable" in r.explain()
        # nothing was read: not the same as a constraint that could not be placed
        assert "MEMORY UNAVAILABLE" in r.explain()
        assert "could not be placed" not in r.explain()
        caplog.clear()
        with caplog.at_level(logging.WARNING), pytest.raises(StoreUnavailable):
            down.recall(RecallRequest(tenant="acme", user_id="alice", query="x", strict=True))
        assert "strict recall raises" in caplog.text
        assert "continues without memory" not in caplog.text
    finally:
        down.close()
