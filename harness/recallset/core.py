"""The RecallSet: keep/check/discard marks, fingerprint dedup, a cap with eviction order."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field, replace
from enum import StrEnum

from harness.errors import InvalidInput, MemoryNotFound
from harness.fingerprint import fingerprint

__all__ = ["AddResult", "Mark", "RecallItem", "RecallSet"]

TITLE_MAX = 80


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
class RecallItem:
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

    item: RecallItem
    duplicate: bool = False
    evicted: tuple[RecallItem, ...] = field(default_factory=tuple)

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


class RecallSet:
    """Working memory of one run. Cleared at run end; never written to the MemoryStore.

    Operations are O(1) on average except eviction, which is O(log n) via a lazy heap.
    Not thread-safe: one RecallSet belongs to one run.
    """

    def __init__(self, max_items: int = 50):
        if not isinstance(max_items, int) or isinstance(max_items, bool) or max_items < 1:
            raise InvalidInput("max_items: must be a positive integer", fields=("max_items",))
        self.max_items = max_items
        self._items: dict[str, RecallItem] = {}
        self._by_fp: dict[str, str] = {}
        self._discarded: dict[str, RecallItem] = {}
        self._heap: list[tuple[int, int, int, str]] = []
        self._seq = itertools.count(1)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def _push(self, item: RecallItem) -> None:
        # Eviction order: lowest mark rank, then lowest priority, then oldest. Entries of items
        # that changed since are skipped when popped, and compacted away when they pile up.
        heapq.heappush(self._heap, (item.mark.rank, item.priority, item.order, item.id))
        if len(self._heap) > 4 * self.max_items + 64:
            self._heap = [
                (it.mark.rank, it.priority, it.order, it.id) for it in self._items.values()
            ]
            heapq.heapify(self._heap)

    def _store(self, item: RecallItem) -> RecallItem:
        self._items[item.id] = item
        self._push(item)
        if item.mark is Mark.DISCARD:
            self._discarded[item.fingerprint] = item
        else:
            self._discarded.pop(item.fingerprint, None)
        return item

    def _evict_one(self) -> RecallItem:
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
        evicted: list[RecallItem] = []
        while len(self._items) >= self.max_items:
            evicted.append(self._evict_one())
        order = next(self._seq)
        item = RecallItem(
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

    def mark(self, item_id: str, mark: Mark | str) -> RecallItem:
        """Set an item's mark explicitly (up or down). Unknown id: ``MemoryNotFound``."""
        item = self._get(item_id)
        return self._store(replace(item, mark=_as_mark(mark)))

    def _get(self, item_id: str) -> RecallItem:
        item = self._items.get(item_id)
        if item is None:
            raise MemoryNotFound(f"no RecallSet item with id {item_id!r}")
        return item

    def read(self, item_id: str) -> str:
        """The full content of one item."""
        return self._get(item_id).content

    def get(self, item_id: str) -> RecallItem:
        """The item itself."""
        return self._get(item_id)

    def overview(self) -> list[dict[str, object]]:
        """Ids, marks, priorities and titles, oldest first; never bodies."""
        return [
            {"id": it.id, "mark": it.mark.value, "priority": it.priority, "title": it.title}
            for it in self.items()
        ]

    def items(self) -> list[RecallItem]:
        """Live items, oldest first (dict order is creation order: updates keep their slot)."""
        return list(self._items.values())

    def clear(self) -> None:
        """Forget everything, including discarded fingerprints. Idempotent."""
        self._items.clear()
        self._by_fp.clear()
        self._discarded.clear()
        self._heap.clear()
