"""RecallSet: dedup, marks, eviction order, overview-first reading, tools, and a stateful model."""

from __future__ import annotations

import json

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from harness.errors import InvalidInput, MemoryNotFound
from harness.fingerprint import fingerprint, normalize
from harness.recallset import TOOL_DEFINITIONS, Mark, RecallSet, RecallSetTools

RANK = {Mark.DISCARD: 0, Mark.CHECK: 1, Mark.KEEP: 2}


def test_normalisation_is_nfkc_casefold_and_whitespace() -> None:
    assert normalize("  Ｈｅｌｌｏ\t\nWORLD  ") == "hello world"
    assert normalize("Straße") == normalize("STRASSE")
    assert fingerprint("a  b") == fingerprint("A B\n")
    assert fingerprint("a b") != fingerprint("ab")


def test_duplicate_merges_mark_and_priority_upward() -> None:
    rs = RecallSet(max_items=5)
    a = rs.add("Use the staging DB", mark=Mark.KEEP, priority=1)
    b = rs.add("use  the STAGING db", mark=Mark.CHECK, priority=5)
    assert b.duplicate and b.id == a.id
    assert b.item.mark is Mark.KEEP and b.item.priority == 5
    c = rs.add("Use the staging DB", mark="discard", priority=0)
    assert c.item.mark is Mark.KEEP and c.item.priority == 5
    assert len(rs) == 1


def test_discarded_content_is_not_revived_until_marked_again() -> None:
    rs = RecallSet(max_items=5)
    a = rs.add("junk result")
    rs.mark(a.id, Mark.DISCARD)
    again = rs.add("JUNK result", mark=Mark.KEEP, priority=9)
    assert again.duplicate and again.item.mark is Mark.DISCARD and again.item.priority == 0
    rs.mark(a.id, Mark.KEEP)
    assert rs.add("junk result").item.mark is Mark.KEEP


def test_evicted_discarded_content_stays_remembered() -> None:
    rs = RecallSet(max_items=1)
    junk = rs.add("junk", mark=Mark.DISCARD)
    kept = rs.add("useful", mark=Mark.KEEP)
    assert kept.evicted == (junk.item,)
    back = rs.add("junk")
    assert (
        back.duplicate
        and back.item.mark is Mark.DISCARD
        and "useful" in [i.content for i in rs.items()]
    )


def test_eviction_order_discard_check_keep_then_priority_then_age() -> None:
    rs = RecallSet(max_items=4)
    k = rs.add("k", mark=Mark.KEEP)
    c_low = rs.add("c-low", mark=Mark.CHECK, priority=0)
    c_high = rs.add("c-high", mark=Mark.CHECK, priority=3)
    d = rs.add("d", mark=Mark.DISCARD, priority=10)
    assert rs.add("new1", mark=Mark.KEEP).evicted == (d.item,)
    assert rs.add("new2", mark=Mark.KEEP).evicted[0].id == c_low.id
    assert rs.add("new3", mark=Mark.KEEP).evicted[0].id == c_high.id
    assert rs.add("new4", mark=Mark.KEEP).evicted[0].id == k.id  # oldest keep


def test_overview_has_titles_never_bodies_and_read_returns_body() -> None:
    rs = RecallSet()
    body = "First line is the title\n" + "secret detail " * 20
    a = rs.add(body)
    b = rs.add("x" * 200, title="Custom title")
    ov = rs.overview()
    assert [o["id"] for o in ov] == [a.id, b.id]
    assert ov[0]["title"] == "First line is the title"
    assert ov[1]["title"] == "Custom title"
    assert all("secret detail" not in json.dumps(o) and len(str(o["title"])) <= 80 for o in ov)
    assert len(RecallSet().add("y" * 300).item.title) == 80
    assert rs.read(a.id) == body
    with pytest.raises(MemoryNotFound, match="r99"):
        rs.read("r99")


def test_bad_arguments_are_typed_errors() -> None:
    rs = RecallSet()
    with pytest.raises(InvalidInput, match="content"):
        rs.add("   ")
    with pytest.raises(InvalidInput, match="mark"):
        rs.add("x", mark="maybe")
    with pytest.raises(InvalidInput, match="max_items"):
        RecallSet(max_items=0)


def test_clear_forgets_everything() -> None:
    rs = RecallSet()
    a = rs.add("a", mark=Mark.DISCARD)
    rs.clear()
    assert rs.items() == [] and rs.overview() == []
    assert not rs.add("a").duplicate  # discarded fingerprints are gone too
    assert a.id not in rs or rs.get(a.id).content == "a"


