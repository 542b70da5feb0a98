"""Two runs of a pydantic-ai agent with harness-memory, offline (a FunctionModel, no API key).

Run 1 writes a rambling summary; the judge rejects it with concrete feedback, and
``MemoryRun.remember`` stores that feedback as a workflow lesson. Run 2 (another user of the same
workflow) starts with the lesson in the instructions of its first model request, so the scripted
model follows it and the judge accepts.

    pip install 'harness-memory-pg[pydantic-ai]'
    python examples/pydantic_ai_two_runs.py

Uses the embedded PostgreSQL (``HARNESS_HOME``) unless ``HARNESS_DATABASE_URL`` is set; writes
under a fresh tenant and deletes it at the end. Prints ``LESSON:`` and ``RUN2_FIRST_REQUEST:``
lines (the tests check the second contains the first) and exits 1 if the story did not happen.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

from pydantic_ai import Agent, models
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from harness import Verdict
from harness.integrations.pydantic_ai import MemoryRun, memory_toolset
from harness.memory import AsyncMemoryStore, Scope

models.ALLOW_MODEL_REQUESTS = False  # only the local FunctionModel below answers

TASK = "Summarise this week's incident report for the on-call channel."
FEEDBACK = "Start with a three-line TL;DR and name the incident id (like INC-2041) in every line."
first_instructions: list[str | None] = []


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Rambles, unless its instructions carry the TL;DR lesson."""
    if len(messages) == 1:
        first_instructions.append(info.instructions)
    if "TL;DR" in (info.instructions or ""):
        text = "TL;DR INC-2041: payments down 20 min.\nINC-2041: fixed.\nINC-2042: VPN flaky."
    else:
        text = "It was a busy week: the payment API failed and the VPN was flaky at times."
    return ModelResponse(parts=[TextPart(text)])


def judge(output: str) -> Verdict:
    """Accepts a TL;DR whose every line names an incident id."""
    lines = output.splitlines()
    if lines and lines[0].startswith("TL;DR") and all("INC-" in line for line in lines):
        return Verdict(accepted=True)
    return Verdict(accepted=False, feedback=FEEDBACK)


async def main() -> int:
    tenant = f"example-{uuid.uuid4().hex[:8]}"
    agent = Agent(FunctionModel(scripted_model), instructions="You write incident summaries.")
    store = await AsyncMemoryStore.connect()
    try:
        for n, user in ((1, "alice"), (2, "bob")):
            run = MemoryRun(store, tenant=tenant, user_id=user, workflow_id="incident-summary")
            result = await agent.run(TASK, toolsets=[memory_toolset(run)])
            verdict = judge(result.output)
            outcome = await run.remember(result.output, verdict)
            print(f"run {n}: {'accepted' if verdict.accepted else 'rejected'}: {result.output!r}")
            if not verdict.accepted:
                print("LESSON:", verdict.feedback)
            for memory in outcome.memories_written:
                print(f"  stored {memory.kind.value} for {memory.scope.value} {memory.scope_id}")
        print("RUN2_FIRST_REQUEST:", json.dumps(first_instructions[1]))
        ok = FEEDBACK in (first_instructions[1] or "") and verdict.accepted
        print("two-run story:", "OK" if ok else "FAILED")
        return 0 if ok else 1
    finally:
        await store.delete_scope(tenant, Scope.WORKFLOW, "incident-summary")
        await store.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
