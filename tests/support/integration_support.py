"""Shared pieces of the runtime-integration tests: row counts, a workflow lesson (their asyncio
store is the ``astore`` fixture of tests/db/integrations/conftest.py)."""

from __future__ import annotations

import sqlalchemy as sa

from harness.memory import Kind, MemoryCandidate, Scope

LESSON_FEEDBACK = "The summary must be exactly three lines and cite the source document."


def count_memories(db_url: str, tenant: str) -> int:
    """Every row of ``tenant`` in the memories table, whatever its status (owner connection)."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    sa.text("SELECT count(*) FROM memories WHERE tenant = :t"), {"t": tenant}
                ).scalar_one()
            )
    finally:
        engine.dispose()


def workflow_lesson(tenant: str, content: str, workflow_id: str = "wf-1") -> MemoryCandidate:
    return MemoryCandidate(
        tenant=tenant,
        scope=Scope.WORKFLOW,
        scope_id=workflow_id,
        kind=Kind.LESSON,
        content=content,
        source={"origin": "api"},
    )
