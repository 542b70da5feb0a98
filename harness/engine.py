"""The run lifecycle: recall before the first model call, writes only after the final verdict."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import Field

from harness.clock import Clock
from harness.errors import HarnessError, InvalidInput, MemoryRejected
from harness.extract import ExtractionContext, Extractor
from harness.fingerprint import fingerprint
from harness.lessons import is_concrete_feedback, lesson_candidate
from harness.memory.recall import RecallResult
from harness.memory.store import MemoryStore
from harness.memory.types import FrozenModel, Memory, MemoryCandidate, RecallRequest
from harness.recallset import RecallSet, RecallSetTools

__all__ = ["Engine", "EngineConfig", "Judge", "ModelClient", "RunInput", "RunOutcome", "Verdict"]

log = logging.getLogger(__name__)

Message = dict[str, Any]


class ModelClient(Protocol):
    """The agent's model: messages in, text (an answer) or a dict (a RecallSet tool call) out."""

    def __call__(self, messages: list[Message]) -> str | dict[str, Any]: ...


class Verdict(FrozenModel):
    """A judge's decision on one attempt."""

    accepted: bool
    feedback: str | None = None
    id: str = Field(default_factory=lambda: f"v-{uuid.uuid4().hex[:12]}")


class Judge(Protocol):
    """Decides whether an output is acceptable for an input."""

    def __call__(self, input: str, output: str) -> Verdict: ...


class RunInput(FrozenModel):
    """One run's identity (from the caller's verified context) and its input."""

    tenant: str = Field(min_length=1, max_length=200)
    user_id: str = Field(min_length=1, max_length=200)
    workflow_id: str | None = Field(default=None, min_length=1, max_length=200)
    session_id: str | None = Field(default=None, min_length=1, max_length=200)
    input: str = Field(min_length=1, max_length=100_000)


@dataclass(frozen=True)
class EngineConfig:
    """Recall limits for the first call, and guards against runaway tool use."""

    budget_chars: int = 2000
    max_items: int = 20
    max_item_chars: int = 500
    max_tool_calls_per_attempt: int = 16
    recallset_max_items: int = 50


@dataclass
class RunOutcome:
    """What a run produced. ``rejected_candidates`` and ``write_errors`` are never silent."""

    run_id: str
    output: str | None
    attempts: int
    verdicts: list[Verdict]
    memories_written: list[Memory] = field(default_factory=list)
    recall: RecallResult | None = None
    rejected_candidates: list[tuple[MemoryCandidate, str]] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        """True when the final verdict accepted the output."""
        return bool(self.verdicts) and self.verdicts[-1].accepted


