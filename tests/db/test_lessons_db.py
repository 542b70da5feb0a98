"""Lessons that learn (SPEC section 6a), through both facades: consolidation by key and by
wording, outcomes of later runs, negative contexts, the retirement queue, and bad input."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from harness.errors import ConflictingState, InvalidInput, MemoryNotFound
from harness.memory import RecallRequest, Status
from harness.memory.domain.learning import Outcome
from harness.run.types import Verdict
from tests.support.facades import KINDS, Facade, TickingClock, open_facade
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import T0

RULE = "Ops channel summaries must be three lines at most, never a full page."
TASK = "Summarise the Q3 incident report for the ops channel."


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


@pytest.fixture(params=KINDS)
def facade(request: pytest.FixtureRequest, db_url: str, runner: asyncio.Runner) -> Iterator[Facade]:
    f = open_facade(request.param, db_url, HashEmbedder(), runner, TickingClock(T0))
    yield f
    f.close()


def report(
    tenant: str,
    *verdicts: dict[str, Any],
    task: str = TASK,
    placed: tuple[uuid.UUID, ...] = (),
    run: str = "r1",
    user: str = "alice",
) -> dict[str, Any]:
    return {
        "tenant": tenant,
        "user_id": user,
        "run_id": run,
        "task": task,
        "placed": placed,
        "verdicts": [{"id": f"v{i}", **v} for i, v in enumerate(verdicts)],
    }


def reject(feedback: str, **extra: Any) -> dict[str, Any]:
    return {"accepted": False, "feedback": feedback, **extra}


ACCEPT = {"accepted": True}


def active_lessons(facade: Facade, tenant: str) -> list[Any]:
    return [
        m
        for m in facade.browse(tenant, limit=100)
        if m.kind.value == "lesson" and m.status is Status.ACTIVE
    ]


def test_a_key_consolidates_paraphrases_into_one_lesson_with_every_teaching(
    facade: Facade, tenant: str
) -> None:
    first = facade.learn(report(tenant, reject(RULE, key="ops-length"), ACCEPT))
    (lesson,) = first.written
    assert lesson.key == "lesson.ops-length" and lesson.context == TASK
    again = facade.learn(
        report(
            tenant,
            reject("Too long for the ops channel: keep it to three lines.", key="ops-length"),
            ACCEPT,
            task="Recap yesterday's outage for the on-call room.",
            run="r2",
        )
    )
    assert again.written == () and again.of(Outcome.MISSED) == [lesson.id]
    assert [m.id for m in active_lessons(facade, tenant)] == [lesson.id]
    events = facade.lesson_events(lesson.id, tenant=tenant)
    assert [(e["event"], e["polarity"]) for e in events] == [
        ("taught", "positive"),
        ("missed", "positive"),
    ]
    # The newer wording is kept in the record, not lost; the lesson keeps its first text.
    assert events[1]["feedback"].startswith("Too long") and events[1]["run_id"] == "r2"
    assert facade.get(lesson.id, tenant=tenant).content.endswith(RULE)


def test_the_same_wording_consolidates_without_a_key_and_placed_means_repeated(
    facade: Facade, tenant: str
) -> None:
    (lesson,) = facade.learn(report(tenant, reject(RULE), ACCEPT)).written
    again = facade.learn(report(tenant, reject(RULE + "  "), ACCEPT, placed=(lesson.id,)))
    assert again.written == () and again.of(Outcome.REPEATED) == [lesson.id]
    other = facade.learn(report(tenant, reject("Cite the source file for every claim you make.")))
    assert len(other.written) == 1 and other.written[0].id != lesson.id


def test_placed_lessons_get_clear_or_recalled_and_misled_ids_a_negative_context(
    facade: Facade, tenant: str, other_tenant: str, caplog: pytest.LogCaptureFixture
) -> None:
    (a,) = facade.learn(report(tenant, reject(RULE))).written
    (b,) = facade.learn(report(tenant, reject("Dates are written as YYYY-MM-DD, always."))).written
    (foreign,) = facade.learn(report(other_tenant, reject(RULE))).written
    clear = facade.learn(report(tenant, ACCEPT, placed=(a.id, b.id), run="r3"))
    assert sorted(clear.of(Outcome.CLEAR)) == sorted([a.id, b.id])
    with caplog.at_level(logging.WARNING):
        misled = facade.learn(
            report(
                tenant,
                reject("Wrong kind of answer for a tweet.", misled=(str(a.id), foreign.id, "x")),
                ACCEPT,
                placed=(a.id,),
                task="Write a one-line tweet announcing the release.",
                run="r4",
            )
        )
    assert misled.of(Outcome.MISLED) == [a.id]
    # Another tenant's id and a non-id are ignored with a warning, never an error.
    assert set(misled.ignored_misled) == {str(foreign.id), "x"}
    assert "did not place" in caplog.text
    events = facade.lesson_events(a.id, tenant=tenant)
    assert events[-1]["event"] == "misled" and events[-1]["polarity"] == "negative"
    assert events[-1]["task"].startswith("Write a one-line tweet")
    assert facade.lesson_events(foreign.id, tenant=tenant) == []


def test_a_does_not_apply_feedback_of_a_placed_lesson_is_misled_not_a_new_lesson(
    facade: Facade, tenant: str
) -> None:
    (lesson,) = facade.learn(report(tenant, reject(RULE, key="ops-length"))).written
    got = facade.learn(
        report(
            tenant,
            reject("The three-line rule does not apply to a tweet.", key="ops-length"),
            ACCEPT,
            placed=(lesson.id,),
            task="Tweet that the outage is over.",
            run="r5",
        )
    )
    assert got.written == () and got.of(Outcome.MISLED) == [lesson.id]


def test_a_misleading_lesson_is_proposed_retired_and_restored_with_an_audit_trail(
    facade: Facade, tenant: str
) -> None:
    (lesson,) = facade.learn(report(tenant, reject(RULE))).written
    assert facade.retirement_proposals(tenant=tenant) == []
    for n in range(2):
        facade.learn(
            report(
                tenant,
                reject("Not this.", misled=(str(lesson.id),)),
                placed=(lesson.id,),
                run=f"m{n}",
            )
        )
    (proposal,) = facade.retirement_proposals(tenant=tenant)
    assert (
        proposal.memory.id == lesson.id and proposal.misled == 2 and "misled 2" in (proposal.reason)
    )
    retired = facade.retire(lesson.id, "admin", "misleads tweets", tenant=tenant)
    assert retired.status is Status.RETIRED
    assert active_lessons(facade, tenant) == []
    with pytest.raises(ConflictingState):
        facade.retire(lesson.id, "admin", tenant=tenant)
    restored = facade.restore(lesson.id, "admin", tenant=tenant)
    assert restored.status is Status.ACTIVE
    trail = [(e["event"], e["actor"]) for e in facade.lesson_events(lesson.id, tenant=tenant)]
    assert trail[-2:] == [("retired", "admin"), ("restored", "admin")]
    with pytest.raises(MemoryNotFound):
        facade.retire(uuid.uuid4(), "admin", tenant=tenant)


def test_a_retired_lesson_is_never_recalled(facade: Facade, tenant: str) -> None:
    (lesson,) = facade.learn(report(tenant, reject(RULE))).written
    req = RecallRequest(tenant=tenant, user_id="alice", query=TASK, relevance_threshold=0.0)
    assert lesson.id in [i.memory.id for i in facade.recall(req).items]
    facade.retire(lesson.id, "admin", tenant=tenant)
    assert lesson.id not in [i.memory.id for i in facade.recall(req).items]


def test_a_bad_verdict_key_is_invalid_input_naming_it(facade: Facade, tenant: str) -> None:
    with pytest.raises(InvalidInput, match="key"):
        facade.learn(report(tenant, reject(RULE, key=" padded ")))
    with pytest.raises(InvalidInput) as caught:
        Verdict(accepted=False, feedback=RULE, key="x" * 151)
    assert str(caught.value).startswith("invalid Verdict: key:") and caught.value.fields
    assert active_lessons(facade, tenant) == []  # nothing half-written


def test_a_task_the_guard_refuses_is_never_kept_in_a_lessons_record(
    facade: Facade, tenant: str
) -> None:
    (lesson,) = facade.learn(report(tenant, reject(RULE))).written
    secret_task = (
        "Deploy with key AKIAIOSFODNN7EXAMPLE and secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    )
    got = facade.learn(
        report(
            tenant,
            reject("Not this one.", misled=(str(lesson.id),)),
            reject("Always name the region you deploy to, e.g. eu-west-1."),
            placed=(lesson.id,),
            task=secret_task,
            run="r9",
        )
    )
    assert got.of(Outcome.MISLED) == [lesson.id]
    # The new lesson would keep the task as its context: the guard refuses it, reported.
    assert got.written == () and len(got.rejected) == 1
    events = facade.lesson_events(lesson.id, tenant=tenant)
    assert events[-1]["event"] == "misled" and events[-1]["task"] is None
