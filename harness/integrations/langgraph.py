"""LangGraph: a ``BaseStore`` backed by the MemoryStore, a recall node, and the post-verdict write.

Install with ``pip install 'harness-memory-pg[langgraph]'``.

**Namespaces.** The tenant is fixed when :class:`HarnessStore` is built (from the caller's
verified context, never from a namespace), so no namespace can reach another tenant. A
namespace names the scope, its id and the kind, then any labels of your own::

    ("user", user_id, kind, *labels)         # e.g. ("user", "alice", "preference")
    ("workflow", workflow_id, kind, *labels)
    ("session", session_id, kind, *labels)
    ("platform", kind, *labels)              # e.g. ("platform", "constraint")

An item's key is the memory key (with labels, ``ns:<label>.<label>..<key>``), so an item put
under ``("user", "alice", "preference")`` with key ``answer.length`` takes part in precedence
with every other item of that key (a workflow's narrower preference wins at recall; a platform
constraint can never be lifted). A key names one item per scope: putting it again, under any
kind, supersedes the previous version (history stays readable through the MemoryStore).

A value ``{"content": "text"}`` is stored as that text (what recall renders for the model); any
other JSON object as canonical JSON, and ``get`` returns exactly what was put. Every ``put``
passes the guard: a secret or an injection is refused with :class:`harness.errors.MemoryRejected`.
``ttl`` (minutes) becomes ``expires_at``; reads do not refresh it.

**Runs.** :func:`recall_node` / :func:`arecall_node` build a node (or ``pre_model_hook``) that
recalls once, before the first model call, for the identity in ``config["configurable"]``
(``user_id``, optional ``workflow_id`` and ``session_id``), and puts the block first as a system
message. :func:`remember` / :func:`aremember` write the lesson of a rejection once the verdict is
final; nothing is written during the run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

try:
    from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage, SystemMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.store.base import BaseStore as BaseStore
except ImportError as exc:  # pragma: no cover - exercised by the import-guard test
    raise ImportError(
        "harness.integrations.langgraph needs LangGraph: pip install 'harness-memory-pg[langgraph]'"
    ) from exc

from harness.errors import InvalidInput
from harness.integrations._lg_store import HarnessStore
from harness.memory import AsyncMemoryStore, Caller, MemoryStore
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import RecallRequest
from harness.recallset import RecallSet, RecallSetTools
from harness.run import after_verdict
from harness.run.after_verdict import Remembered, Teaching, learn
from harness.run.engine import Verdict

__all__ = [
    "RECALL_MESSAGE_ID",
    "HarnessStore",
    "RecallLimits",
    "Remembered",
    "arecall_node",
    "aremember",
    "recall_node",
    "recallset_tools",
    "remember",
]

log = logging.getLogger(__name__)

#: Id of the system message the recall node adds; its presence means "already recalled".
RECALL_MESSAGE_ID = "harness-memory-recall"


# --- the run: recall once before the first model call, write after the verdict -----------------


@dataclass(frozen=True)
class RecallLimits:
    """How much recalled context the first model call gets."""

    budget_chars: int = 2000
    max_items: int = 20
    max_item_chars: int = 500


def _identity(config: RunnableConfig | None) -> dict[str, str | None]:
    conf = (config or {}).get("configurable", {})
    user_id = conf.get("user_id")
    if not isinstance(user_id, str) or not user_id:
        raise InvalidInput(
            "config: configurable.user_id is required (the run's verified user)",
            fields=("configurable.user_id",),
        )
    return {
        "user_id": user_id,
        "workflow_id": conf.get("workflow_id"),
        "session_id": conf.get("session_id"),
    }


def _query(messages: Sequence[AnyMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text if hasattr(message, "text") else str(message.content)
    return ""


def _already_recalled(messages: Sequence[AnyMessage]) -> bool:
    return any(m.id == RECALL_MESSAGE_ID for m in messages)


def _with_block(messages: Sequence[AnyMessage], result: RecallResult) -> dict[str, Any]:
    text = result.text or "No stored memory applies to this request."
    block = SystemMessage(content=f"Memory for this run:\n{text}", id=RECALL_MESSAGE_ID)
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), block, *messages]}


def _request(
    tenant: str, config: RunnableConfig | None, query: str, limits: RecallLimits
) -> RecallRequest:
    return RecallRequest(
        tenant=tenant,
        query=query,
        budget_chars=limits.budget_chars,
        max_items=limits.max_items,
        max_item_chars=limits.max_item_chars,
        **_identity(config),
    )


def recall_node(
    store: MemoryStore, *, tenant: str, limits: RecallLimits | None = None
) -> Callable[[dict[str, Any], RunnableConfig], dict[str, Any]]:
    """A graph node (or ``pre_model_hook``) over ``MessagesState`` that recalls once per thread.

    On its first pass it recalls for ``config["configurable"]`` identity and the latest human
    message, and puts the block first as a system message (id :data:`RECALL_MESSAGE_ID`); later
    passes change nothing. A store failure degrades to an empty block with a warning.
    """
    lim = limits or RecallLimits()

    def node(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages: list[AnyMessage] = list(state.get("messages", []))
        if _already_recalled(messages):
            return {}
        request = _request(tenant, config, _query(messages), lim)
        result = store.recall(request)  # degrades on failure, never raises
        return _with_block(messages, result)

    return node


def arecall_node(
    store: AsyncMemoryStore, *, tenant: str, limits: RecallLimits | None = None
) -> Callable[[dict[str, Any], RunnableConfig], Awaitable[dict[str, Any]]]:
    """:func:`recall_node` over an :class:`AsyncMemoryStore` (use with ``graph.ainvoke``)."""
    lim = limits or RecallLimits()

    async def node(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages: list[AnyMessage] = list(state.get("messages", []))
        if _already_recalled(messages):
            return {}
        request = _request(tenant, config, _query(messages), lim)
        result = await store.recall(request)  # degrades on failure, never raises
        return _with_block(messages, result)

    return node


def _learning(
    verdict: Verdict,
    tenant: str,
    config: RunnableConfig,
    task_input: str,
    run_id: str | None,
    placed: Sequence[uuid.UUID],
) -> Teaching:
    ident = _identity(config)
    caller = Caller(tenant, str(ident["user_id"]), ident["workflow_id"])
    run = run_id or f"run-{uuid.uuid4().hex[:16]}"
    return learn([verdict], caller=caller, task_input=task_input, run_id=run, placed=placed)


def remember(
    store: MemoryStore,
    verdict: Verdict,
    *,
    tenant: str,
    config: RunnableConfig,
    task_input: str,
    run_id: str | None = None,
    placed: Sequence[uuid.UUID] = (),
) -> Remembered:
    """Once the verdict is final: a rejection with concrete feedback reinforces the lesson of
    the run's workflow (or user) it restates, or becomes a new one; ``placed`` (the ids of the
    recall's items, when the graph recalled) gives those lessons their outcomes. Side effect:
    one ``store.learn``; refusals and failures are reported in the result, never raised."""
    return after_verdict.remember(
        store, _learning(verdict, tenant, config, task_input, run_id, placed)
    )


async def aremember(
    store: AsyncMemoryStore,
    verdict: Verdict,
    *,
    tenant: str,
    config: RunnableConfig,
    task_input: str,
    run_id: str | None = None,
    placed: Sequence[uuid.UUID] = (),
) -> Remembered:
    """:func:`remember` over an :class:`AsyncMemoryStore`."""
    return await after_verdict.aremember(
        store, _learning(verdict, tenant, config, task_input, run_id, placed)
    )


def recallset_tools(recallset: RecallSet) -> list[BaseTool]:
    """The run's RecallSet as LangChain tools (``recallset_add``, ``_mark``, ``_read``,
    ``_overview``), e.g. for ``ToolNode`` and ``model.bind_tools``.

    A call with bad arguments (missing, unknown, wrong type, unknown id) returns the tool's
    ``error: ...`` text, never an exception that ends the run. Notes live for the run only.
    """
    tools = RecallSetTools(recallset)

    def make(definition: Mapping[str, Any]) -> BaseTool:
        name = str(definition["name"])

        def call(**arguments: Any) -> str:
            return tools.dispatch({"name": name, "arguments": arguments})

        return StructuredTool.from_function(
            func=call,
            name=name,
            description=str(definition["description"]),
            # a JSON schema: LangChain passes the arguments through unvalidated, and the
            # dispatcher answers bad ones with the tool's error text
            args_schema=dict(definition["input_schema"]),
        )

    return [make(d) for d in tools.definitions]
