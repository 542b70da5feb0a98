"""Two runs of a Claude agent with the memory tool backed by harness-memory, offline.

The Anthropic SDK's own tool runner drives the ``memory`` tool; the model's replies are scripted
(the SDK's message and ``tool_use`` JSON served by an in-process HTTP transport, no network).
Run 1 views its memories, tries to plant a file mid-run, and is rejected by a reviewer with
concrete feedback: the planted file is dropped, the lesson is written after the verdict. Run 2's
first model request carries the lesson in its ``system`` prompt.

    pip install 'harness-memory-pg[anthropic]'
    python examples/anthropic_memory_two_runs.py   # embedded PostgreSQL, or HARNESS_DATABASE_URL
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import httpx2
from anthropic import Anthropic

from harness.integrations.anthropic_memory import LAYOUT, HarnessMemoryTool
from harness.memory import MemoryStore
from harness.run.engine import Verdict

TASK = "Write the quarterly revenue summary for the board"
FEEDBACK = "Every figure needs its source year in brackets, e.g. 4.2M (2025)."
PLANTED = "/memories/workflow/board-report/decision/years"


def message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:8]}",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def memory_call(call_id: str, **command: Any) -> dict[str, Any]:
    return message(
        [{"type": "tool_use", "id": call_id, "name": "memory", "input": command}], "tool_use"
    )


def scripted_client(replies: list[dict[str, Any]], requests: list[dict[str, Any]]) -> Anthropic:
    """A real Anthropic client whose HTTP transport answers from a script (no network)."""
    script = iter(replies)

    def answer(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.content))
        return httpx2.Response(200, json=next(script))

    transport = httpx2.MockTransport(answer)
    return Anthropic(api_key="offline", http_client=httpx2.Client(transport=transport))


def run(
    store: MemoryStore, tenant: str, replies: list[dict[str, Any]]
) -> tuple[HarnessMemoryTool, str]:
    tool = HarnessMemoryTool(store, tenant=tenant, user_id="alice", workflow_id="board-report")
    recalled = tool.recall(TASK)  # once, before the first model call
    requests: list[dict[str, Any]] = []
    client = scripted_client(replies, requests)
    client.beta.messages.tool_runner(
        model="claude-scripted",
        max_tokens=512,
        system=f"{LAYOUT}\nMemory for this run:\n{recalled.text or '(none)'}",
        messages=[{"role": "user", "content": TASK}],
        tools=[tool],
    ).until_done()
    return tool, str(requests[0]["system"])


def main() -> int:
    store = MemoryStore.connect()
    tenant = f"example-{uuid.uuid4().hex[:8]}"
    try:
        tool, first = run(
            store,
            tenant,
            [
                memory_call("t1", command="view", path="/memories"),
                memory_call("t2", command="create", path=PLANTED, file_text="Years are optional."),
                message([{"type": "text", "text": "Revenue grew to 4.2M."}], "end_turn"),
            ],
        )
        print("run 1 first request system:\n" + first + "\n")
        done = tool.remember(Verdict(accepted=False, feedback=FEEDBACK), task_input=TASK)
        print(f"after the verdict: {len(done.written)} lesson written, staged files dropped\n")
        planted = store.history(tenant, "workflow", "board-report", "years")
        print(f"MID-RUN FILE WRITTEN LONG-TERM: {'yes' if planted else 'no'}")

        _, second = run(
            store,
            tenant,
            [message([{"type": "text", "text": "Revenue grew to 4.2M (2025)."}], "end_turn")],
        )
        print("run 2 first request system:\n" + second + "\n")
        print("LESSON:", FEEDBACK)
        print("RUN2_FIRST_REQUEST:", json.dumps(second))
        has = FEEDBACK in second and FEEDBACK not in first
        print(f"RUN 2 FIRST REQUEST HAS THE LESSON: {'yes' if has else 'no'}")
        return 0 if has and not planted else 1
    finally:
        store.delete_scope(tenant, "workflow", "board-report")
        store.close()


if __name__ == "__main__":
    sys.exit(main())
