"""The RecallSet: keep/check/discard marks, fingerprint dedup, a cap with eviction order."""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from harness.errors import InvalidInput, MemoryNotFound
from harness.fingerprint import fingerprint

__all__ = ["STATE_VERSION", "AddResult", "Mark", "Note", "RecallSet"]

TITLE_MAX = 80
#: The layout :meth:`RecallSet.to_state` writes; :meth:`RecallSet.from_state` reads only this.
STATE_VERSION = 1
_STATE_FIELDS = frozenset({"version", "max_items", "next_order", "items", "discarded"})
_ITEM_FIELDS = ("id", "title", "content", "mark", "priority", "source", "fingerprint", "order")


class Mark(StrEnum):
    """How the model rates an item. Ordered: discard < check < keep."""

    DISCARD = "discard"
    CHECK = "check"
    KEEP = "keep"

    @property
    def rank(self) -> int:
        return _MARK_RANK[self]


_MARK_RANK = {Mark.DISCARD: 0, Mark.CHECK: 1, Mark.KEEP: 2}


@dataclass(frozen=True)
class Note:
    """One memo item. ``order`` is the creation sequence within the run."""

    id: str
    title: str
    content: str
    mark: Mark
    priority: int
    source: str | None
    fingerprint: str
    order: int


@dataclass(frozen=True)
class AddResult:
    """What ``add`` did: the item (new or existing), whether it was a duplicate, what was evicted."""

    item: Note
    duplicate: bool = False
    evicted: tuple[Note, ...] = field(default_factory=tuple)

    @property
    def id(self) -> str:
        return self.item.id


def derive_title(content: str) -> str:
    """The first line of the content, whitespace-collapsed, cut to 80 characters."""
    first = " ".join(content.strip().splitlines()[0].split()) if content.strip() else ""
    return first if len(first) <= TITLE_MAX else first[: TITLE_MAX - 1].rstrip() + "…"


def _as_mark(value: Mark | str) -> Mark:
    try:
        return Mark(value)
    except ValueError:
        raise InvalidInput(
            f"mark: {value!r} is not one of keep, check, discard", fields=("mark",)
        ) from None


def _bad(path: str, problem: str) -> InvalidInput:
    return InvalidInput(f"{path}: {problem}", fields=(path,))


