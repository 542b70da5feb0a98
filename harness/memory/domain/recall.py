"""Pure recall assembly: precedence, ordering, limits, whole-item budget, rendering, trace.

No database imports: every function here is a pure function over frozen values, so the rules
of SPEC sections 4 and 5 can be property-tested without PostgreSQL.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple, Protocol, TypeVar

from harness.errors import IncompleteRecall
from harness.memory.domain.lookalike import LINE_BREAK, defuse_headers
from harness.memory.domain.types import SCOPE_BREADTH, Kind, Memory, Origin, Scope

__all__ = [
    "Candidate",
    "Head",
    "Omission",
    "RecallResult",
    "RecalledItem",
    "TraceEntry",
    "assemble",
    "order_key",
    "precedence_winner",
    "render_item",
    "resolve_conflicts",
]

log = logging.getLogger(__name__)

OmissionReason = Literal["conflict", "item_too_long", "max_items", "budget"]
SEPARATOR = "\n"
#: What a line break inside stored text becomes: a new line indented under its item, so no
#: stored text can start a line of its own (every item line starts with "- [").
CONTINUATION = "\n  "
# Every character the model (or str.splitlines) could read as a line break.


class Head(NamedTuple):
    """What assembly reads of a memory: its precedence, its place in the order, its rendering."""

    id: uuid.UUID
    key: str | None
    kind: Kind
    scope: Scope
    priority: int
    created_at: datetime
    content: str
    origin: Origin

    @classmethod
    def of(cls, memory: Memory) -> Head:
        """The head of a memory."""
        return cls(
            memory.id,
            memory.key,
            memory.kind,
            memory.scope,
            memory.priority,
            memory.created_at,
            memory.content,
            memory.source.origin,
        )


@dataclass(frozen=True, slots=True, init=False)
class Candidate:
    """A readable memory offered to assembly, with its fused relevance (0 when not scored).

    Built from a :class:`Memory`, or (:meth:`deferred`) from its :class:`Head` and a function
    building the memory, called once when the memory is first read: assembly reads heads and
    builds only the memories it places (a large pool leaves most always-on items out, and
    validating a row into a model costs more than assembling it)."""

    head: Head
    relevance: float
    why: str
    _memory: Memory | Callable[[], Memory]

    def __init__(self, memory: Memory, relevance: float = 0.0, why: str = "always") -> None:
        self._set(Head.of(memory), relevance, why, memory)

    @classmethod
    def deferred(
        cls, head: Head, build: Callable[[], Memory], relevance: float = 0.0, why: str = "always"
    ) -> Candidate:
        """A candidate whose memory ``build()`` makes when first read (it must match ``head``)."""
        cand = cls.__new__(cls)
        cand._set(head, relevance, why, build)
        return cand

    def _set(
        self, head: Head, relevance: float, why: str, memory: Memory | Callable[[], Memory]
    ) -> None:
        for name, value in (
            ("head", head),
            ("relevance", relevance),
            ("why", why),
            ("_memory", memory),
        ):
            object.__setattr__(self, name, value)

    @property
    def memory(self) -> Memory:
        """The memory (built on first read for a deferred candidate)."""
        memory = self._memory
        if isinstance(memory, Memory):
            return memory
        built = memory()
        object.__setattr__(self, "_memory", built)
        return built


@dataclass(frozen=True)
class RecalledItem:
    """One item of the context, in order. ``text`` is exactly what the model reads."""

    memory: Memory
    text: str
    relevance: float = 0.0


@dataclass(frozen=True)
class Omission:
    """A readable candidate left out of this context (it is not deleted)."""

    memory_id: uuid.UUID
    reason: OmissionReason
    chars: int
    winner_id: uuid.UUID | None = None


class _Detail:
    """A trace entry's text, or a function writing it when first read: a recall drops a
    hundred or more candidates and their explanations are rarely read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, entry: object, owner: type | None = None) -> str:
        if entry is None:
            raise AttributeError(self.slot)  # no default: the field is required
        value = entry.__dict__[self.slot]
        if callable(value):
            value = value()
            entry.__dict__[self.slot] = value
        return str(value)

    def __set__(self, entry: object, value: str | Callable[[], str]) -> None:
        entry.__dict__[self.slot] = value


