"""RecallSet rules the broader tests in ``test_recallset`` leave implicit.

Pure. Titles, the exact typed errors of bad input, where ``source`` and ``order`` go, reviving
a discarded item, and eviction after the lazy heap has been compacted. Written to kill the
mutants ``make mutate`` found in ``harness/recallset/core.py`` (docs/mutation.md).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import InvalidInput, MemoryNotFound
from harness.recallset import Mark, RecallSet
from harness.recallset.core import TITLE_MAX, derive_title


def test_title_of_blank_content_is_empty() -> None:
    assert derive_title("") == ""
    assert derive_title(" \n\t ") == ""


def test_title_is_the_first_line_collapsed() -> None:
    assert derive_title("  first   line \n second") == "first line"


def test_a_title_of_exactly_the_maximum_is_kept_whole() -> None:
    text = "x" * TITLE_MAX
    assert derive_title(text) == text
    assert derive_title(text + "y") == "x" * (TITLE_MAX - 1) + "…"


def test_a_cut_title_drops_the_trailing_space_before_the_ellipsis() -> None:
    text = "a" * (TITLE_MAX - 2) + " " + "b" * 10
    assert derive_title(text) == "a" * (TITLE_MAX - 2) + "…"


@given(st.text(min_size=1))
def test_titles_are_bounded_single_lines(text: str) -> None:
    title = derive_title(text)
    assert len(title) <= TITLE_MAX
    assert "\n" not in title
    assert title == title.strip()


def _invalid(call: object) -> InvalidInput:
    assert callable(call)
    with pytest.raises(InvalidInput) as caught:
        call()
    return caught.value


def test_default_cap_is_fifty() -> None:
    assert RecallSet().max_items == 50


@pytest.mark.parametrize("bad", [0, -1, True, False, 2.0, "3", None])
def test_a_bad_cap_is_a_typed_error_naming_it(bad: object) -> None:
    err = _invalid(lambda: RecallSet(max_items=bad))  # type: ignore[arg-type]
    assert str(err) == "max_items: must be a positive integer"
    assert err.fields == ("max_items",)


@pytest.mark.parametrize("bad", ["", "   ", 3, None])
def test_bad_content_is_a_typed_error_naming_it(bad: object) -> None:
    err = _invalid(lambda: RecallSet().add(bad))  # type: ignore[arg-type]
    assert str(err) == "content: must be non-empty text"
    assert err.fields == ("content",)


@pytest.mark.parametrize("bad", [True, 1.5, "1", None])
def test_a_bad_priority_is_a_typed_error_naming_it(bad: object) -> None:
    rs = RecallSet()
    err = _invalid(lambda: rs.add("text", priority=bad))  # type: ignore[arg-type]
    assert str(err) == "priority: must be an integer"
    assert err.fields == ("priority",)
    assert len(rs) == 0


@pytest.mark.parametrize("bad", [1, b"bytes", ["t"]])
def test_a_bad_title_is_a_typed_error_naming_it(bad: object) -> None:
    rs = RecallSet()
    err = _invalid(lambda: rs.add("text", title=bad))  # type: ignore[arg-type]
    assert str(err) == "title: must be text"
    assert err.fields == ("title",)
    assert len(rs) == 0


def test_a_bad_mark_is_a_typed_error_naming_it() -> None:
    rs = RecallSet()
    err = _invalid(lambda: rs.add("text", mark="maybe"))
    assert str(err) == "mark: 'maybe' is not one of keep, check, discard"
    assert err.fields == ("mark",)
    item = rs.add("text").item
    assert _invalid(lambda: rs.mark(item.id, "later")).fields == ("mark",)


def test_source_and_creation_order_are_kept_on_the_item() -> None:
    rs = RecallSet()
    first = rs.add("one", source="tool:search").item
    second = rs.add("two").item
    assert first.source == "tool:search"
    assert second.source is None
    assert (first.order, second.order) == (1, 2)
    assert (first.id, second.id) == ("r1", "r2")


def test_get_returns_the_item_and_unknown_ids_are_not_found() -> None:
    rs = RecallSet()
    item = rs.add("one", mark=Mark.KEEP, priority=3).item
    assert rs.get(item.id) == item
    with pytest.raises(MemoryNotFound):
        rs.get("r99")


def test_among_equal_marks_and_priorities_the_oldest_is_evicted() -> None:
    rs = RecallSet(max_items=2)
    a = rs.add("a").item
    rs.add("b")
    result = rs.add("c")
    assert result.evicted == (a,)
    assert [it.content for it in rs.items()] == ["b", "c"]


def test_a_discarded_item_marked_again_is_no_longer_junk() -> None:
    """Re-marked above discard, its content may come back after it is evicted."""
    rs = RecallSet(max_items=1)
    item = rs.add("reconsidered", mark=Mark.DISCARD).item
    rs.mark(item.id, Mark.CHECK)
    rs.add("other", mark=Mark.KEEP)  # evicts the re-marked item
    assert item.id not in rs
    again = rs.add("reconsidered", mark=Mark.KEEP)
    assert again.duplicate is False
    assert again.item.id != item.id
    assert again.item.mark is Mark.KEEP


def test_eviction_stays_right_after_many_remarks() -> None:
    """Hundreds of marks pile stale heap entries up (compacted along the way); eviction
    still takes the lowest item as it is now, never a stale entry."""
    rs = RecallSet(max_items=3)
    a = rs.add("a").item
    b = rs.add("b").item
    c = rs.add("c").item
    for i in range(300):
        rs.mark(a.id, Mark.DISCARD if i % 2 else Mark.KEEP)
        rs.mark(b.id, Mark.CHECK if i % 3 else Mark.DISCARD)
    rs.mark(a.id, Mark.KEEP)
    rs.mark(b.id, Mark.CHECK)
    rs.mark(c.id, Mark.DISCARD)
    assert [it.id for it in rs.add("d", mark=Mark.KEEP).evicted] == [c.id]
    assert [it.id for it in rs.add("e", mark=Mark.KEEP).evicted] == [b.id]
    assert [it.content for it in rs.items()] == ["a", "d", "e"]
