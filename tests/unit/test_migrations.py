"""Alembic: one linear head, reversible, no drift, safe under concurrent connects.

Here the tests that need no database, model or other process; the others are in
tests/db/test_migrations_db.py, tests/system/test_migrations_system.py."""

from __future__ import annotations

from alembic.script import ScriptDirectory

from harness.memory.store.migrate import alembic_config


def test_single_linear_head() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert len(script.get_heads()) == 1
    revs = list(script.walk_revisions())
    assert all(len(r._all_down_revisions) <= 1 for r in revs)