@dataclass(frozen=True)
class TraceEntry:
    """Why a memory was kept or dropped before or during assembly.

    ``detail`` may be given as a function of no arguments; it is called once, when read."""

    memory_id: uuid.UUID | None
    decision: Literal["kept", "dropped"]
    stage: str
    detail: _Detail = _Detail()


@dataclass(frozen=True)
class RecallResult:
    """The context for one run, and an account of everything left out."""

    items: list[RecalledItem]
    omitted: list[Omission]
    text: str
    complete: bool
    trace: list[TraceEntry] = field(default_factory=list)
    degraded: bool = False

    def explain(self) -> str:
        """Plain-text account of each candidate: why it was kept or dropped."""
        if not self.trace:
            return "no candidates" + (
                " (memory unavailable; recall degraded)" if self.degraded else ""
            )
        lines = []
        for entry in self.trace:
            who = str(entry.memory_id) if entry.memory_id else "-"
            lines.append(f"{entry.decision:7} {entry.stage:10} {who}  {entry.detail}")
        if self.degraded:
            # Nothing could be read: unlike an incomplete context, no constraint was even seen.
            lines.append("MEMORY UNAVAILABLE: no memory could be read; the context is empty")
        elif not self.complete:
            lines.append("INCOMPLETE: a constraint could not be placed in the context")
        return "\n".join(lines)

    @classmethod
    def empty(cls, *, degraded: bool = False, reason: str = "") -> RecallResult:
        """An empty context; ``degraded`` marks a store failure (``complete`` is then False)."""
        trace = [TraceEntry(None, "dropped", "store", reason)] if reason else []
        return cls(
            items=[], omitted=[], text="", complete=not degraded, trace=trace, degraded=degraded
        )


