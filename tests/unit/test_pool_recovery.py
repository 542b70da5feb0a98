"""Pooled connections the server ended are replaced at checkout, without a ping per checkout:
the next call after ``pg_terminate_backend`` (what a server restart or an idle timeout does to
a pool) succeeds on both facades.

Here the tests that need no database, model or other process; the others are in
tests/db/test_pool_recovery_db.py."""

from __future__ import annotations

from harness.memory.store.connect import engine_options
from harness.settings import Settings


def test_pool_options_do_not_ping_each_checkout() -> None:
    options = engine_options(Settings.from_env())
    assert options["pool_pre_ping"] is False
    assert 0 < options["pool_recycle"] <= 600