def test_tools_dispatch_and_errors_never_raise() -> None:
    tools = RecallSetTools(RecallSet(max_items=2))
    names = {d["name"] for d in TOOL_DEFINITIONS}
    assert names == {"recallset_add", "recallset_mark", "recallset_read", "recallset_overview"}
    for d in TOOL_DEFINITIONS:
        assert d["input_schema"]["type"] == "object"
    added = json.loads(
        tools.dispatch(
            {"name": "recallset_add", "arguments": {"content": "note one", "mark": "keep"}}
        )
    )
    assert added == {"id": "r1", "mark": "keep", "status": "added"}
    assert tools.dispatch({"name": "recallset_read", "arguments": '{"id": "r1"}'}) == "note one"
    assert (
        json.loads(
            tools.dispatch({"name": "recallset_mark", "arguments": {"id": "r1", "mark": "check"}})
        )["mark"]
        == "check"
    )
    bad = [
        {"name": "recallset_read", "arguments": {"id": "nope"}},
        {"name": "recallset_mark", "arguments": {"id": "r1", "mark": "maybe"}},
        {"name": "recallset_add", "arguments": {}},
        {"name": "recallset_add", "arguments": {"content": 5}},
        {"name": "recallset_add", "arguments": {"content": "x", "priority": "high"}},
        {"name": "recallset_add", "arguments": "{not json"},
        {"name": "recallset_delete", "arguments": {}},
        {"name": "recallset_add", "arguments": {"content": "x", "colour": "red"}},
        "not a dict",
    ]
    for call in bad:
        out = tools.dispatch(call)  # type: ignore[arg-type]
        assert out.startswith("error:"), (call, out)
    tools.dispatch({"name": "recallset_add", "arguments": {"content": "two"}})
    third = json.loads(tools.dispatch({"name": "recallset_add", "arguments": {"content": "three"}}))
    assert third["evicted"] == ["r1"]  # both check at priority 0: the older one goes
    ov = json.loads(tools.dispatch({"name": "recallset_overview"}))
    assert [o["id"] for o in ov] == ["r2", "r3"]


class RecallSetMachine(RuleBasedStateMachine):
    """Compares the RecallSet with a plain reference model after every step."""

    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.cap = 4
        self.rs = RecallSet(max_items=self.cap)
        self.model: dict[str, dict] = {}  # id -> {fp, mark, priority, order, content}
        self.junk: set[str] = set()
        self.order = 0

    @rule(
        target=ids,
        text=st.sampled_from(["a", "A", " a ", "b", "c", "d", "e", "f", "B  "]),
        mark=st.sampled_from(list(Mark)),
        priority=st.integers(0, 3),
    )
    def add(self, text: str, mark: Mark, priority: int) -> str:
        fp = fingerprint(text)
        live = next((i for i, v in self.model.items() if v["fp"] == fp), None)
        res = self.rs.add(text, mark=mark, priority=priority)
        if live is not None:
            v = self.model[live]
            assert res.duplicate and res.id == live
            if v["mark"] is not Mark.DISCARD:
                if RANK[mark] > RANK[v["mark"]]:
                    v["mark"] = mark
                v["priority"] = max(v["priority"], priority)
            assert res.item.mark is v["mark"] and res.item.priority == v["priority"]
            return live
        if fp in self.junk:
            assert res.duplicate and res.item.mark is Mark.DISCARD
            return res.id
        expected_evicted = []
        while len(self.model) >= self.cap:
            victim = min(
                self.model,
                key=lambda i: (
                    RANK[self.model[i]["mark"]],
                    self.model[i]["priority"],
                    self.model[i]["order"],
                ),
            )
            expected_evicted.append(victim)
            del self.model[victim]
        assert [e.id for e in res.evicted] == expected_evicted
        self.order += 1
        self.model[res.id] = {
            "fp": fp,
            "mark": mark,
            "priority": priority,
            "order": self.order,
            "content": text,
        }
        if mark is Mark.DISCARD:
            self.junk.add(fp)
        return res.id

    @rule(item=ids, mark=st.sampled_from(list(Mark)))
    def mark(self, item: str, mark: Mark) -> None:
        if item not in self.model:
            with pytest.raises(MemoryNotFound):
                self.rs.mark(item, mark)
            return
        self.rs.mark(item, mark)
        v = self.model[item]
        v["mark"] = mark
        if mark is Mark.DISCARD:
            self.junk.add(v["fp"])
        else:
            self.junk.discard(v["fp"])

    @rule(item=ids)
    def read(self, item: str) -> None:
        if item in self.model:
            assert self.rs.read(item) == self.model[item]["content"]
        else:
            with pytest.raises(MemoryNotFound):
                self.rs.read(item)

    @rule()
    def clear(self) -> None:
        self.rs.clear()
        self.model.clear()
        self.junk.clear()
        assert len(self.rs) == 0 and self.rs.overview() == []

    @invariant()
    def matches_model(self) -> None:
        items = self.rs.items()
        assert len(items) <= self.cap
        assert {i.id for i in items} == set(self.model)
        assert len({i.fingerprint for i in items}) == len(items)
        for i in items:
            assert i.mark is self.model[i.id]["mark"]
            assert i.priority == self.model[i.id]["priority"]
        for o in self.rs.overview():
            assert set(o) == {"id", "mark", "priority", "title"}


TestRecallSetMachine = RecallSetMachine.TestCase


def test_tool_explains_discarded_content() -> None:
    tools = RecallSetTools(RecallSet(max_items=1))
    add = {"name": "recallset_add", "arguments": {"content": "junk", "mark": "discard"}}
    tools.dispatch(add)
    assert "mark it again" in json.loads(tools.dispatch(add))["status"]
    tools.dispatch({"name": "recallset_add", "arguments": {"content": "useful", "mark": "keep"}})
    assert "since evicted" in json.loads(tools.dispatch(add))["status"]
