"""MemoryRun, the runtime-neutral part of every integration: recall once, RecallSet tool calls
that never raise, writes only after the verdict, for the right scope and tenant.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_integrations_common.py, tests/system/test_integrations_common_system.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.errors import ConflictingState, InvalidInput
from harness.integrations.common import MemoryRun
from harness.memory import AsyncMemoryStore, Kind, Scope
from harness.run.engine import Verdict
from harness.run.extract import RuleExtractor
from tests.support.integration_support import LESSON_FEEDBACK, count_memories, workflow_lesson
from tests.support.stores import unreachable_store


def test_recall_happens_once_per_run_and_later_writes_do_not_change_it(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    async def scenario() -> tuple[str, str]:
        await astore.write(workflow_lesson(tenant, "Always cite the source document."))
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        first = await run.instructions("Summarise the report")
        await astore.write(workflow_lesson(tenant, "Never use bullet points in summaries."))
        second = await run.instructions("something else entirely")
        return first, second

    first, second = runner.run(scenario())
    assert "Always cite the source document." in first
    assert second == first  # the second call did not read the store again


def test_remember_writes_the_rejection_lesson_for_the_workflow_with_the_task_as_context(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,
) -> None:
    async def scenario() -> Any:
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        await run.instructions("Summarise the quarterly report")
        run.call_tool("recallset_add", {"content": "draft idea", "mark": "keep"})
        assert count_memories(db_url, tenant) == 0  # nothing before the verdict
        return await run.remember(
            "a long answer", Verdict(accepted=False, feedback=LESSON_FEEDBACK)
        )

    outcome = runner.run(scenario())
    [lesson] = outcome.memories_written
    assert (lesson.scope, lesson.scope_id, lesson.kind) == (Scope.WORKFLOW, "wf-1", Kind.LESSON)
    assert LESSON_FEEDBACK in lesson.content
    assert lesson.context == "Summarise the quarterly report"
    assert lesson.source.verdict_id == outcome.verdicts[0].id
    assert count_memories(db_url, tenant) == 1  # the RecallSet note never reached the store


def test_without_a_workflow_the_lesson_belongs_to_the_user(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    run = MemoryRun(astore, tenant=tenant, user_id="bob", input="Write the weekly digest")
    outcome = runner.run(run.remember("x", Verdict(accepted=False, feedback=LESSON_FEEDBACK)))
    [lesson] = outcome.memories_written
    assert (lesson.scope, lesson.scope_id) == (Scope.USER, "bob")


def test_generic_feedback_and_repeated_feedback_do_not_make_extra_lessons(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,
) -> None:
    run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1", input="task")
    verdicts = [
        Verdict(accepted=False, feedback="wrong"),
        Verdict(accepted=False, feedback=LESSON_FEEDBACK),
        Verdict(accepted=False, feedback=LESSON_FEEDBACK.upper()),
    ]
    outcome = runner.run(run.remember("x", verdicts))
    assert len(outcome.memories_written) == 1
    assert outcome.attempts == 3
    assert count_memories(db_url, tenant) == 1


def test_an_accepted_run_writes_the_extractors_candidates(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    run = MemoryRun(
        astore,
        tenant=tenant,
        user_id="alice",
        input="From now on answer in French.",
        extractor=RuleExtractor(),
    )
    outcome = runner.run(run.remember("D'accord.", Verdict(accepted=True)))
    [pref] = outcome.memories_written
    assert (pref.scope, pref.scope_id, pref.kind) == (Scope.USER, "alice", Kind.PREFERENCE)
    assert "French" in pref.content


def test_a_guard_refusal_is_reported_not_raised_and_not_stored(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,
) -> None:
    feedback = "Never print the key sk-live-0123456789abcdefghijklmnopqrstuv in the output again"
    run = MemoryRun(astore, tenant=tenant, user_id="alice", input="task")
    outcome = runner.run(run.remember("x", Verdict(accepted=False, feedback=feedback)))
    assert outcome.memories_written == []
    assert len(outcome.rejected_candidates) == 1
    assert count_memories(db_url, tenant) == 0


def test_another_tenants_memory_never_reaches_the_instructions(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    other_tenant: str,
) -> None:
    async def scenario() -> str:
        await astore.write(workflow_lesson(other_tenant, "Secret habit of the other tenant."))
        await astore.write(workflow_lesson(tenant, "Our own lesson about summaries."))
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        return await run.instructions("Secret habit summaries")

    text = runner.run(scenario())
    assert "Our own lesson about summaries." in text
    assert "other tenant" not in text


def test_remember_twice_and_bad_verdicts_are_refused(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    run = MemoryRun(astore, tenant=tenant, user_id="alice", input="task")
    with pytest.raises(InvalidInput) as bad:
        runner.run(run.remember("x", []))
    assert bad.value.field == "verdict"
    with pytest.raises(InvalidInput):
        runner.run(run.remember("x", "accepted"))  # type: ignore[arg-type]
    runner.run(run.remember("x", Verdict(accepted=True)))
    assert run.finished and len(run.recallset) == 0
    with pytest.raises(ConflictingState):
        runner.run(run.remember("x", Verdict(accepted=True)))
    assert run.call_tool("recallset_overview", {}).is_error


def test_remember_sync_refuses_an_async_store_and_a_running_loop(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    run = MemoryRun(astore, tenant=tenant, user_id="alice", input="task")
    with pytest.raises(InvalidInput) as err:
        run.remember_sync("x", Verdict(accepted=True))
    assert err.value.field == "store"
    sync_store = unreachable_store()
    sync_run = MemoryRun(sync_store, tenant=tenant, user_id="alice", input="task")

    async def inside_a_loop() -> None:
        sync_run.remember_sync("x", Verdict(accepted=True))

    try:
        with pytest.raises(InvalidInput):
            runner.run(inside_a_loop())
    finally:
        sync_store.close()
    assert not run.finished and not sync_run.finished  # nothing happened
