"""pydantic-ai integration in real agents (FunctionModel / TestModel, model requests disallowed):
the recalled block in the first request's instructions, the RecallSet as tools, bad tool
arguments as failed tool results, long-term writes only after the verdict.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_integration_pydantic_ai.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
)
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.test import TestModel

from harness.integrations.pydantic_ai import MemoryRun, memory_toolset
from harness.memory import AsyncMemoryStore, MemoryStore, Scope
from harness.run.engine import Verdict
from tests.support.integration_support import LESSON_FEEDBACK, count_memories, workflow_lesson
from tests.unit.test_integration_pydantic_ai import Script, tool_returns

pytestmark = pytest.mark.usefixtures("_no_model_requests")


def test_two_runs_the_rejection_lesson_is_in_run_twos_first_instructions(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,
) -> None:
    task = "Summarise the quarterly sales report"

    async def story() -> tuple[Script, Script, Any]:
        agent = Agent(instructions="You write summaries.")
        first = Script("A long rambling summary.")
        run1 = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        result = await agent.run(task, model=FunctionModel(first), toolsets=[memory_toolset(run1)])
        assert count_memories(db_url, tenant) == 0  # the run is over, the verdict is not
        outcome = await run1.remember(
            result.output, Verdict(accepted=False, feedback=LESSON_FEEDBACK)
        )
        second = Script("Line one.\nLine two.\nLine three (source: report).")
        run2 = MemoryRun(astore, tenant=tenant, user_id="carol", workflow_id="wf-1")
        await agent.run(task, model=FunctionModel(second), toolsets=[memory_toolset(run2)])
        return first, second, outcome

    first, second, outcome = runner.run(story())
    assert first.instructions[0] == "You write summaries."  # nothing to recall yet
    [lesson] = outcome.memories_written
    assert (lesson.scope, lesson.scope_id) == (Scope.WORKFLOW, "wf-1")
    assert lesson.context == task  # taken from the run's prompt
    run2_first = second.instructions[0]
    assert run2_first is not None
    assert "You write summaries." in run2_first
    assert LESSON_FEEDBACK in run2_first


def test_recall_runs_once_before_the_first_request_and_every_request_sees_the_same_block(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    async def write_mid_run(messages: list[ModelMessage]) -> tuple[str, dict[str, Any]]:
        await astore.write(workflow_lesson(tenant, "Written while the run was going on."))
        return ("recallset_overview", {})

    async def scenario() -> Script:
        await astore.write(workflow_lesson(tenant, "Known before the run started."))
        script = Script(write_mid_run, "done")
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        await Agent(FunctionModel(script)).run("task", toolsets=[memory_toolset(run)])
        return script

    script = runner.run(scenario())
    assert len(script.instructions) == 2
    assert "Known before the run started." in (script.instructions[0] or "")
    assert script.instructions[1] == script.instructions[0]  # no second recall
    assert "Written while" not in (script.instructions[1] or "")


def test_a_recallset_note_round_trips_through_the_tools(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,
) -> None:
    async def read_back(messages: list[ModelMessage]) -> tuple[str, dict[str, Any]]:
        added = json.loads(tool_returns(messages)[-1].content)
        return ("recallset_read", {"id": added["id"]})

    async def echo(messages: list[ModelMessage]) -> str:
        return str(tool_returns(messages)[-1].content)

    async def scenario() -> tuple[str, MemoryRun]:
        script = Script(
            ("recallset_add", {"content": "The customer wants euros.", "mark": "keep"}),
            read_back,
            echo,
        )
        run = MemoryRun(astore, tenant=tenant, user_id="alice")
        result = await Agent(FunctionModel(script)).run("task", toolsets=[memory_toolset(run)])
        return result.output, run

    output, run = runner.run(scenario())
    assert output == "The customer wants euros."
    [item] = run.recallset.items()
    assert item.mark.value == "keep"
    assert count_memories(db_url, tenant) == 0  # a RecallSet note is not long-term memory


def test_bad_tool_arguments_come_back_as_failed_results_and_the_run_goes_on(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    # More consecutive bad calls than the agent's retry budget (1): failures must not use it up.
    bad_calls = [
        ("recallset_add", {"content": "x", "mark": "bogus"}),
        ("recallset_add", {"mark": "keep"}),
        ("recallset_read", {"id": "r999"}),
        ("recallset_mark", {"id": "r1", "mark": "keep", "extra": 1}),
        ("recallset_add", {"content": 42}),
    ]

    async def scenario() -> Any:
        script = Script(*bad_calls, "finished anyway")
        run = MemoryRun(astore, tenant=tenant, user_id="alice")
        return await Agent(FunctionModel(script), retries=1).run(
            "task", toolsets=[memory_toolset(run)]
        )

    result = runner.run(scenario())
    assert result.output == "finished anyway"
    returns = tool_returns(result.all_messages())
    assert len(returns) == len(bad_calls)
    assert all(r.outcome == "failed" for r in returns)
    texts = [str(r.content) for r in returns]
    assert "'mark' must be one of" in texts[0]
    assert "missing argument 'content'" in texts[1]
    assert "r999" in texts[2]
    assert "unknown argument 'extra'" in texts[3]
    assert "'content' must be string" in texts[4]


def test_test_model_calling_every_tool_with_schema_args_completes(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    async def scenario() -> tuple[Any, MemoryRun]:
        await astore.write(workflow_lesson(tenant, "Reply in one paragraph."))
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        result = await Agent(TestModel(call_tools="all")).run(
            "task", toolsets=[memory_toolset(run)]
        )
        return result, run

    result, run = runner.run(scenario())
    called = {r.tool_name for r in tool_returns(result.all_messages())}
    assert called == {"recallset_add", "recallset_mark", "recallset_read", "recallset_overview"}
    first = next(m for m in result.all_messages() if isinstance(m, ModelRequest))
    assert "Reply in one paragraph." in (first.instructions or "")
    assert len(run.recallset) == 1  # TestModel's add went to this run's RecallSet


def test_another_tenants_lesson_never_reaches_the_model(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    other_tenant: str,
) -> None:
    async def scenario() -> Script:
        await astore.write(workflow_lesson(other_tenant, "The other tenant's summary rule."))
        script = Script("ok")
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        await Agent(FunctionModel(script)).run("summary rule", toolsets=[memory_toolset(run)])
        return script

    script = runner.run(scenario())
    assert "other tenant" not in (script.instructions[0] or "")


def test_the_sync_path_run_sync_with_a_memory_store_and_remember_sync(
    store: MemoryStore, tenant: str, db_url: str
) -> None:
    store.write(workflow_lesson(tenant, "Known before the run started."))
    script = Script("answer")
    run = MemoryRun(store, tenant=tenant, user_id="alice", workflow_id="wf-1")
    result = Agent(FunctionModel(script)).run_sync("task", toolsets=[memory_toolset(run)])
    assert "Known before the run started." in (script.instructions[0] or "")
    assert count_memories(db_url, tenant) == 1
    outcome = run.remember_sync(result.output, Verdict(accepted=False, feedback=LESSON_FEEDBACK))
    [lesson] = outcome.memories_written
    assert lesson.context == "task"
    assert count_memories(db_url, tenant) == 2
