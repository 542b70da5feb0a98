"""The run flow without a database: the order of effects is the engine's contract."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from harness.clock import FixedClock
from harness.errors import StoreUnavailable
from harness.memory.domain.learning import Learned
from harness.memory.domain.recall import RecallResult
from harness.recallset import RecallSet
from harness.run.flow import (
    CallJudge,
    CallModel,
    Effect,
    Extract,
    FinishRun,
    Learn,
    Recall,
    StartRun,
    Write,
    run_flow,
)
from harness.run.types import EngineConfig, RunInput, RunOutcome, Verdict

RUN = RunInput(tenant="t", user_id="u", workflow_id="wf", input="Summarise week 47")
CONCRETE = "The summary must start with a three-line TL;DR and name every incident id."


def drive(
    verdicts: list[Verdict], *, recall_fails: bool, extract: bool
) -> tuple[list[Effect], RunOutcome]:
    """Run the flow with in-memory answers; return every effect it asked for, in order."""
    flow = run_flow(
        RUN,
        "run-1",
        config=EngineConfig(),
        max_attempts=len(verdicts),
        clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC)),
        recallset_factory=RecallSet,
        extract=extract,
    )
    effects: list[Effect] = []
    pending = iter(verdicts)
    step = next(flow)
    try:
        while True:
            effects.append(step)
            if isinstance(step, Recall) and recall_fails:
                step = flow.throw(StoreUnavailable("down"))
                continue
            answer: Any = None
            if isinstance(step, Recall):
                answer = RecallResult.empty()
            elif isinstance(step, CallModel):
                answer = "output"
            elif isinstance(step, CallJudge):
                answer = next(pending)
            elif isinstance(step, Extract):
                answer = []
            elif isinstance(step, Write):
                answer = step.candidate
            elif isinstance(step, Learn):
                answer = Learned()
            step = flow.send(answer)
    except StopIteration as done:
        return effects, done.value


@given(
    accepted=st.lists(st.booleans(), min_size=1, max_size=5),
    recall_fails=st.booleans(),
    extract=st.booleans(),
)
def test_recall_before_the_model_and_writes_only_after_the_final_verdict(
    accepted: list[bool], recall_fails: bool, extract: bool
) -> None:
    verdicts = [Verdict(accepted=a, feedback=None if a else CONCRETE) for a in accepted]
    effects, outcome = drive(verdicts, recall_fails=recall_fails, extract=extract)
    kinds = [type(e) for e in effects]
    assert kinds[0] is StartRun and kinds[1] is Recall and kinds[-1] is FinishRun
    last_judge = max(i for i, k in enumerate(kinds) if k is CallJudge)
    assert all(i > last_judge for i, k in enumerate(kinds) if k in (Learn, Write, Extract))
    stop = accepted.index(True) + 1 if True in accepted else len(accepted)
    assert kinds.count(CallJudge) == outcome.attempts == stop
    assert (Extract in kinds) == (extract and accepted[stop - 1])
    # One learning step after the final verdict, reading every verdict in order; lessons are
    # written by it, never as plain writes.
    learns = [e for e in effects if isinstance(e, Learn)]
    assert len(learns) == 1 and Write not in kinds
    report = learns[0].report
    assert [v.accepted for v in report.verdicts] == accepted[:stop]
    assert report.accepted == accepted[stop - 1] and report.placed == ()
    assert outcome.recall is not None and outcome.recall.degraded == recall_fails
    assert outcome.recall.text == ""
    finish = effects[-1]
    assert isinstance(finish, FinishRun)
    assert finish.status == ("accepted" if accepted[stop - 1] else "rejected")
