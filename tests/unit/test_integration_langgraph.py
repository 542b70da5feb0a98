"""LangGraph integration: the MemoryStore as a LangGraph ``BaseStore``, the recall node in a real
``StateGraph`` with LangChain's fake chat models, and the post-verdict lesson.

Here the tests that need no database, model or other process; the others are in
tests/db/integrations/test_integration_langgraph_db.py,
tests/system/test_integration_langgraph_system.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from harness.errors import InvalidInput
from harness.integrations import langgraph as hlg
from harness.integrations._lg_mapping import (
    Target,
    content_of,
    decode_key,
    encode_key,
    matches_filter,
    matches_namespace,
    parse_namespace,
    value_of,
)
from harness.memory import Kind, Scope
from harness.recallset import RecallSet
from tests.support.stores import unreachable_store

# --- pure mapping ---------------------------------------------------------------------------------

_label = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters="."),
    min_size=1,
    max_size=8,
).filter(lambda s: s == s.strip())


@st.composite
def _targets(draw: st.DrawFn) -> Target:
    scope = draw(st.sampled_from(list(Scope)))
    scope_id = None if scope is Scope.PLATFORM else draw(_label)
    return Target(
        scope,
        scope_id,
        draw(st.sampled_from(list(Kind))),
        tuple(draw(st.lists(_label, max_size=3))),
    )


@given(_targets())
def test_a_namespace_names_exactly_one_target(target: Target) -> None:
    assert parse_namespace(target.namespace) == target


@given(st.lists(_label, max_size=3), st.text(min_size=1, max_size=20))
def test_labelled_keys_decode_to_their_labels_and_key(labels: list[str], key: str) -> None:
    if not labels and key.startswith("ns:"):
        with pytest.raises(InvalidInput):
            encode_key((), key)
        return
    assert decode_key(encode_key(tuple(labels), key)) == (tuple(labels), key)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.text(max_size=8), _json, max_size=4))
def test_every_json_value_reads_back_as_it_was_put(value: dict[str, Any]) -> None:
    assert value_of(content_of(value)) == value


def test_a_plain_content_value_is_stored_as_its_text() -> None:
    assert content_of({"content": "Answers in French."}) == "Answers in French."
    assert value_of(content_of({"content": '{"a": 1}'})) == {"content": '{"a": 1}'}


@pytest.mark.parametrize(
    "namespace",
    [
        (),
        ("team", "x", "fact"),
        ("user",),
        ("user", "alice"),
        ("user", "alice", "note"),
        ("platform",),
    ],
)
def test_namespaces_outside_the_layout_are_refused_naming_the_field(
    namespace: tuple[str, ...],
) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_namespace(namespace)
    assert err.value.fields == ("namespace",)


def test_filters_and_namespace_conditions_follow_langgraph_semantics() -> None:
    value = {"n": 3, "tag": "a", "meta": {"lang": "fr"}}
    assert matches_filter(value, {"n": {"$gt": 2, "$lte": 3}, "meta.lang": "fr"})
    assert not matches_filter(value, {"n": {"$ne": 3}})
    assert not matches_filter(value, {"missing": None})
    ns = ("user", "alice", "fact", "x")
    assert matches_namespace(ns, [("prefix", ("user", "*")), ("suffix", ("fact", "x"))])
    assert not matches_namespace(ns, [("suffix", ("lesson", "x"))])


# --- the recall node in a real StateGraph -----------------------------------------------------------


class _Requests(BaseCallbackHandler):
    """Every chat-model request, as LangChain reports it (the model's own input)."""

    def __init__(self) -> None:
        self.requests: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[BaseMessage]], **kw: Any
    ) -> None:
        self.requests.extend(messages)


def _graph(recall: Any, model: FakeMessagesListChatModel, *, calls: int = 1) -> Any:
    """START -> (recall -> model) x calls: the recall node before every model call."""
    builder = StateGraph(MessagesState)
    prev = START
    for i in range(calls):

        def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        builder.add_node(f"recall{i}", recall)
        builder.add_node(f"model{i}", call_model)
        builder.add_edge(prev, f"recall{i}")
        builder.add_edge(f"recall{i}", f"model{i}")
        prev = f"model{i}"
    return builder.compile()


def _config(tenant: str, requests: _Requests, **ident: str) -> RunnableConfig:
    return {"configurable": {"user_id": "alice", **ident}, "callbacks": [requests]}


def test_a_store_outage_degrades_to_an_empty_block_and_the_run_goes_on(
    tenant: str, caplog: pytest.LogCaptureFixture
) -> None:
    broken = unreachable_store()
    try:
        requests = _Requests()
        model = FakeMessagesListChatModel(responses=[AIMessage("answer")])
        out = _graph(hlg.recall_node(broken, tenant=tenant), model).invoke(
            {"messages": [HumanMessage("hi")]}, _config(tenant, requests)
        )
        assert out["messages"][-1].content == "answer"
        assert "No stored memory" in str(requests.requests[0][0].content)
        assert "recall failed" in caplog.text
    finally:
        broken.close()


def test_the_recallset_tools_answer_bad_calls_with_error_text_and_the_run_goes_on() -> None:
    recallset = RecallSet()
    tools = hlg.recallset_tools(recallset)
    calls = [
        {
            "name": "recallset_add",
            "args": {"content": "Check the Q3 totals.", "mark": "keep"},
            "id": "c1",
        },
        {"name": "recallset_mark", "args": {"id": "r99", "mark": "keep"}, "id": "c2"},
        {"name": "recallset_add", "args": {"content": 3, "colour": "red"}, "id": "c3"},
        {"name": "recallset_overview", "args": {}, "id": "c4"},
    ]
    model = FakeMessagesListChatModel(
        responses=[AIMessage("", tool_calls=calls), AIMessage("done")]
    )

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    out = builder.compile().invoke({"messages": [HumanMessage("go")]})

    answers = {
        m.tool_call_id: str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)
    }
    assert '"status": "added"' in answers["c1"]
    assert answers["c2"].startswith("error:") and "r99" in answers["c2"]
    assert answers["c3"].startswith("error:")
    assert "Check the Q3 totals." in answers["c4"]
    assert [it.content for it in recallset.items()] == ["Check the Q3 totals."]
    assert out["messages"][-1].content == "done"
