"""After the final verdict: what a finished run teaches, and how it is written.

The one place for the engine and every integration (SPEC section 6): a lesson per distinct
concrete rejection feedback, the extractor's candidates when the final verdict accepted the
output, and each candidate written through the guard, a refusal or a failure reported in
:class:`Remembered`, never raised and never lost silently. Nothing here runs before the verdict
is final.

The writing is a generator of effects (:class:`Extract`, :class:`Write`): the engine's flow
yields from :func:`teach`; an integration runs :func:`teach` or :func:`write_all` on its store
with :func:`remember` (blocking) or :func:`aremember` (asyncio).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import HarnessError, MemoryRejected
from harness.memory import AsyncMemoryStore, MemoryStore
from harness.memory.domain.caller import Caller
from harness.memory.domain.types import Memory, MemoryCandidate
from harness.run.extract import ExtractionContext, Extractor
from harness.run.lessons import lessons_from_verdicts
from harness.run.types import Verdict

__all__ = [
    "Extract",
    "Remembered",
    "Teaching",
    "Write",
    "aremember",
    "lessons",
    "remember",
    "teach",
    "write_all",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Extract:
    """Ask the extractor for candidates from a completed run: answers a list of candidates."""

    input: str
    output: str
    context: ExtractionContext


@dataclass(frozen=True)
class Write:
    """``store.write(candidate)``: answers the stored memory."""

    candidate: MemoryCandidate


@dataclass
class Remembered:
    """What a post-verdict write did: stored memories, guard refusals (with the reason),
    failed writes (as text), and memories an integration forgot on the run's behalf."""

    written: list[Memory] = field(default_factory=list)
    rejected: list[tuple[MemoryCandidate, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    forgotten: int = 0


#: The writing after a verdict: yields :class:`Extract` and :class:`Write`, returns what it did.
Teaching = Generator[Extract | Write, Any, Remembered]


def lessons(
    verdicts: Sequence[Verdict], *, caller: Caller, task_input: str, run_id: str
) -> list[MemoryCandidate]:
    """One lesson per distinct concrete feedback of a rejecting verdict, for ``caller``'s
    workflow (or user); an acceptance or a generic complaint teaches nothing. Pure."""
    return lessons_from_verdicts(
        verdicts,
        tenant=caller.tenant,
        user_id=caller.user_id,
        workflow_id=caller.workflow_id,
        task_input=task_input,
        run_id=run_id,
    )


def teach(
    verdicts: Sequence[Verdict],
    *,
    caller: Caller,
    task_input: str,
    run_id: str,
    output: str | None,
    extract: bool,
) -> Teaching:
    """Everything a finished run leaves behind: its lessons, then (when the final verdict
    accepted ``output`` and ``extract``) the extractor's candidates, each written. A broken
    extractor costs its candidates only (logged)."""
    cands = lessons(verdicts, caller=caller, task_input=task_input, run_id=run_id)
    accepted = bool(verdicts) and verdicts[-1].accepted
    if extract and accepted and output is not None:
        ctx = ExtractionContext.for_caller(caller, run_id)
        try:
            cands += yield Extract(task_input, output, ctx)
        except Exception as exc:  # a broken extractor must not break the run
            log.warning("extractor failed; no candidates from this run: %s", exc)
    return (yield from write_all(cands))


def write_all(candidates: Sequence[MemoryCandidate]) -> Teaching:
    """Write each candidate (the guard first); refusals and failures are reported, not raised."""
    out = Remembered()
    for cand in candidates:
        try:
            out.written.append((yield Write(cand)))
        except HarnessError as exc:
            _report_failed_write(cand, exc, out)
    return out


def _report_failed_write(cand: MemoryCandidate, exc: HarnessError, out: Remembered) -> None:
    if isinstance(exc, MemoryRejected):
        log.warning("candidate refused by the guard: %s", exc)
        out.rejected.append((cand, exc.reason))
    else:
        log.error("memory write failed after the verdict (not stored): %s", exc)
        out.errors.append(f"{cand.kind.value} {cand.key or ''}: {exc}")


def remember(
    store: MemoryStore, teaching: Teaching, extractor: Extractor | None = None
) -> Remembered:
    """Run ``teaching`` on a blocking store (and ``extractor``). Side effects: its writes."""
    try:
        step = next(teaching)
        while True:
            try:
                if isinstance(step, Extract):
                    assert extractor is not None  # teach asks only when extracting
                    result: Any = extractor.extract(step.input, step.output, step.context)
                else:
                    result = store.write(step.candidate)
            except BaseException as exc:  # the teaching decides what degrades and what propagates
                step = teaching.throw(exc)
            else:
                step = teaching.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def aremember(
    store: MemoryStore | AsyncMemoryStore, teaching: Teaching, extractor: Extractor | None = None
) -> Remembered:
    """Run ``teaching`` under asyncio: an :class:`AsyncMemoryStore`'s writes awaited, a
    :class:`MemoryStore`'s and the extractor (blocking HTTP) in a worker thread."""
    try:
        step = next(teaching)
        while True:
            try:
                if isinstance(step, Extract):
                    assert extractor is not None  # teach asks only when extracting
                    result: Any = await asyncio.to_thread(
                        extractor.extract, step.input, step.output, step.context
                    )
                elif isinstance(store, AsyncMemoryStore):
                    result = await store.write(step.candidate)
                else:
                    result = await asyncio.to_thread(store.write, step.candidate)
            except BaseException as exc:  # the teaching decides what degrades and what propagates
                step = teaching.throw(exc)
            else:
                step = teaching.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
