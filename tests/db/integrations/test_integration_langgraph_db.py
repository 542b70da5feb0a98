"""LangGraph integration: the MemoryStore as a LangGraph ``BaseStore``, the recall node in a real
``StateGraph`` with LangChain's fake chat models, and the post-verdict lesson.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_integration_langgraph.py, tests/system/test_integration_langgraph_system.py."""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.prebuilt import create_react_agent
from langgraph.store.base import BaseStore

from harness.errors import InvalidInput, MemoryRejected
from harness.integrations import langgraph as hlg
from harness.memory import AsyncMemoryStore, MemoryStore, Scope, Status
from harness.run.engine import Verdict
from tests.support.hash_embedder import HashEmbedder
from tests.support.loop_thread import open_async_store
from tests.unit.test_integration_langgraph import _config, _graph, _Requests

ROOT = Path(__file__).resolve().parents[3]


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
