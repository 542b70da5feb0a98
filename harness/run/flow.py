"""A run's lifecycle as a generator of effects, driven by ``Engine.run`` and ``Engine.arun``.

The flow decides everything (what to recall, what to tell the model, when the verdict is
final, what to write, how each failure degrades) and never does IO: it yields an effect, the
driver performs it (blocking or awaited) and sends the result back, or throws the error in.
One flow, two thin drivers, so the sync and async runs cannot drift.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.clock import Clock
from harness.errors import HarnessError
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import RecallRequest
from harness.recallset import RecallSet, RecallSetTools
from harness.run.after_verdict import Extract, Learn, Write, teach
from harness.run.types import EngineConfig, Message, RunInput, RunOutcome, Verdict

__all__ = [
    "CallJudge",
    "CallModel",
    "Effect",
    "Extract",
    "FinishRun",
    "Learn",
    "Recall",
    "StartRun",
    "Write",
    "placed_ids",
    "recall_request",
    "run_flow",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StartRun:
    """Record the run as started (``store.runs.start``)."""

    run_id: str
    run: RunInput
    at: datetime

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``store.runs.start`` (sync or async store alike)."""
        run = self.run
        return {
            "run_id": self.run_id,
            "tenant": run.tenant,
            "user_id": run.user_id,
            "workflow_id": run.workflow_id,
            "session_id": run.session_id,
            "at": self.at,
        }


@dataclass(frozen=True)
class FinishRun:
    """Record the run's outcome (``store.runs.finish``)."""

    run_id: str
    tenant: str
    status: str
    attempts: int
    at: datetime
    recalled: tuple[uuid.UUID, ...] | None = None

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``store.runs.finish`` (sync or async store alike)."""
        return {
            "run_id": self.run_id,
            "tenant": self.tenant,
            "status": self.status,
            "attempts": self.attempts,
            "at": self.at,
            "recalled": self.recalled,
        }


@dataclass(frozen=True)
class Recall:
    """``store.recall(request)``: answers a :class:`RecallResult`."""

    request: RecallRequest


@dataclass(frozen=True)
class CallModel:
    """Ask the model: answers text or a tool call (a dict)."""

    messages: list[Message]


@dataclass(frozen=True)
class CallJudge:
    """Ask the judge: answers a :class:`Verdict`."""

    input: str
    output: str


Effect = StartRun | FinishRun | Recall | CallModel | CallJudge | Learn | Extract | Write

#: A run's flow: yields effects, receives their results, returns the outcome.
Flow = Generator[Effect, Any, RunOutcome]


def recall_request(run: RunInput, config: EngineConfig) -> RecallRequest:
    """The first call's recall: the run's caller and input under the configured limits."""
    return RecallRequest.for_caller(
        run.caller,
        query=run.input,
        budget_chars=config.budget_chars,
        max_items=config.max_items,
        max_item_chars=config.max_item_chars,
    )


def placed_ids(recall: RecallResult | None) -> tuple[uuid.UUID, ...]:
    """The memories a recall placed in the context, in order."""
    return tuple(item.memory.id for item in recall.items) if recall is not None else ()


def _record(effect: StartRun | FinishRun) -> Generator[Effect, Any, None]:
    try:
        yield effect
    except HarnessError as exc:
        log.warning("run record not written (the run goes on): %s", exc)


def _answer(
    messages: list[Message], tools: RecallSetTools, max_tool_calls: int
) -> Generator[Effect, Any, str]:
    for _ in range(max_tool_calls):
        reply = yield CallModel(list(messages))
        if isinstance(reply, str):
            return reply
        result = tools.dispatch(reply)
        messages.append({"role": "assistant", "content": "", "tool_call": reply})
        messages.append({"role": "tool", "name": str(reply.get("name")), "content": result})
    messages.append({"role": "user", "content": "Tool budget exhausted; answer now."})
    reply = yield CallModel(list(messages))
    return reply if isinstance(reply, str) else json.dumps(reply)


def _attempts(
    run: RunInput,
    outcome: RunOutcome,
    tools: RecallSetTools,
    config: EngineConfig,
    max_attempts: int,
) -> Generator[Effect, Any, None]:
    assert outcome.recall is not None
    messages: list[Message] = [
        {"role": "system", "content": outcome.recall.text},
        {"role": "user", "content": run.input},
    ]
    for _ in range(max_attempts):
        outcome.attempts += 1
        output = yield from _answer(messages, tools, config.max_tool_calls_per_attempt)
        outcome.output = output
        verdict: Verdict = yield CallJudge(run.input, output)
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


def _write_after_verdict(
    run: RunInput, outcome: RunOutcome, extract: bool
) -> Generator[Effect, Any, None]:
    done = yield from teach(
        outcome.verdicts,
        caller=run.caller,
        task_input=run.input,
        run_id=outcome.run_id,
        output=outcome.output,
        extract=extract,
        placed=placed_ids(outcome.recall),
        conversation=(run.conversation_id, run.turn_id),
    )
    outcome.learned = done.learned
    outcome.memories_written += done.written
    outcome.rejected_candidates += done.rejected
    outcome.write_errors += done.errors


def run_flow(
    run: RunInput,
    run_id: str,
    *,
    config: EngineConfig,
    max_attempts: int,
    clock: Clock,
    recallset_factory: Callable[[int], RecallSet],
    extract: bool,
) -> Flow:
    """One run: record it, recall once before the first model call, attempt until a verdict
    accepts or attempts run out, then (only then) write lessons and extracted memories, and
    record the outcome. Store failures never fail the run (see ``Engine.run``)."""
    yield from _record(StartRun(run_id, run, clock.now()))
    recallset = recallset_factory(config.recallset_max_items)
    outcome = RunOutcome(run_id=run_id, output=None, attempts=0, verdicts=[])
    status = "failed"
    try:
        try:
            outcome.recall = yield Recall(recall_request(run, config))
        except HarnessError as exc:  # from another executor of this flow (the store degrades)
            log.warning("recall failed; the run continues without memory: %s", exc)
            outcome.recall = RecallResult.empty(degraded=True, reason=str(exc))
        yield from _attempts(run, outcome, RecallSetTools(recallset), config, max_attempts)
        status = "accepted" if outcome.accepted else "rejected"
        yield from _write_after_verdict(run, outcome, extract)
        return outcome
    finally:
        recallset.clear()
        yield from _record(
            FinishRun(
                run_id,
                run.tenant,
                status,
                outcome.attempts,
                clock.now(),
                placed_ids(outcome.recall),
            )
        )
