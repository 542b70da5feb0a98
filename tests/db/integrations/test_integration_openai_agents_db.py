"""OpenAI Agents SDK integration with ``Runner.run`` and the SDK's scripted ``Model`` (no
network, tracing off): recalled instructions at the first model call, RecallSet function tools,
bad arguments as error text, long-term writes only after the verdict.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_integration_openai_agents.py."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from agents import Agent, RunContextWrapper, Runner
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from harness.integrations.openai_agents import (
    MemoryRun,
    memory_instructions,
    recallset_tools,
    with_memory,
)
from harness.memory import AsyncMemoryStore, MemoryStore, Scope
from harness.run.engine import Verdict
from tests.support.integration_support import LESSON_FEEDBACK, count_memories, workflow_lesson
from tests.unit.test_integration_openai_agents import NO_TRACING, outputs


def test_two_runs_the_rejection_lesson_is_in_run_twos_first_instructions(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,
) -> None:
    task = "Summarise the quarterly sales report"

    async def story() -> tuple[ScriptedModel, ScriptedModel, Any]:
        first = ScriptedModel([[assistant_message("A long rambling summary.")]])
        agent = with_memory(Agent(name="writer", instructions="You write summaries.", model=first))
        run1 = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        result = await Runner.run(agent, task, context=run1, run_config=NO_TRACING)
        assert count_memories(db_url, tenant) == 0  # the run is over, the verdict is not
        outcome = await run1.remember(
            result.final_output, Verdict(accepted=False, feedback=LESSON_FEEDBACK)
        )
        second = ScriptedModel([[assistant_message("Three lines, with the source.")]])
        run2 = MemoryRun(astore, tenant=tenant, user_id="carol", workflow_id="wf-1")
        await Runner.run(agent.clone(model=second), task, context=run2, run_config=NO_TRACING)
        return first, second, outcome

    first, second, outcome = runner.run(story())
    assert first.first_call is not None and second.first_call is not None
    assert first.first_call.system_instructions == "You write summaries."
    [lesson] = outcome.memories_written
    assert (lesson.scope, lesson.scope_id) == (Scope.WORKFLOW, "wf-1")
    assert lesson.context == task  # taken from the turn's user message
    instructions = second.first_call.system_instructions or ""
    assert instructions.startswith("You write summaries.")
    assert LESSON_FEEDBACK in instructions


def test_recall_runs_once_and_every_turn_gets_the_same_block(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    async def write_mid_run(call: ModelCall) -> Any:
        await astore.write(workflow_lesson(tenant, "Written while the run was going on."))
        return [function_call("recallset_overview", {}, call_id="c1")]

    async def scenario() -> ScriptedModel:
        await astore.write(workflow_lesson(tenant, "Known before the run started."))
        model = ScriptedModel([ModelStep.respond(write_mid_run), [assistant_message("done")]])
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        agent = with_memory(Agent(name="a", model=model))
        await Runner.run(agent, "task", context=run, run_config=NO_TRACING)
        return model

    calls = runner.run(scenario()).calls
    assert len(calls) == 2
    assert "Known before the run started." in (calls[0].system_instructions or "")
    assert calls[1].system_instructions == calls[0].system_instructions
    assert "Written while" not in (calls[1].system_instructions or "")


def test_a_recallset_note_round_trips_through_the_function_tools(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,
) -> None:
    def read_back(call: ModelCall) -> Any:
        added = json.loads(outputs(call)[-1])
        return [function_call("recallset_read", {"id": added["id"]}, call_id="c2")]

    def echo(call: ModelCall) -> Any:
        return [assistant_message(outputs(call)[-1])]

    async def scenario() -> tuple[Any, MemoryRun]:
        model = ScriptedModel(
            [
                [
                    function_call(
                        "recallset_add",
                        {"content": "The customer wants euros.", "mark": "keep"},
                        call_id="c1",
                    )
                ],
                ModelStep.respond(read_back),
                ModelStep.respond(echo),
            ]
        )
        run = MemoryRun(astore, tenant=tenant, user_id="alice")
        agent = Agent(name="a", model=model, tools=recallset_tools())
        result = await Runner.run(agent, "task", context=run, run_config=NO_TRACING)
        return result.final_output, run

    output, run = runner.run(scenario())
    assert output == "The customer wants euros."
    [item] = run.recallset.items()
    assert item.mark.value == "keep"
    assert count_memories(db_url, tenant) == 0


def test_bad_tool_arguments_are_answered_with_error_text_and_the_run_goes_on(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    bad = [
        ("recallset_add", {"content": "x", "mark": "bogus"}),
        ("recallset_add", "{not json"),
        ("recallset_read", {"id": "r999"}),
        ("recallset_mark", {"id": "r1"}),
        ("recallset_add", {"content": ["a", "list"]}),
    ]

    async def scenario() -> tuple[ScriptedModel, Any]:
        steps: list[Any] = [
            [function_call(name, args, call_id=f"c{i}")] for i, (name, args) in enumerate(bad)
        ]
        model = ScriptedModel([*steps, [assistant_message("finished anyway")]])
        run = MemoryRun(astore, tenant=tenant, user_id="alice")
        agent = with_memory(Agent(name="a", model=model))
        result = await Runner.run(agent, "task", context=run, run_config=NO_TRACING)
        return model, result.final_output

    model, output = runner.run(scenario())
    assert output == "finished anyway"
    texts = outputs(model.calls[-1])
    assert len(texts) == len(bad)
    assert all(t.startswith("error:") for t in texts)
    assert "'mark' must be one of" in texts[0]
    assert "not valid JSON" in texts[1]
    assert "r999" in texts[2]
    assert "missing argument 'mark'" in texts[3]
    assert "'content' must be string" in texts[4]


@dataclass
class AppContext:
    """An application's own run context carrying the MemoryRun as ``memory``."""

    request_id: str
    memory: MemoryRun


