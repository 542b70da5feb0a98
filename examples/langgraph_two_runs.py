"""Two runs of a LangGraph agent with harness-memory, offline (LangChain's fake chat model).

Run 1 is rejected by a reviewer with concrete feedback; the lesson is written only after that
verdict. Run 2's first model request carries the lesson in its system message.

    pip install 'harness-memory-pg[langgraph]'
    python examples/langgraph_two_runs.py      # embedded PostgreSQL, or HARNESS_DATABASE_URL
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, MessagesState, StateGraph

from harness.integrations.langgraph import HarnessStore, recall_node, remember
from harness.memory import MemoryStore
from harness.run.engine import Verdict

TASK = "Write the quarterly revenue summary for the board"
FEEDBACK = "Every figure needs its source year in brackets, e.g. 4.2M (2025)."


class FirstRequest(BaseCallbackHandler):
    """Keeps the messages of the first chat-model request of a run."""

    def __init__(self) -> None:
        self.messages: list[BaseMessage] | None = None

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[BaseMessage]], **kw: Any
    ) -> None:
        if self.messages is None:
            self.messages = messages[0]


def build_graph(store: MemoryStore, tenant: str, reply: str) -> Any:
    model = FakeMessagesListChatModel(responses=[AIMessage(reply)])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("recall", recall_node(store, tenant=tenant))  # once, before the model
    builder.add_node("agent", agent)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "agent")
    return builder.compile(store=HarnessStore(store, tenant=tenant))


def run(store: MemoryStore, tenant: str, reply: str) -> str:
    seen = FirstRequest()
    config: RunnableConfig = {
        "configurable": {"user_id": "alice", "workflow_id": "board-report"},
        "callbacks": [seen],
    }
    build_graph(store, tenant, reply).invoke({"messages": [HumanMessage(TASK)]}, config)
    assert seen.messages is not None
    return str(seen.messages[0].content)


def main() -> int:
    store = MemoryStore.connect()
    tenant = f"example-{uuid.uuid4().hex[:8]}"
    try:
        # LangGraph code that takes a store works unchanged: a user preference, put as usual.
        HarnessStore(store, tenant=tenant).put(
            ("user", "alice", "preference"), "tone", {"content": "Plain words, no jargon."}
        )
        first = run(store, tenant, "Revenue grew to 4.2M.")
        print("run 1 first request system message:\n" + first + "\n")
        verdict = Verdict(accepted=False, feedback=FEEDBACK)  # the reviewer's verdict
        done = remember(
            store,
            verdict,
            tenant=tenant,
            config={"configurable": {"user_id": "alice", "workflow_id": "board-report"}},
            task_input=TASK,
        )
        print(f"after the verdict: {len(done.written)} lesson written\n")
        second = run(store, tenant, "Revenue grew to 4.2M (2025).")
        print("run 2 first request system message:\n" + second + "\n")
        print("LESSON:", FEEDBACK)
        print("RUN2_FIRST_REQUEST:", json.dumps(second))
        has = FEEDBACK in second and FEEDBACK not in first
        print(f"RUN 2 FIRST REQUEST HAS THE LESSON: {'yes' if has else 'no'}")
        return 0 if has else 1
    finally:
        store.delete_scope(tenant, "workflow", "board-report")
        store.delete_scope(tenant, "user", "alice")
        store.close()


if __name__ == "__main__":
    sys.exit(main())