class Ranks(Protocol):
    """What precedence reads of an item: a :class:`Memory` or its :class:`Head`."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def kind(self) -> Kind: ...
    @property
    def scope(self) -> Scope: ...
    @property
    def priority(self) -> int: ...
    @property
    def created_at(self) -> datetime: ...


RanksT = TypeVar("RanksT", bound=Ranks)


def _winner_sort_key(item: Ranks, prefer_broad: bool) -> tuple[int, int, float, uuid.UUID]:
    breadth = SCOPE_BREADTH[item.scope]
    return (
        -breadth if prefer_broad else breadth,
        -item.priority,
        -item.created_at.timestamp(),
        # UUIDs order as their canonical strings do (fixed-width lower-case hex).
        item.id,
    )


def precedence_winner(group: Sequence[RanksT]) -> RanksT:
    """The item of one key group that applies (SPEC section 4).

    Any constraint beats every non-constraint, and among constraints the broadest scope wins;
    otherwise the narrowest scope wins. Ties: higher priority, newer, then smallest id.
    """
    if not group:
        raise ValueError("empty key group")
    constraints = [m for m in group if m.kind is Kind.CONSTRAINT]
    if constraints:
        return min(constraints, key=lambda m: _winner_sort_key(m, prefer_broad=True))
    return min(group, key=lambda m: _winner_sort_key(m, prefer_broad=False))


def resolve_conflicts(
    candidates: Sequence[Candidate],
) -> tuple[list[Candidate], list[tuple[Candidate, Head]]]:
    """Split candidates into survivors and (loser, winner) pairs; keyless items never conflict."""
    groups: dict[str, list[Candidate]] = {}
    survivors: list[Candidate] = []
    for cand in candidates:
        key = cand.head.key
        if key is None:
            survivors.append(cand)
        else:
            groups.setdefault(key, []).append(cand)
    losers: list[tuple[Candidate, Head]] = []
    for group in groups.values():
        winner = precedence_winner([c.head for c in group])
        for cand in group:
            if cand.head.id == winner.id:
                survivors.append(cand)
            else:
                losers.append((cand, winner))
    return survivors, losers


def order_key(cand: Candidate) -> tuple[int, int, int, int, float, float, uuid.UUID]:
    """Constraints first (broadest first), then priority, proximity, relevance, recency, id."""
    head = cand.head
    is_constraint = head.kind is Kind.CONSTRAINT
    breadth = SCOPE_BREADTH[head.scope]
    return (
        0 if is_constraint else 1,
        -breadth if is_constraint else 0,
        -head.priority,
        breadth,
        -round(cand.relevance, 9),
        -head.created_at.timestamp(),
        head.id,
    )


def render_item(memory: Memory | Head) -> str:
    """One item labelled with its true scope, kind and source; the header is ours alone.

    Rendering is a trust boundary: every line separator in the content continues on a line
    indented by two spaces, so stored text can never begin a line that reads as another item,
    and content a reader would take for an item label (look-alike letters, invisible
    characters, other brackets) has its brackets written as "(" — also content stored before
    the write path refused it.
    """
    origin = (memory.origin if isinstance(memory, Head) else memory.source.origin).value
    date = memory.created_at.date().isoformat()
    body = LINE_BREAK.sub(CONTINUATION, defuse_headers(memory.content))
    return f"- [{memory.scope.value} {memory.kind.value} | {origin} | {date}] {body}"


def assemble(
    candidates: Iterable[Candidate],
    *,
    budget_chars: int,
    max_items: int,
    max_item_chars: int,
    strict: bool = False,
    trace: Sequence[TraceEntry] = (),
) -> RecallResult:
    """Resolve, order, limit and render. Pure; raises ``IncompleteRecall`` only when strict.

    Limits apply in this order: items whose rendering exceeds ``max_item_chars`` are left out
    whole, then at most ``max_items``, then the budget is filled with whole items in order,
    skipping any that does not fit and trying the next. ``len(text) <= budget_chars`` always.
    """
    pool = list({c.head.id: c for c in candidates}.values())
    survivors, losers = resolve_conflicts(pool)
    omitted: list[Omission] = []
    entries = list(trace)
    for loser, winner in sorted(losers, key=lambda pair: order_key(pair[0])):
        lost = loser.head
        chars = len(render_item(lost))
        omitted.append(Omission(lost.id, "conflict", chars, winner.id))
        entries.append(
            TraceEntry(
                lost.id,
                "dropped",
                "precedence",
                f"key {lost.key!r}: {lost.scope.value} {lost.kind.value} loses to {winner.id}",
            )
        )

    placed: list[RecalledItem] = []
    used = 0
    considered = 0
    incomplete = False
    for cand in sorted(survivors, key=order_key):
        head = cand.head
        text = render_item(head)
        size = len(text)
        reason: OmissionReason | None = None
        if size > max_item_chars:
            reason = "item_too_long"
        elif considered >= max_items:
            reason = "max_items"
        else:
            considered += 1
            cost = size + (len(SEPARATOR) if placed else 0)
            if used + cost > budget_chars:
                reason = "budget"
            else:
                used += cost
        if reason is None:
            placed.append(RecalledItem(cand.memory, text, cand.relevance))
            entries.append(
                TraceEntry(
                    head.id,
                    "kept",
                    "assembly",
                    f"{head.scope.value} {head.kind.value} ({cand.why}), {size} chars",
                )
            )
            continue
        omitted.append(Omission(head.id, reason, size))
        entries.append(
            TraceEntry(
                head.id,
                "dropped",
                reason,
                f"{head.scope.value} {head.kind.value}, {size} chars",
            )
        )
        if head.kind is Kind.CONSTRAINT:
            incomplete = True

    text = SEPARATOR.join(item.text for item in placed)
    result = RecallResult(
        items=placed, omitted=omitted, text=text, complete=not incomplete, trace=entries
    )
    if incomplete:
        missing = [
            o.memory_id
            for o in omitted
            if o.reason != "conflict" and _is_constraint(pool, o.memory_id)
        ]
        # Every recall of the caller would repeat this; the store warns once per interval.
        log.debug(
            "recall incomplete: %d constraint(s) could not be placed: %s",
            len(missing),
            ", ".join(map(str, missing)),
        )
        if strict:
            raise IncompleteRecall(f"constraints could not be placed: {missing}")
    return result


def _is_constraint(pool: Sequence[Candidate], memory_id: uuid.UUID) -> bool:
    return any(c.head.id == memory_id and c.head.kind is Kind.CONSTRAINT for c in pool)
