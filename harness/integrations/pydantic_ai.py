"""pydantic-ai integration: the run's memory as one toolset (recalled instructions + RecallSet).

``pip install 'harness-memory-pg[pydantic-ai]'``. Per run::

    run = MemoryRun(store, tenant="acme", user_id="alice", workflow_id="wf-1")
    result = await agent.run(task, toolsets=[memory_toolset(run)])
    outcome = await run.remember(result.output, judge(task, result.output))

The toolset's dynamic instructions recall once, for the run's caller, before the first model
request (pydantic-ai evaluates instructions per request; later requests get the same block).
Its four tools work on the run's RecallSet only; a bad call comes back to the model as a failed
tool result (``ToolFailed``, which does not use up the retry budget), never as an exception that
ends the run. (Arguments that are not JSON at all are pydantic-ai's to answer, with a retry
prompt that counts against the agent's ``retries``.) Nothing is written to the MemoryStore
until :meth:`MemoryRun.remember` (or ``remember_sync`` after ``run_sync``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from harness.integrations.common import MemoryRun, recallset_tool_specs

try:
    from pydantic_ai import FunctionToolset, RunContext, Tool, ToolFailed
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "harness.integrations.pydantic_ai needs pydantic-ai: "
        "pip install 'harness-memory-pg[pydantic-ai]'"
    ) from exc

__all__ = ["MemoryRun", "memory_toolset"]


def _prompt_text(ctx: RunContext[Any]) -> str | None:
    prompt = ctx.prompt
    if isinstance(prompt, str):
        return prompt
    if prompt is None:
        return None
    texts = [part for part in prompt if isinstance(part, str)]
    return "\n".join(texts) or None


def _tool_function(run: MemoryRun, name: str) -> Callable[..., Awaitable[str]]:
    async def call(**arguments: Any) -> str:
        answer = run.call_tool(name, arguments)
        if answer.is_error:
            raise ToolFailed(answer.text)
        return answer.text

    call.__name__ = name
    return call


def memory_toolset(run: MemoryRun, *, id: str | None = None) -> FunctionToolset[Any]:
    """A toolset for one run: the recalled block as dynamic instructions, the RecallSet as tools.

    Pass it to ``agent.run(..., toolsets=[memory_toolset(run)])`` (or ``run_sync`` /
    ``run_stream`` / ``iter``). The recall query is the run's ``input``, else the user prompt of
    the run. Creating the toolset does no IO; the first model request does the one recall.
    """

    async def recalled(ctx: RunContext[Any]) -> str:
        return await run.instructions(_prompt_text(ctx))

    tools: list[Tool[Any]] = [
        Tool.from_schema(
            _tool_function(run, spec.name),
            name=spec.name,
            description=spec.description,
            json_schema=spec.parameters,
        )
        for spec in recallset_tool_specs()
    ]
    return FunctionToolset(tools, id=id, instructions=recalled)
