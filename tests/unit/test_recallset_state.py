"""RecallSet.to_state / from_state: an exact round trip, so a memo can live in a database row.

Pure. A set rebuilt from its state (after a JSON round trip, as the database stores it) must go
on exactly as the original would have: the same ids, answers, evictions and duplicates.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError, InvalidInput
from harness.recallset import Mark, RecallSet
from harness.recallset.core import STATE_VERSION

MARKS = [m.value for m in Mark]
#: Few distinct texts, several of them equal after normalisation: duplicates are frequent.
CONTENTS = ["alpha", "Alpha", "  alpha\t", "beta", "gamma\nsecond", "delta", "épsilon", "z\x00"]

content = st.one_of(st.sampled_from(CONTENTS), st.text(min_size=1, max_size=12))
add_op = st.tuples(
    st.just("add"),
    content,
    st.sampled_from(MARKS),
    st.integers(-3, 3),
    st.one_of(st.none(), st.sampled_from(["", "a title", "x" * 90])),
    st.one_of(st.none(), st.just("tool:search")),
)
mark_op = st.tuples(st.just("mark"), st.integers(0, 12), st.sampled_from(MARKS))
read_op = st.tuples(st.just("read"), st.integers(0, 12))
operation = st.one_of(
    add_op,
    add_op,
    mark_op,
    read_op,
    st.just(("clear",)),
    st.just(("round trip",)),
)


def _apply(rs: RecallSet, op: tuple[Any, ...]) -> object:
    """One operation's observable answer (its result, or the error it raised)."""
    try:
        if op[0] == "add":
            _, text, mark, priority, title, source = op
            return rs.add(text, mark=mark, priority=priority, title=title, source=source)
        if op[0] == "mark":
            return rs.mark(f"r{op[1]}", op[2])
        if op[0] == "read":
            return rs.read(f"r{op[1]}")
        rs.clear()
        return None
    except HarnessError as exc:
        return (type(exc), str(exc))


def _through_json(rs: RecallSet) -> RecallSet:
    state = rs.to_state()
    text = json.dumps(state)
    assert json.loads(text) == state  # JSON-serialisable, nothing lost on the way
    return RecallSet.from_state(json.loads(text))


@settings(max_examples=300)
@given(max_items=st.integers(1, 4), ops=st.lists(operation, max_size=40))
def test_a_round_trip_anywhere_changes_nothing(max_items: int, ops: list[tuple[Any, ...]]) -> None:
    kept = RecallSet(max_items)
    moved = RecallSet(max_items)
    for op in ops:
        if op[0] == "round trip":
            moved = _through_json(moved)
        else:
            assert _apply(moved, op) == _apply(kept, op), op
        assert moved.overview() == kept.overview()
        assert moved.items() == kept.items()
        assert moved.to_state() == kept.to_state()
    # and from here on too: fill it up, forcing evictions in the rebuilt heap's order
    moved = _through_json(moved)
    for i in range(max_items + 2):
        for op in (("add", f"tail {i}", "check", i % 2, None, None), ("mark", 1, "keep")):
            assert _apply(moved, op) == _apply(kept, op)
    assert moved.to_state() == kept.to_state()


def test_a_state_names_its_parts() -> None:
    rs = RecallSet(max_items=2)
    first = rs.add("Check the VPN log", mark="discard", priority=2, source="tool:log").item
    rs.add("second")
    rs.add("third")  # evicts the discarded first note, which stays remembered
    state = rs.to_state()
    assert state["version"] == STATE_VERSION
    assert (state["max_items"], state["next_order"]) == (2, 4)
    assert [i["id"] for i in state["items"]] == ["r2", "r3"]
    assert state["discarded"] == [
        {
            "id": "r1",
            "title": "Check the VPN log",
            "content": "Check the VPN log",
            "mark": "discard",
            "priority": 2,
            "source": "tool:log",
            "fingerprint": first.fingerprint,
            "order": 1,
        }
    ]
    again = RecallSet.from_state(state)
    assert again.add("check the   vpn log").item == first  # still remembered as junk
    assert again.add("fourth").id == "r4"


def test_cleared_sets_keep_numbering() -> None:
    rs = RecallSet()
    rs.add("one")
    rs.clear()
    again = RecallSet.from_state(rs.to_state())
    assert again.items() == [] and again.add("two").id == "r2"


def _state() -> dict[str, Any]:
    rs = RecallSet(max_items=3)
    rs.add("one")
    rs.add("two", mark="discard")
    return rs.to_state()


def _changed(path: str, value: Any) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(json.dumps(_state()))
    where: Any = state
    *parents, last = path.split(".")
    for part in parents:
        where = where[int(part)] if isinstance(where, list) else where[part]
    if value is KeyError:
        del where[last]
    else:
        where[int(last) if isinstance(where, list) else last] = value
    return state


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("version", 2, "version"),
        ("max_items", 0, "max_items"),
        ("max_items", True, "max_items"),
        ("next_order", KeyError, "next_order"),
        ("next_order", 2, "items.1.order"),
        ("items", {}, "items"),
        ("items.0", "r1", "items.0"),
        ("items.0.order", 2, "items.1.order"),
        ("items.1.priority", "high", "items.1.priority"),
        ("items.1.mark", "maybe", "items.1.mark"),
        ("items.1.mark", "keep", "discarded.0"),
        ("discarded", [], "items.1.mark"),
        ("items.0.content", None, "items.0.content"),
        ("items.0.source", 3, "items.0.source"),
        ("items.1.id", "r1", "items.1.id"),
        ("items.0.fingerprint", KeyError, "items.0.fingerprint"),
        ("discarded.0.title", "other", "discarded.0"),
        ("discarded.0.mark", "check", "discarded.0.mark"),
        ("extra", 1, "extra"),
        ("items.0.extra", 1, "items.0.extra"),
    ],
)
def test_an_invalid_state_names_the_field(path: str, value: Any, field: str) -> None:
    assert RecallSet.from_state(_state()).to_state() == _state()  # the unchanged state is fine
    with pytest.raises(InvalidInput) as caught:
        RecallSet.from_state(_changed(path, value))
    assert caught.value.fields == (field,), caught.value


def test_too_many_items_and_repeated_fingerprints_are_refused() -> None:
    state = _state()
    state["max_items"] = 1
    with pytest.raises(InvalidInput, match="more than max_items") as caught:
        RecallSet.from_state(state)
    assert caught.value.fields == ("items",)
    state = _state()
    state["items"][1]["fingerprint"] = state["items"][0]["fingerprint"]
    with pytest.raises(InvalidInput) as caught:
        RecallSet.from_state(state)
    assert caught.value.fields == ("items.1.fingerprint",)
    with pytest.raises(InvalidInput) as caught:
        RecallSet.from_state([])  # type: ignore[arg-type]
    assert caught.value.fields == ("state",)