class Engine:
    """Runs an agent with memory: one recall before the first model call, one RecallSet per
    run, and memory writes only once the final verdict is known."""

    def __init__(
        self,
        model: ModelClient | Callable[[list[Message]], str | dict[str, Any]],
        judge: Judge | Callable[[str, str], Verdict],
        store: MemoryStore,
        extractor: Extractor | None = None,
        max_attempts: int = 3,
        config: EngineConfig | None = None,
        clock: Clock | None = None,
        recallset_factory: Callable[[int], RecallSet] = RecallSet,
    ):
        if max_attempts < 1:
            raise InvalidInput("max_attempts: must be at least 1", fields=("max_attempts",))
        self.model = model
        self.judge = judge
        self.store = store
        self.extractor = extractor
        self.max_attempts = max_attempts
        self.config = config or EngineConfig()
        self.clock = clock or store.clock
        self.recallset_factory = recallset_factory

    def run(self, run: RunInput) -> RunOutcome:
        """Execute one run. Side effects: a run record, and memories written after the verdict.

        Memory-store failures never fail the run: recall degrades to an empty context and
        write failures are logged and reported in ``RunOutcome.write_errors``.
        """
        run_id = f"run-{uuid.uuid4().hex[:16]}"
        self._record(
            lambda: self.store.runs.start(
                run_id=run_id,
                tenant=run.tenant,
                user_id=run.user_id,
                workflow_id=run.workflow_id,
                session_id=run.session_id,
                at=self.clock.now(),
            )
        )
        recallset = self.recallset_factory(self.config.recallset_max_items)
        outcome = RunOutcome(run_id=run_id, output=None, attempts=0, verdicts=[])
        status = "failed"
        try:
            outcome.recall = self._recall(run)
            self._attempts(run, outcome, RecallSetTools(recallset))
            status = "accepted" if outcome.accepted else "rejected"
            self._write_after_verdict(run, outcome)
            return outcome
        finally:
            recallset.clear()
            self._record(
                lambda: self.store.runs.finish(
                    run_id=run_id,
                    tenant=run.tenant,
                    status=status,
                    attempts=outcome.attempts,
                    at=self.clock.now(),
                )
            )

    def _record(self, action: Callable[[], None]) -> None:
        try:
            action()
        except HarnessError as exc:
            log.warning("run record not written (the run goes on): %s", exc)

    def _recall(self, run: RunInput) -> RecallResult:
        cfg = self.config
        try:
            return self.store.recall(
                RecallRequest(
                    tenant=run.tenant,
                    user_id=run.user_id,
                    workflow_id=run.workflow_id,
                    session_id=run.session_id,
                    query=run.input,
                    budget_chars=cfg.budget_chars,
                    max_items=cfg.max_items,
                    max_item_chars=cfg.max_item_chars,
                )
            )
        except Exception as exc:  # recall must never break the host run
            log.warning("recall failed; the run continues without memory: %s", exc)
            return RecallResult.empty(degraded=True, reason=str(exc))

    def _attempts(self, run: RunInput, outcome: RunOutcome, tools: RecallSetTools) -> None:
        assert outcome.recall is not None
        messages: list[Message] = [
            {"role": "system", "content": outcome.recall.text},
            {"role": "user", "content": run.input},
        ]
        for _ in range(self.max_attempts):
            outcome.attempts += 1
            output = self._answer(messages, tools)
            outcome.output = output
            verdict = self.judge(run.input, output)
            outcome.verdicts.append(verdict)
            if verdict.accepted:
                return
            messages.append({"role": "assistant", "content": output})
            feedback = verdict.feedback or "The answer was not accepted."
            messages.append(
                {
                    "role": "user",
                    "content": f"A reviewer rejected that answer: {feedback} Please revise it.",
                }
            )

    def _answer(self, messages: list[Message], tools: RecallSetTools) -> str:
        for _ in range(self.config.max_tool_calls_per_attempt):
            reply = self.model(list(messages))
            if isinstance(reply, str):
                return reply
            result = tools.dispatch(reply)
            messages.append({"role": "assistant", "content": "", "tool_call": reply})
            messages.append({"role": "tool", "name": str(reply.get("name")), "content": result})
        messages.append({"role": "user", "content": "Tool budget exhausted; answer now."})
        reply = self.model(list(messages))
        return reply if isinstance(reply, str) else json.dumps(reply)

    def _candidates(self, run: RunInput, outcome: RunOutcome) -> list[MemoryCandidate]:
        cands: list[MemoryCandidate] = []
        seen: set[str] = set()
        for verdict in outcome.verdicts:
            if verdict.accepted or not is_concrete_feedback(verdict.feedback):
                continue
            assert verdict.feedback is not None
            fp = fingerprint(verdict.feedback)
            if fp in seen:
                continue
            seen.add(fp)
            cands.append(
                lesson_candidate(
                    tenant=run.tenant,
                    user_id=run.user_id,
                    workflow_id=run.workflow_id,
                    feedback=verdict.feedback,
                    task_input=run.input,
                    run_id=outcome.run_id,
                    verdict_id=verdict.id,
                )
            )
        if outcome.accepted and self.extractor is not None and outcome.output is not None:
            ctx = ExtractionContext(
                run.tenant, run.user_id, run.workflow_id, run.session_id, outcome.run_id
            )
            try:
                cands += self.extractor.extract(run.input, outcome.output, ctx)
            except Exception as exc:  # a broken extractor must not break the run
                log.warning("extractor failed; no candidates from this run: %s", exc)
        return cands

    def _write_after_verdict(self, run: RunInput, outcome: RunOutcome) -> None:
        for cand in self._candidates(run, outcome):
            try:
                outcome.memories_written.append(self.store.write(cand))
            except MemoryRejected as exc:
                log.warning("candidate refused by the guard: %s", exc)
                outcome.rejected_candidates.append((cand, exc.reason))
            except HarnessError as exc:
                log.error("memory write failed after the verdict (not stored): %s", exc)
                outcome.write_errors.append(f"{cand.kind.value} {cand.key or ''}: {exc}")
