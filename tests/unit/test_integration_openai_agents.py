"""OpenAI Agents SDK integration with ``Runner.run`` and the SDK's scripted ``Model`` (no
network, tracing off): recalled instructions at the first model call, RecallSet function tools,
bad arguments as error text, long-term writes only after the verdict.

Here the tests that need no database, model or other process; the others are in
tests/db/integrations/test_integration_openai_agents_db.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.testing import ModelCall, ScriptedModel, assistant_message, function_call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.integrations.openai_agents import (
    MemoryRun,
    with_memory,
)
from tests.support.stores import unreachable_store

set_tracing_disabled(True)
NO_TRACING = RunConfig(tracing_disabled=True)


def outputs(call: ModelCall) -> list[str]:
    """The function-call outputs the model has been sent so far."""
    items = call.input if isinstance(call.input, list) else []
    return [
        str(item["output"])
        for item in items
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def test_a_context_without_a_memory_run_is_a_clear_wiring_error(
    runner: asyncio.Runner,
) -> None:
    agent = with_memory(Agent(name="a", model=ScriptedModel([[assistant_message("never")]])))
    with pytest.raises(InvalidInput) as err:
        runner.run(Runner.run(agent, "task", context={"user": "x"}, run_config=NO_TRACING))
    assert err.value.field == "context"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(
            st.sampled_from(
                ["recallset_add", "recallset_mark", "recallset_read", "recallset_overview"]
            ),
            st.text(max_size=40)
            | st.dictionaries(
                st.sampled_from(["content", "mark", "priority", "id", "other"]),
                st.none() | st.integers() | st.text(max_size=10) | st.sampled_from(["keep", "r1"]),
                max_size=4,
            ).map(json.dumps),
        ),
        max_size=8,
    )
)
def test_any_tool_arguments_even_invalid_json_end_with_the_models_answer(
    calls: list[tuple[str, str]],
) -> None:
    store = unreachable_store()  # the tools never touch the store; recall degrades to empty
    try:
        steps: list[Any] = [
            [function_call(name, args, call_id=f"c{i}")] for i, (name, args) in enumerate(calls)
        ]
        model = ScriptedModel([*steps, [assistant_message("final answer")]])
        run = MemoryRun(store, tenant="acme", user_id="alice", input="task")
        result = Runner.run_sync(
            with_memory(Agent(name="a", model=model)), "task", context=run, run_config=NO_TRACING
        )
    finally:
        store.close()
    assert result.final_output == "final answer"
    assert len(outputs(model.calls[-1])) == len(calls)
