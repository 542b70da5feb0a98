"""Two runs of an OpenAI Agents SDK agent with harness-memory, offline (the SDK's ScriptedModel
answering from its instructions; no API key, tracing off).

Run 1 writes a rambling summary; the judge rejects it with concrete feedback, and
``MemoryRun.remember`` stores that feedback as a workflow lesson. Run 2 (another user of the same
workflow) starts with the lesson in the instructions of its first model call, so the scripted
model follows it and the judge accepts.

    pip install 'harness-memory-pg[openai-agents]'
    python examples/openai_agents_two_runs.py

Uses the embedded PostgreSQL (``HARNESS_HOME``) unless ``HARNESS_DATABASE_URL`` is set; writes
under a fresh tenant and deletes it at the end. Prints ``LESSON:`` and ``RUN2_FIRST_REQUEST:``
lines (the tests check the second contains the first) and exits 1 if the story did not happen.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message

from harness import Verdict
from harness.integrations.openai_agents import MemoryRun, with_memory
from harness.memory import AsyncMemoryStore, Scope

set_tracing_disabled(True)

TASK = "Summarise this week's incident report for the on-call channel."
FEEDBACK = "Start with a three-line TL;DR and name the incident id (like INC-2041) in every line."


def answer(call: ModelCall) -> object:
    """Rambles, unless its instructions carry the TL;DR lesson."""
    if "TL;DR" in (call.system_instructions or ""):
        text = "TL;DR INC-2041: payments down 20 min.\nINC-2041: fixed.\nINC-2042: VPN flaky."
    else:
        text = "It was a busy week: the payment API failed and the VPN was flaky at times."
    return [assistant_message(text)]


def judge(output: str) -> Verdict:
    """Accepts a TL;DR whose every line names an incident id."""
    lines = output.splitlines()
    if lines and lines[0].startswith("TL;DR") and all("INC-" in line for line in lines):
        return Verdict(accepted=True)
    return Verdict(accepted=False, feedback=FEEDBACK)


async def main() -> int:
    tenant = f"example-{uuid.uuid4().hex[:8]}"
    store = await AsyncMemoryStore.connect()
    models: list[ScriptedModel] = []
    try:
        for n, user in ((1, "alice"), (2, "bob")):
            model = ScriptedModel([ModelStep.respond(answer)])
            models.append(model)
            agent = with_memory(
                Agent(name="summariser", instructions="You write incident summaries.", model=model)
            )
            run = MemoryRun(store, tenant=tenant, user_id=user, workflow_id="incident-summary")
            result = await Runner.run(
                agent, TASK, context=run, run_config=RunConfig(tracing_disabled=True)
            )
            output = str(result.final_output)
            verdict = judge(output)
            outcome = await run.remember(output, verdict)
            print(f"run {n}: {'accepted' if verdict.accepted else 'rejected'}: {output!r}")
            if not verdict.accepted:
                print("LESSON:", verdict.feedback)
            for memory in outcome.memories_written:
                print(f"  stored {memory.kind.value} for {memory.scope.value} {memory.scope_id}")
        first = models[1].first_call
        instructions = first.system_instructions if first else None
        print("RUN2_FIRST_REQUEST:", json.dumps(instructions))
        ok = FEEDBACK in (instructions or "") and verdict.accepted
        print("two-run story:", "OK" if ok else "FAILED")
        return 0 if ok else 1
    finally:
        await store.delete_scope(tenant, Scope.WORKFLOW, "incident-summary")
        await store.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
