"""After the final verdict: what a finished run teaches, and how it is written.

The one place for the engine and every integration (SPEC sections 6 and 6a): what the run
teaches its lessons (:func:`learn`: each concrete rejection feedback reinforces the lesson it
restates or becomes a new one, and each lesson the run placed gets its outcome), the
extractor's candidates when the final verdict accepted the output, each written through the
guard, a refusal or a failure reported in :class:`Remembered`, never raised and never lost
silently. Nothing here runs before the verdict is final.

The writing is a generator of effects (:class:`Learn`, :class:`Extract`, :class:`Write`): the
engine's flow yields from :func:`teach`; an integration runs :func:`teach`, :func:`learn` or
:func:`write_all` on its store with :func:`remember` (blocking) or :func:`aremember` (asyncio).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import HarnessError, MemoryRejected
from harness.memory import AsyncMemoryStore, MemoryStore
from harness.memory.domain.caller import Caller
from harness.memory.domain.learning import Judged, Learned, LessonReport
from harness.memory.domain.types import Memory, MemoryCandidate
from harness.run.extract import ExtractionContext, Extractor
from harness.run.types import Verdict

__all__ = [
    "Extract",
    "Learn",
    "Remembered",
    "Teaching",
    "Write",
    "aremember",
    "chain",
    "learn",
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
class Learn:
    """``store.learn(report)``: answers :class:`Learned`."""

    report: LessonReport


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
    #: What the lessons learned (None when learning failed or was not asked for).
    learned: Learned | None = None

    def absorb(self, other: Remembered) -> None:
        """Add ``other``'s results to these."""
        self.written += other.written
        self.rejected += other.rejected
        self.errors += other.errors
        self.forgotten += other.forgotten
        self.learned = other.learned or self.learned


#: The writing after a verdict: yields :class:`Learn`, :class:`Extract` and :class:`Write`,
#: returns what it did.
Teaching = Generator[Learn | Extract | Write, Any, Remembered]


def learn(
    verdicts: Sequence[Verdict],
    *,
    caller: Caller,
    task_input: str,
    run_id: str,
    placed: Sequence[uuid.UUID] = (),
) -> Teaching:
    """What the run teaches its lessons (``store.learn``): ``placed`` are the memories its
    recall put in the context (empty when it did not recall). A failure is reported in
    ``errors`` (logged), never raised."""
    out = Remembered()
    if not verdicts:
        return out
    report = LessonReport.for_caller(
        caller,
        run_id=run_id,
        task=task_input,
        placed=tuple(placed),
        verdicts=tuple(
            Judged(accepted=v.accepted, feedback=v.feedback, id=v.id, key=v.key, misled=v.misled)
            for v in verdicts
        ),
    )
    try:
        learned: Learned = yield Learn(report)
    except HarnessError as exc:
        log.error("memory write failed after the verdict (lessons not recorded): %s", exc)
        out.errors.append(f"lessons of run {run_id}: {exc}")
        return out
    out.learned = learned
    out.written += learned.written
    out.rejected += learned.rejected
    return out


def teach(
    verdicts: Sequence[Verdict],
    *,
    caller: Caller,
    task_input: str,
    run_id: str,
    output: str | None,
    extract: bool,
    placed: Sequence[uuid.UUID] = (),
    conversation: tuple[str | None, str | None] = (None, None),
) -> Teaching:
    """Everything a finished run leaves behind: what it teaches its lessons (:func:`learn`),
    then (when the final verdict accepted ``output`` and ``extract``) the extractor's
    candidates, each written (grounded in ``conversation``: the archived conversation and
    turn the run answered, when known). A broken extractor costs its candidates only."""
    out = yield from learn(
        verdicts, caller=caller, task_input=task_input, run_id=run_id, placed=placed
    )
    accepted = bool(verdicts) and verdicts[-1].accepted
    cands: list[MemoryCandidate] = []
    if extract and accepted and output is not None:
        ctx = ExtractionContext.for_caller(
            caller, run_id, conversation_id=conversation[0], turn_id=conversation[1]
        )
        try:
            cands += yield Extract(task_input, output, ctx)
        except Exception as exc:  # a broken extractor must not break the run
            log.warning("extractor failed; no candidates from this run: %s", exc)
    out.absorb((yield from write_all(cands)))
    return out


def chain(*teachings: Teaching) -> Teaching:
    """Run ``teachings`` one after the other; what they did, together."""
    out = Remembered()
    for teaching in teachings:
        out.absorb((yield from teaching))
    return out


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
                elif isinstance(step, Learn):
                    result = store.learn(step.report)
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
                elif isinstance(step, Learn):
                    if isinstance(store, AsyncMemoryStore):
                        result = await store.learn(step.report)
                    else:
                        result = await asyncio.to_thread(store.learn, step.report)
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
