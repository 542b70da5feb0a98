"""pydantic-ai integration in real agents (FunctionModel / TestModel, model requests disallowed):
the recalled block in the first request's instructions, the RecallSet as tools, bad tool
arguments as failed tool results, long-term writes only after the verdict.

Here the tests that need no database, model or other process; the others are in
tests/db/integrations/test_integration_pydantic_ai_db.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from harness.integrations.pydantic_ai import MemoryRun, memory_toolset
from tests.support.stores import unreachable_store

pytestmark = pytest.mark.usefixtures("_no_model_requests")


class Script:
    """A FunctionModel body: answers from a list of steps, recording each request's
    instructions as the model receives them."""

    def __init__(self, *steps: Any):
        self.steps = list(steps)
        self.instructions: list[str | None] = []

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.instructions.append(info.instructions)
        step = self.steps.pop(0)
        if callable(step):
            step = await step(messages)
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        name, args = step
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"c{len(self.steps)}")])


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for m in messages
        if isinstance(m, ModelRequest)
        for part in m.parts
        if isinstance(part, ToolReturnPart)
    ]


_arg_values = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=12)
    | st.lists(st.integers(), max_size=2)
)
_tool_calls = st.lists(
    st.tuples(
        st.sampled_from(
            ["recallset_add", "recallset_mark", "recallset_read", "recallset_overview"]
        ),
        st.dictionaries(
            st.sampled_from(["content", "mark", "priority", "title", "id", "other"]),
            _arg_values | st.sampled_from(["keep", "check", "discard", "r1", "r2"]),
            max_size=4,
        ),
    ),
    max_size=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=_tool_calls)
def test_any_sequence_of_tool_calls_ends_with_the_models_answer(
    calls: list[tuple[str, dict[str, Any]]],
) -> None:
    store = unreachable_store()  # the tools never touch the store; recall degrades to empty
    try:
        script = Script(*calls, "final answer")
        run = MemoryRun(store, tenant="acme", user_id="alice", input="task")
        result = Agent(FunctionModel(script), retries=0).run_sync(
            "task", toolsets=[memory_toolset(run)]
        )
    finally:
        store.close()
    assert result.output == "final answer"
    returns = tool_returns(result.all_messages())
    assert len(returns) == len(calls)
    for part in returns:
        if part.outcome == "failed":
            assert str(part.content).startswith("error:")
