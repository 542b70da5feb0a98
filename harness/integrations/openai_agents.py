"""OpenAI Agents SDK integration: recalled instructions and RecallSet function tools.

``pip install 'harness-memory-pg[openai-agents]'``. The run's :class:`MemoryRun` travels as the
SDK's run context (``Runner.run(..., context=run)``), or as the ``memory`` attribute of your own
context object::

    agent = with_memory(Agent(name="writer", instructions="You write summaries."))
    run = MemoryRun(store, tenant="acme", user_id="alice", workflow_id="wf-1", input=task)
    result = await Runner.run(agent, task, context=run)
    outcome = await run.remember(result.final_output, judge(task, result.final_output))

The instructions callable recalls once, for the run's caller, before the first model call (the
SDK asks for instructions every turn; later turns get the same block). The four function tools
work on the run's RecallSet only and answer a bad call with error text the model reads, never
an exception that ends the run. Nothing is written to the MemoryStore until
:meth:`MemoryRun.remember`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from harness.errors import InvalidInput
from harness.integrations.common import MemoryRun, recallset_tool_specs

try:
    from agents import Agent, FunctionTool, RunContextWrapper
    from agents.tool_context import ToolContext
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "harness.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'harness-memory-pg[openai-agents]'"
    ) from exc

__all__ = ["MemoryRun", "memory_instructions", "memory_run_of", "recallset_tools", "with_memory"]

BaseInstructions = str | Callable[[RunContextWrapper[Any], Agent[Any]], str | Awaitable[str]] | None
InstructionsFunction = Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]


def memory_run_of(context: object) -> MemoryRun:
    """The :class:`MemoryRun` of a run context: the context itself, or its ``memory`` attribute.

    Raises:
        InvalidInput: naming ``context`` when it carries no MemoryRun (a wiring mistake).
    """
    if isinstance(context, MemoryRun):
        return context
    run = getattr(context, "memory", None)
    if isinstance(run, MemoryRun):
        return run
    raise InvalidInput(
        "context: pass a MemoryRun (or an object with a `memory` MemoryRun attribute) as "
        "Runner.run(..., context=...)",
        fields=("context",),
    )


def _user_text(items: Sequence[Any]) -> str | None:
    for item in items:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
    return None


def memory_instructions(base: BaseInstructions = None) -> InstructionsFunction:
    """An ``Agent(instructions=...)`` callable: ``base`` (text or the SDK's instructions
    callable), then the block recalled for the run's caller.

    The recall happens once per run, at the first model call; the query is the run's ``input``,
    else the first user message of the turn.
    """

    async def instructions(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        run = memory_run_of(ctx.context)
        block = await run.instructions(_user_text(ctx.turn_input))
        if callable(base):
            produced = base(ctx, agent)
            head = await produced if inspect.isawaitable(produced) else produced
        else:
            head = base or ""
        return "\n\n".join(part for part in (head, block) if part)

    return instructions


def _invoker(name: str) -> Callable[[ToolContext[Any], str], Awaitable[str]]:
    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        try:
            run = memory_run_of(ctx.context)
        except InvalidInput as exc:
            return f"error: {exc}"
        return run.call_tool(name, arguments).text

    return invoke


def recallset_tools() -> list[FunctionTool]:
    """The RecallSet as four function tools (add, mark, read, overview) over the run context's
    :class:`MemoryRun`. Bad arguments (wrong types, unknown ids, invalid JSON) answer
    ``error: ...`` to the model; the run goes on."""
    return [
        FunctionTool(
            name=spec.name,
            description=spec.description,
            params_json_schema=spec.parameters,
            on_invoke_tool=_invoker(spec.name),
            # optional arguments with defaults are not expressible in strict mode
            strict_json_schema=False,
        )
        for spec in recallset_tool_specs()
    ]


def with_memory(agent: Agent[Any]) -> Agent[Any]:
    """A copy of ``agent`` whose instructions end with the recalled block and whose tools
    include the RecallSet tools. The original agent is unchanged."""
    return agent.clone(
        instructions=memory_instructions(agent.instructions),
        tools=[*agent.tools, *recallset_tools()],
    )
