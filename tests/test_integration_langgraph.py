"""LangGraph integration: the MemoryStore as a LangGraph ``BaseStore``, the recall node in a real
``StateGraph`` with LangChain's fake chat models, and the post-verdict lesson."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition
from langgraph.store.base import BaseStore

from harness.errors import InvalidInput, MemoryRejected
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
from harness.memory import AsyncMemoryStore, Kind, MemoryStore, Scope, Status
from harness.recallset import RecallSet
from harness.run.engine import Verdict
from tests.conftest import HashEmbedder, unreachable_store
from tests.loop_thread import open_async_store

ROOT = Path(__file__).resolve().parent.parent

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


# --- the store ------------------------------------------------------------------------------------


@pytest.fixture
def lg(store: MemoryStore, tenant: str) -> HarnessStore:
    return hlg.HarnessStore(store, tenant=tenant)


HarnessStore = hlg.HarnessStore
ALICE_PREF = ("user", "alice", "preference")


def test_put_then_get_returns_the_value_and_put_again_replaces_it(lg: HarnessStore) -> None:
    assert isinstance(lg, BaseStore)
    lg.put(ALICE_PREF, "answer.length", {"content": "Detailed answers."})
    item = lg.get(ALICE_PREF, "answer.length")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        ALICE_PREF,
        "answer.length",
        {"content": "Detailed answers."},
    )
    lg.put(ALICE_PREF, "answer.length", {"content": "Short answers.", "source": "chat"})
    again = lg.get(ALICE_PREF, "answer.length")
    assert again is not None and again.value == {"content": "Short answers.", "source": "chat"}
    assert lg.get(ALICE_PREF, "other") is None
    # another kind at the same key is not this item
    assert lg.get(("user", "alice", "fact"), "answer.length") is None


def test_a_put_supersedes_so_history_keeps_the_old_version(
    lg: HarnessStore, store: MemoryStore, tenant: str
) -> None:
    lg.put(ALICE_PREF, "tone", {"content": "Formal."})
    lg.put(ALICE_PREF, "tone", {"content": "Casual."})
    versions = store.history(tenant, Scope.USER, "alice", "tone")
    by_content = {m.content: m for m in versions}
    assert set(by_content) == {"Formal.", "Casual."}
    assert by_content["Formal."].status is Status.SUPERSEDED
    assert by_content["Formal."].superseded_by == by_content["Casual."].id


def test_delete_forgets_the_item_for_good(
    lg: HarnessStore, store: MemoryStore, tenant: str
) -> None:
    lg.put(ALICE_PREF, "tone", {"content": "Formal."})
    lg.put(ALICE_PREF, "tone", {"content": "Casual."})
    lg.delete(ALICE_PREF, "tone")
    assert lg.get(ALICE_PREF, "tone") is None
    assert store.history(tenant, Scope.USER, "alice", "tone") == []
    lg.delete(ALICE_PREF, "tone")  # idempotent


def test_search_by_prefix_filter_query_and_pages(lg: HarnessStore) -> None:
    lg.put(
        ("user", "alice", "fact", "pets"), "cat", {"content": "Alice has a cat named Miso.", "n": 1}
    )
    lg.put(
        ("user", "alice", "fact", "pets"),
        "dog",
        {"content": "Alice walks the neighbour's dog.", "n": 2},
    )
    lg.put(("user", "alice", "fact", "work"), "job", {"content": "Alice is a nurse.", "n": 3})
    lg.put(("user", "bob", "fact"), "job", {"content": "Bob is a chef.", "n": 4})

    pets = lg.search(("user", "alice", "fact", "pets"))
    assert {(i.namespace, i.key) for i in pets} == {
        (("user", "alice", "fact", "pets"), "cat"),
        (("user", "alice", "fact", "pets"), "dog"),
    }
    alice = lg.search(("user", "alice"), filter={"n": {"$gte": 2}})
    assert sorted(i.key for i in alice) == ["dog", "job"]
    assert all(i.namespace[1] == "alice" for i in alice)
    ranked = lg.search(("user",), query="cat named Miso")
    assert ranked[0].key == "cat" and ranked[0].score == 1.0
    assert len(lg.search(("user",), limit=2)) == 2
    assert len(lg.search(("user",), limit=10, offset=3)) == 1


def test_list_namespaces_with_prefix_suffix_and_depth(lg: HarnessStore) -> None:
    lg.put(("user", "alice", "fact", "pets"), "cat", {"content": "cat"})
    lg.put(("user", "alice", "fact", "work"), "job", {"content": "nurse"})
    lg.put(("workflow", "wf-1", "lesson"), "x", {"content": "Cite the source of every number."})
    lg.put(("platform", "constraint"), "lang", {"content": "Answer in English."})
    assert lg.list_namespaces(prefix=("user",)) == [
        ("user", "alice", "fact", "pets"),
        ("user", "alice", "fact", "work"),
    ]
    assert lg.list_namespaces(suffix=("lesson",)) == [("workflow", "wf-1", "lesson")]
    assert lg.list_namespaces(prefix=("user", "*", "fact"), max_depth=3) == [
        ("user", "alice", "fact")
    ]
    assert ("platform", "constraint") in lg.list_namespaces()


def test_tenants_never_see_each_other(store: MemoryStore, tenant: str, other_tenant: str) -> None:
    mine = hlg.HarnessStore(store, tenant=tenant)
    theirs = hlg.HarnessStore(store, tenant=other_tenant)
    mine.put(ALICE_PREF, "tone", {"content": "Formal."})
    assert theirs.get(ALICE_PREF, "tone") is None
    assert theirs.search(()) == []
    assert theirs.list_namespaces() == []
    theirs.delete(ALICE_PREF, "tone")
    assert mine.get(ALICE_PREF, "tone") is not None


def test_a_user_bound_store_refuses_other_users(
    lg: HarnessStore, store: MemoryStore, tenant: str
) -> None:
    lg.put(("user", "bob", "fact"), "job", {"content": "Bob is a chef."})
    alice_only = hlg.HarnessStore(store, tenant=tenant, user_id="alice")
    with pytest.raises(InvalidInput, match="another user"):
        alice_only.get(("user", "bob", "fact"), "job")
    with pytest.raises(InvalidInput, match="another user"):
        alice_only.put(("user", "bob", "fact"), "job", {"content": "changed"})
    assert alice_only.search(("user",)) == []
    with pytest.raises(InvalidInput, match="another user"):
        alice_only.search(("user", "bob"))
    assert alice_only.list_namespaces() == []


def test_a_secret_put_is_refused_and_nothing_is_written(lg: HarnessStore) -> None:
    with pytest.raises(MemoryRejected):
        lg.put(
            ALICE_PREF,
            "key",
            {"content": "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB"},
        )
    assert lg.get(ALICE_PREF, "key") is None


def test_ttl_becomes_an_expiry_that_hides_the_item(
    lg: HarnessStore, store: MemoryStore, tenant: str
) -> None:
    lg.put(ALICE_PREF, "tone", {"content": "Formal."}, ttl=1.0)
    (memory,) = store.history(tenant, Scope.USER, "alice", "tone")
    assert memory.expires_at is not None
    assert (memory.expires_at - memory.created_at).total_seconds() == pytest.approx(60)


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


def test_the_first_request_carries_the_resolved_memory_once(
    store: MemoryStore, tenant: str
) -> None:
    lg = hlg.HarnessStore(store, tenant=tenant)
    lg.put(ALICE_PREF, "answer.length", {"content": "Give detailed answers."})
    lg.put(("workflow", "wf-1", "preference"), "answer.length", {"content": "Three-line summary."})
    lg.put(("user", "bob", "preference"), "tone", {"content": "Bob likes jokes."})
    requests = _Requests()
    model = FakeMessagesListChatModel(responses=[AIMessage("first"), AIMessage("second")])
    graph = _graph(hlg.recall_node(store, tenant=tenant), model, calls=2)
    out = graph.invoke(
        {"messages": [HumanMessage("Summarise the report")]},
        _config(tenant, requests, workflow_id="wf-1"),
    )
    first, second = requests.requests
    assert isinstance(first[0], SystemMessage) and first[0].id == hlg.RECALL_MESSAGE_ID
    system = str(first[0].content)
    assert "Three-line summary." in system  # the narrower workflow preference wins
    assert "Give detailed answers." not in system and "Bob likes jokes." not in system
    assert isinstance(first[1], HumanMessage)
    # the second model call sees the same single block: recall happened once
    assert [m for m in second if isinstance(m, SystemMessage)] == [first[0]]
    assert [m.content for m in out["messages"][-2:]] == ["first", "second"]


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


def test_a_run_without_a_verified_user_is_refused(store: MemoryStore, tenant: str) -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage("answer")])
    with pytest.raises(InvalidInput) as err:
        _graph(hlg.recall_node(store, tenant=tenant), model).invoke(
            {"messages": [HumanMessage("hi")]}
        )
    assert err.value.fields == ("configurable.user_id",)


def test_two_runs_a_rejection_teaches_the_next_first_request(
    store: MemoryStore, tenant: str
) -> None:
    feedback = "Every figure needs its source year in brackets."
    task = "Write the quarterly revenue summary"
    results = []
    for attempt in range(2):
        requests = _Requests()
        config = _config(tenant, requests, workflow_id="wf-report")
        model = FakeMessagesListChatModel(responses=[AIMessage(f"draft {attempt}")])
        _graph(hlg.recall_node(store, tenant=tenant), model).invoke(
            {"messages": [HumanMessage(task)]}, config
        )
        results.append(str(requests.requests[0][0].content))
        if attempt == 0:
            # nothing was written during the run
            assert (
                store.recall(
                    {
                        "tenant": tenant,
                        "user_id": "alice",
                        "workflow_id": "wf-report",
                        "query": task,
                    }
                ).items
                == []
            )
            done = hlg.remember(
                store,
                Verdict(accepted=False, feedback=feedback),
                tenant=tenant,
                config=config,
                task_input=task,
            )
            assert len(done.written) == 1 and done.written[0].scope is Scope.WORKFLOW
    assert feedback not in results[0]
    assert feedback in results[1]


def test_generic_feedback_and_acceptances_teach_nothing(store: MemoryStore, tenant: str) -> None:
    config: RunnableConfig = {"configurable": {"user_id": "alice"}}
    for verdict in (Verdict(accepted=False, feedback="wrong"), Verdict(accepted=True)):
        done = hlg.remember(store, verdict, tenant=tenant, config=config, task_input="x")
        assert done.written == [] and done.rejected == []


# --- async ---------------------------------------------------------------------------------------


@pytest.fixture
def async_store(db_url: str, clock: Any) -> Iterator[AsyncMemoryStore]:
    s = asyncio.run(open_async_store(db_url, HashEmbedder(), clock))
    yield s
    asyncio.run(s.close())


def test_the_async_path_stores_recalls_and_remembers(
    async_store: AsyncMemoryStore, tenant: str
) -> None:
    async def scenario() -> tuple[str, str, list[tuple[str, ...]]]:
        lg = hlg.HarnessStore(async_store, tenant=tenant)
        await lg.aput(("platform", "constraint"), "lang", {"content": "Answer in English only."})
        await lg.aput(ALICE_PREF, "lang", {"content": "Answer in French."})
        got = await lg.aget(ALICE_PREF, "lang")
        assert got is not None and got.value == {"content": "Answer in French."}
        assert [i.key for i in await lg.asearch(("platform",))] == ["lang"]
        namespaces = await lg.alist_namespaces(prefix=("user",))
        with pytest.raises(MemoryRejected):
            await lg.aput(ALICE_PREF, "pw", {"content": "password: hunter2hunter2"})
        requests = _Requests()
        model = FakeMessagesListChatModel(responses=[AIMessage("ok")])
        graph = _graph(hlg.arecall_node(async_store, tenant=tenant), model)
        config = _config(tenant, requests, workflow_id="wf-a")
        await graph.ainvoke({"messages": [HumanMessage("Reply to the customer")]}, config)
        first = str(requests.requests[0][0].content)
        await hlg.aremember(
            async_store,
            Verdict(accepted=False, feedback="Always greet the customer by their first name."),
            tenant=tenant,
            config=config,
            task_input="Reply to the customer",
        )
        requests2 = _Requests()
        model2 = FakeMessagesListChatModel(responses=[AIMessage("ok")])
        await _graph(hlg.arecall_node(async_store, tenant=tenant), model2).ainvoke(
            {"messages": [HumanMessage("Reply to the customer")]},
            _config(tenant, requests2, workflow_id="wf-a"),
        )
        return first, str(requests2.requests[0][0].content), namespaces

    first, second, namespaces = asyncio.run(scenario())
    assert namespaces == [ALICE_PREF]
    assert (
        "Answer in English only." in first and "Answer in French." not in first
    )  # constraint wins
    assert "first name" not in first and "first name" in second
    with pytest.raises(TypeError, match="async only"):
        hlg.HarnessStore(async_store, tenant=tenant).get(ALICE_PREF, "lang")


# --- the example ---------------------------------------------------------------------------------


def test_importing_without_the_extra_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['langgraph'] = None; sys.modules['langgraph.store'] = None\n"
        "try:\n    import harness.integrations.langgraph\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'harness-memory[langgraph]'" in out.stdout


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


# --- stateful: the store behaves like LangGraph's dict of (namespace, key) -> value --------------

_NAMESPACES = [
    ("user", "alice", "fact"),
    ("user", "alice", "fact", "notes"),
    ("workflow", "wf-1", "lesson"),
    ("platform", "constraint"),
]
_VALUES = st.one_of(
    st.sampled_from(["Answer briefly.", "Cite sources.", '{"looks": "like json"}']).map(
        lambda text: {"content": text}
    ),
    st.fixed_dictionaries({"n": st.integers(0, 9), "tag": st.sampled_from(["a", "b"])}),
)


def test_the_store_behaves_like_a_dict_of_items(store: MemoryStore) -> None:
    class Items(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.lg = hlg.HarnessStore(store, tenant=f"t-{uuid.uuid4().hex[:10]}")
            self.model: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}

        @rule(ns=st.sampled_from(_NAMESPACES), key=st.sampled_from(["k1", "k.2"]), value=_VALUES)
        def put(self, ns: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
            self.lg.put(ns, key, value)
            self.model[(ns, key)] = value
            item = self.lg.get(ns, key)
            assert item is not None and item.value == value and item.namespace == ns

        @rule(ns=st.sampled_from(_NAMESPACES), key=st.sampled_from(["k1", "k.2"]))
        def delete(self, ns: tuple[str, ...], key: str) -> None:
            self.lg.delete(ns, key)
            self.model.pop((ns, key), None)
            assert self.lg.get(ns, key) is None

        @invariant()
        def search_lists_exactly_the_live_items(self) -> None:
            found = {(i.namespace, i.key): i.value for i in self.lg.search((), limit=100)}
            assert found == self.model
            assert self.lg.list_namespaces() == sorted({ns for ns, _ in self.model})

    run_state_machine_as_test(
        Items, settings=settings(max_examples=8, stateful_step_count=8, deadline=None)
    )


def test_the_recall_node_works_as_a_prebuilt_agents_pre_model_hook(
    store: MemoryStore, tenant: str
) -> None:
    hlg.HarnessStore(store, tenant=tenant).put(
        ("platform", "constraint"), "lang", {"content": "Answer in English only."}
    )
    requests = _Requests()
    model = FakeMessagesListChatModel(responses=[AIMessage("ok")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's
        agent = create_react_agent(
            model, tools=[], pre_model_hook=hlg.recall_node(store, tenant=tenant)
        )
    agent.invoke({"messages": [HumanMessage("Bonjour")]}, _config(tenant, requests))
    (first,) = requests.requests
    assert first[0].id == hlg.RECALL_MESSAGE_ID
    assert "Answer in English only." in str(first[0].content)