def test_an_app_context_with_a_memory_attribute_and_a_callable_base(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    async def base(ctx: RunContextWrapper[AppContext], agent: Agent[AppContext]) -> str:
        return f"Request {ctx.context.request_id}; you are {agent.name}."

    async def scenario() -> ScriptedModel:
        await astore.write(workflow_lesson(tenant, "Reply in one paragraph."))
        model = ScriptedModel([[assistant_message("ok")]])
        agent = Agent[AppContext](
            name="helper", model=model, instructions=memory_instructions(base)
        )
        ctx = AppContext("req-7", MemoryRun(astore, tenant=tenant, user_id="u", workflow_id="wf-1"))
        await Runner.run(agent, "task", context=ctx, run_config=NO_TRACING)
        return model

    first = runner.run(scenario()).first_call
    assert first is not None
    assert first.system_instructions == (
        "Request req-7; you are helper.\n\n"
        "- [workflow lesson | api | 2026-11-01] Reply in one paragraph."
    )


def test_another_tenants_lesson_never_reaches_the_model(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    other_tenant: str,
) -> None:
    async def scenario() -> ScriptedModel:
        await astore.write(workflow_lesson(other_tenant, "The other tenant's summary rule."))
        model = ScriptedModel([[assistant_message("ok")]])
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        await Runner.run(with_memory(Agent(name="a", model=model)), "summary rule", context=run)
        return model

    first = runner.run(scenario()).first_call
    assert first is not None
    assert "other tenant" not in (first.system_instructions or "")


def test_the_sync_path_run_sync_with_a_memory_store_and_remember_sync(
    store: MemoryStore, tenant: str, db_url: str
) -> None:
    store.write(workflow_lesson(tenant, "Known before the run started."))
    model = ScriptedModel([[assistant_message("answer")]])
    run = MemoryRun(store, tenant=tenant, user_id="alice", workflow_id="wf-1", input="the task")
    agent = with_memory(Agent(name="a", model=model))
    result = Runner.run_sync(agent, "the task", context=run, run_config=NO_TRACING)
    assert model.first_call is not None
    assert "Known before the run started." in (model.first_call.system_instructions or "")
    outcome = run.remember_sync(
        str(result.final_output), Verdict(accepted=False, feedback=LESSON_FEEDBACK)
    )
    assert [m.scope for m in outcome.memories_written] == [Scope.WORKFLOW]
    assert count_memories(db_url, tenant) == 2


def test_a_streamed_run_gets_the_same_instructions_and_tools(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
) -> None:
    async def scenario() -> tuple[ScriptedModel, MemoryRun, Any]:
        await astore.write(workflow_lesson(tenant, "Reply in one paragraph."))
        model = ScriptedModel(
            [
                [function_call("recallset_add", {"content": "streamed note"}, call_id="c1")],
                [assistant_message("done")],
            ]
        )
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        streamed = Runner.run_streamed(
            with_memory(Agent(name="a", model=model)), "task", context=run, run_config=NO_TRACING
        )
        async for _ in streamed.stream_events():
            pass
        return model, run, streamed.final_output

    model, run, output = runner.run(scenario())
    assert output == "done"
    assert "Reply in one paragraph." in (model.calls[0].system_instructions or "")
    assert [i.content for i in run.recallset.items()] == ["streamed note"]
