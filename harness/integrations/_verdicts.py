"""After the verdict: the candidates a run leaves behind, and their writes (sync and async).

Shared by the LangGraph and Anthropic integrations. Pure candidate building; the two write
functions are the only IO, and they never raise for a refused or failed candidate: each lands
in :class:`Remembered` so nothing is lost silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.errors import HarnessError
from harness.memory.domain.types import Memory, MemoryCandidate
from harness.memory.store.aio import AsyncMemoryStore
from harness.memory.store.sync import MemoryStore
from harness.run.engine import Verdict
from harness.run.flow import report_failed_write
from harness.run.lessons import lessons_from_verdicts

__all__ = ["Remembered", "lesson_for", "write_candidates", "write_candidates_async"]


@dataclass
class Remembered:
    """What a post-verdict write did: stored memories, guard refusals, failed writes."""

    written: list[Memory] = field(default_factory=list)
    rejected: list[tuple[MemoryCandidate, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    forgotten: int = 0


def lesson_for(
    verdict: Verdict,
    *,
    tenant: str,
    user_id: str,
    workflow_id: str | None,
    task_input: str,
    run_id: str,
) -> MemoryCandidate | None:
    """The lesson a rejection with concrete feedback teaches; None for an acceptance or a
    generic complaint ("wrong", "retry"), which teaches nothing."""
    lessons = lessons_from_verdicts(
        [verdict],
        tenant=tenant,
        user_id=user_id,
        workflow_id=workflow_id,
        task_input=task_input,
        run_id=run_id,
    )
    return lessons[0] if lessons else None


def write_candidates(store: MemoryStore, candidates: Sequence[MemoryCandidate]) -> Remembered:
    """Write each candidate (guard first); refusals and failures are reported, not raised."""
    out = Remembered()
    for cand in candidates:
        try:
            out.written.append(store.write(cand))
        except HarnessError as exc:
            report_failed_write(cand, exc, out.rejected, out.errors)
    return out


async def write_candidates_async(
    store: AsyncMemoryStore, candidates: Sequence[MemoryCandidate]
) -> Remembered:
    """:func:`write_candidates` on an :class:`AsyncMemoryStore`."""
    out = Remembered()
    for cand in candidates:
        try:
            out.written.append(await store.write(cand))
        except HarnessError as exc:
            report_failed_write(cand, exc, out.rejected, out.errors)
    return out