def _int_at(value: Any, path: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(path, f"must be an integer, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise _bad(path, f"must be at least {minimum}, got {value}")
    return value


def _text_at(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _bad(path, f"must be text, got {type(value).__name__}")
    return value


def _item_state(item: Note) -> dict[str, Any]:
    return {
        "id": item.id,
        "title": item.title,
        "content": item.content,
        "mark": item.mark.value,
        "priority": item.priority,
        "source": item.source,
        "fingerprint": item.fingerprint,
        "order": item.order,
    }


def _item_from_state(raw: Any, path: str) -> Note:
    if not isinstance(raw, Mapping):
        raise _bad(path, f"must be an object, got {type(raw).__name__}")
    for name in _ITEM_FIELDS:
        if name not in raw:
            raise _bad(f"{path}.{name}", "is missing")
    for name in raw:
        if name not in _ITEM_FIELDS:
            raise _bad(f"{path}.{name}", "is not a field of a RecallSet item")
    try:
        mark = Mark(raw["mark"])
    except ValueError:
        raise _bad(f"{path}.mark", f"{raw['mark']!r} is not one of keep, check, discard") from None
    source = raw["source"]
    return Note(
        id=_text_at(raw["id"], f"{path}.id"),
        title=_text_at(raw["title"], f"{path}.title"),
        content=_text_at(raw["content"], f"{path}.content"),
        mark=mark,
        priority=_int_at(raw["priority"], f"{path}.priority"),
        source=None if source is None else _text_at(source, f"{path}.source"),
        fingerprint=_text_at(raw["fingerprint"], f"{path}.fingerprint"),
        order=_int_at(raw["order"], f"{path}.order", minimum=1),
    )


def _items_from_state(raw: Any, path: str) -> list[Note]:
    if not isinstance(raw, list):
        raise _bad(path, f"must be a list, got {type(raw).__name__}")
    return [_item_from_state(each, f"{path}.{i}") for i, each in enumerate(raw)]


class RecallSet:
    """Working memory of one run. Cleared at run end; never written to the MemoryStore.

    Operations are O(1) on average except eviction, which is O(log n) via a lazy heap.
    Not thread-safe: one RecallSet belongs to one run.
    """

    def __init__(self, max_items: int = 50):
        if not isinstance(max_items, int) or isinstance(max_items, bool) or max_items < 1:
            raise InvalidInput("max_items: must be a positive integer", fields=("max_items",))
        self.max_items = max_items
        self._items: dict[str, Note] = {}
        self._by_fp: dict[str, str] = {}
        self._discarded: dict[str, Note] = {}
        self._heap: list[tuple[int, int, int, str]] = []
        #: The ``order`` (and id number) of the next new item; never reset, not even by clear.
        self._next_order = 1

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def _push(self, item: Note) -> None:
        # Eviction order: lowest mark rank, then lowest priority, then oldest. Entries of items
        # that changed since are skipped when popped, and compacted away when they pile up.
        heapq.heappush(self._heap, (item.mark.rank, item.priority, item.order, item.id))
        if len(self._heap) > 4 * self.max_items + 64:
            self._heap = [
                (it.mark.rank, it.priority, it.order, it.id) for it in self._items.values()
            ]
            heapq.heapify(self._heap)

    def _store(self, item: Note) -> Note:
        self._items[item.id] = item
        self._push(item)
        if item.mark is Mark.DISCARD:
            self._discarded[item.fingerprint] = item
        else:
            self._discarded.pop(item.fingerprint, None)
        return item

    def _evict_one(self) -> Note:
        while True:
            rank, priority, order, item_id = heapq.heappop(self._heap)
            item = self._items.get(item_id)
            if item is not None and (item.mark.rank, item.priority, item.order) == (
                rank,
                priority,
                order,
            ):
                del self._items[item_id]
                del self._by_fp[item.fingerprint]
                return item

    def add(
        self,
        content: str,
        mark: Mark | str = Mark.CHECK,
        priority: int = 0,
        title: str | None = None,
        source: str | None = None,
    ) -> AddResult:
        """Add content, or return the existing item with the same normalised content.

        A duplicate merges mark upward and priority to the maximum; content that was
        discarded in this run returns the discarded item unchanged (mark it again to revive
        it). Never raises because the set is full: the lowest item is evicted and reported.
        """
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput("content: must be non-empty text", fields=("content",))
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise InvalidInput("priority: must be an integer", fields=("priority",))
        if title is not None and not isinstance(title, str):
            raise InvalidInput("title: must be text", fields=("title",))
        new_mark = _as_mark(mark)
        fp = fingerprint(content)
        existing_id = self._by_fp.get(fp)
        if existing_id is not None:
            existing = self._items[existing_id]
            if existing.mark is Mark.DISCARD:
                return AddResult(existing, duplicate=True)
            merged = replace(
                existing,
                mark=max(existing.mark, new_mark, key=lambda m: m.rank),
                priority=max(existing.priority, priority),
            )
            if merged != existing:
                self._store(merged)
            return AddResult(merged, duplicate=True)
        if fp in self._discarded:
            # Evicted earlier but remembered as junk for the run.
            return AddResult(self._discarded[fp], duplicate=True)
        evicted: list[Note] = []
        while len(self._items) >= self.max_items:
            evicted.append(self._evict_one())
        order = self._next_order
        self._next_order += 1
        item = Note(
            id=f"r{order}",
            title=derive_title(title) if title and title.strip() else derive_title(content),
            content=content,
            mark=new_mark,
            priority=priority,
            source=source,
            fingerprint=fp,
            order=order,
        )
        self._by_fp[fp] = item.id
        return AddResult(self._store(item), evicted=tuple(evicted))

    def mark(self, item_id: str, mark: Mark | str) -> Note:
        """Set an item's mark explicitly (up or down). Unknown id: ``MemoryNotFound``."""
        item = self._get(item_id)
        return self._store(replace(item, mark=_as_mark(mark)))

    def _get(self, item_id: str) -> Note:
        item = self._items.get(item_id)
        if item is None:
            raise MemoryNotFound(f"no RecallSet item with id {item_id!r}")
        return item

    def read(self, item_id: str) -> str:
        """The full content of one item."""
        return self._get(item_id).content

    def get(self, item_id: str) -> Note:
        """The item itself."""
        return self._get(item_id)

    def overview(self) -> list[dict[str, object]]:
        """Ids, marks, priorities and titles, oldest first; never bodies."""
        return [
            {"id": it.id, "mark": it.mark.value, "priority": it.priority, "title": it.title}
            for it in self.items()
        ]

    def items(self) -> list[Note]:
        """Live items, oldest first (dict order is creation order: updates keep their slot)."""
        return list(self._items.values())

    def to_state(self) -> dict[str, Any]:
        """Everything this set holds, as JSON-compatible data (plain dicts, lists, strings,
        integers, None): the cap, the next item number, live items oldest first and the
        remembered discarded items. :meth:`from_state` rebuilds a set that behaves exactly
        like this one from here on. Pure: changes nothing."""
        return {
            "version": STATE_VERSION,
            "max_items": self.max_items,
            "next_order": self._next_order,
            "items": [_item_state(item) for item in self._items.values()],
            "discarded": [_item_state(item) for item in self._discarded.values()],
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> RecallSet:
        """The set :meth:`to_state` described (a new object; ``state`` is not kept).

        Raises:
            InvalidInput: ``state`` is not what :meth:`to_state` writes: a field missing, of
                the wrong type, or inconsistent with the others (names the field, e.g.
                ``items.3.order``).
        """
        if not isinstance(state, Mapping):
            raise _bad("state", f"must be an object, got {type(state).__name__}")
        for name in sorted(_STATE_FIELDS):
            if name not in state:
                raise _bad(name, "is missing")
        for name in state:
            if name not in _STATE_FIELDS:
                raise _bad(str(name), "is not a field of a RecallSet state")
        if state["version"] != STATE_VERSION:
            raise _bad("version", f"must be {STATE_VERSION}, got {state['version']!r}")
        max_items = _int_at(state["max_items"], "max_items", minimum=1)
        next_order = _int_at(state["next_order"], "next_order", minimum=1)
        items = _items_from_state(state["items"], "items")
        discarded = _items_from_state(state["discarded"], "discarded")
        rs = cls(max_items)
        if len(items) > max_items:
            raise _bad("items", f"holds {len(items)} items, more than max_items ({max_items})")
        previous = 0
        for i, item in enumerate(items):
            # Live items sit in creation order (their dict slot), which overview() shows.
            if not previous < item.order < next_order:
                raise _bad(
                    f"items.{i}.order",
                    "must be above the previous item's and below next_order (creation order)",
                )
            if item.id in rs._items:
                raise _bad(f"items.{i}.id", f"{item.id!r} is an earlier item's id")
            if item.fingerprint in rs._by_fp:
                raise _bad(f"items.{i}.fingerprint", "is an earlier item's fingerprint")
            rs._items[item.id] = item
            rs._by_fp[item.fingerprint] = item.id
            previous = item.order
        for i, item in enumerate(discarded):
            if item.mark is not Mark.DISCARD:
                raise _bad(f"discarded.{i}.mark", "must be discard")
            if not item.order < next_order:
                raise _bad(f"discarded.{i}.order", "must be below next_order")
            if item.fingerprint in rs._discarded:
                raise _bad(f"discarded.{i}.fingerprint", "is an earlier item's fingerprint")
            live = rs._by_fp.get(item.fingerprint)
            if live is not None and rs._items[live] != item:
                raise _bad(f"discarded.{i}", f"differs from live item {live!r}")
            rs._discarded[item.fingerprint] = item
        for i, item in enumerate(items):
            # a live item is remembered as discarded exactly when it is marked discard
            if (item.mark is Mark.DISCARD) != (item.fingerprint in rs._discarded):
                raise _bad(f"items.{i}.mark", "disagrees with the discarded items")
        rs._heap = [(it.mark.rank, it.priority, it.order, it.id) for it in items]
        heapq.heapify(rs._heap)
        rs._next_order = next_order
        return rs

    def clear(self) -> None:
        """Forget everything, including discarded fingerprints. Idempotent."""
        self._items.clear()
        self._by_fp.clear()
        self._discarded.clear()
        self._heap.clear()
