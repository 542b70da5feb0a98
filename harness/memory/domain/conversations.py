"""The conversation archive's pure values and rules: turns as posted, their validation, the
passages recall returns (a hit turn with its neighbours, grouped by conversation) and how they
are rendered within a character budget.

Pure: no database, no model. A conversation is kept verbatim: nothing here summarises,
rewrites or merges a turn's text; rendering only cuts whole passages.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness.errors import InvalidInput

__all__ = [
    "CONVERSATION_ID",
    "CONVERSATION_THRESHOLD",
    "MAX_TURNS",
    "MAX_TURN_CHARS",
    "NOTHING_RELEVANT",
    "NO_CONVERSATIONS",
    "ROLES",
    "ConversationHit",
    "ConversationRecall",
    "ConversationSummary",
    "Passage",
    "PutConversation",
    "Turn",
    "check_conversation_id",
    "check_turns",
    "parse_ts",
    "passages_of",
    "render_passages",
    "render_turns",
    "text_sha",
    "turns_from_jsonl",
]

#: The ids a conversation may have: safe in a URL path and a file name, as the gateway sends.
CONVERSATION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_TURN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
ROLES = ("user", "assistant", "system", "tool")
MAX_TURN_CHARS = 20_000
MAX_TURNS = 2_000
#: The probability a hit turn needs (None: the memory judge's fitted threshold). Chosen on
#: LoCoMo's dev conversations by ``python -m bench.conversations`` (BENCHMARKS.md).
CONVERSATION_THRESHOLD: float | None = None
NOTHING_RELEVANT = "Nothing relevant found in earlier conversations."
NO_CONVERSATIONS = "No earlier conversations are stored for this user yet."


@dataclass(frozen=True)
class Turn:
    """One message of a conversation, verbatim; ``ts`` is timezone-aware (UTC once checked)."""

    seq: int
    ts: datetime
    role: str
    text: str
    turn_id: str


@dataclass(frozen=True)
class PutConversation:
    """What posting a conversation did: its turns now, and how many were new or changed (and
    so embedded), unchanged (kept with their vectors) or removed."""

    conversation_id: str
    turns: int
    embedded: int
    unchanged: int
    removed: int

    def summary(self) -> dict[str, Any]:
        """The answer's JSON body (the ingest endpoint's)."""
        return {
            "conversation_id": self.conversation_id,
            "turns": self.turns,
            "embedded": self.embedded,
            "unchanged": self.unchanged,
            "removed": self.removed,
        }


@dataclass(frozen=True)
class ConversationSummary:
    """One of a user's conversations: its id, first and last turn times, and size."""

    conversation_id: str
    started_at: datetime
    last_at: datetime
    turns: int


@dataclass(frozen=True)
class ConversationHit:
    """One ranked turn: where it is, and the fused score and judged probability it got."""

    conversation_id: str
    seq: int
    fused: float
    probability: float


@dataclass(frozen=True)
class Passage:
    """A hit turn (``hit_seq``, or several merged hits) with ``turns`` either side, from one
    conversation; ``started_at`` is the conversation's first turn time (its date)."""

    conversation_id: str
    started_at: datetime
    hit_seqs: tuple[int, ...]
    turns: tuple[Turn, ...]
    fused: float
    probability: float

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(t.seq for t in self.turns)

    def render(self) -> str:
        """The passage as the tool returns it: a dated header, then each turn on its lines."""
        first, last = self.turns[0].seq, self.turns[-1].seq
        head = (
            f"--- {self.started_at:%Y-%m-%d} · conversation {self.conversation_id} "
            f"(turns {first}-{last})"
        )
        return head + "\n" + render_turns(self.turns, marked=self.hit_seqs)


@dataclass(frozen=True)
class ConversationRecall:
    """What recall over the archive returns: the passages best first and ``text``, the
    rendered passages within the budget (or an honest "nothing relevant" line).

    ``degraded``: the store failed and the answer is empty (the host goes on without it);
    ``left_out``: passages that passed but did not fit the budget.
    """

    passages: tuple[Passage, ...]
    text: str
    degraded: bool = False
    left_out: int = 0
    hits: tuple[ConversationHit, ...] = field(default=(), repr=False)

    @property
    def nothing_relevant(self) -> bool:
        return not self.passages and not self.degraded


def check_conversation_id(value: Any, field_name: str = "conversation_id") -> str:
    """``value`` when it matches ``[A-Za-z0-9_-]{1,128}``; else :class:`InvalidInput`."""
    if not isinstance(value, str) or not CONVERSATION_ID.fullmatch(value):
        raise InvalidInput(f"{field_name}: must match [A-Za-z0-9_-]{{1,128}}", fields=(field_name,))
    return value


def parse_ts(value: Any, field_name: str) -> datetime:
    """An ISO 8601 timestamp with a zone (``Z`` or an offset), as UTC; a naive one is refused:
    the archive dates passages and must not guess a zone."""
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise InvalidInput(
                f"{field_name}: not an ISO 8601 timestamp: {value[:40]!r}", fields=(field_name,)
            ) from None
    else:
        raise InvalidInput(f"{field_name}: an ISO 8601 timestamp string", fields=(field_name,))
    if ts.tzinfo is None or ts.utcoffset() is None:
        raise InvalidInput(
            f"{field_name}: needs a zone (Z or +hh:mm): {value!s:.40}", fields=(field_name,)
        )
    return ts.astimezone(UTC)


def _turn(conversation_id: str, n: int, raw: Turn | Mapping[str, Any]) -> Turn:
    at = f"turns.{n}"
    if isinstance(raw, Turn):
        raw = {
            "seq": raw.seq,
            "ts": raw.ts,
            "role": raw.role,
            "text": raw.text,
            "turn_id": raw.turn_id,
        }
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{at}: an object with seq, ts, role, text", fields=(at,))
    unknown = set(raw) - {"seq", "ts", "role", "text", "turn_id", "id"}
    if unknown:
        name = sorted(unknown)[0]
        raise InvalidInput(f"{at}.{name}: unknown field", fields=(f"{at}.{name}",))
    seq = raw.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq < 2**31:
        raise InvalidInput(f"{at}.seq: a whole number >= 0", fields=(f"{at}.seq",))
    ts = parse_ts(raw.get("ts"), f"{at}.ts")
    role = raw.get("role")
    if role not in ROLES:
        raise InvalidInput(f"{at}.role: one of {', '.join(ROLES)}", fields=(f"{at}.role",))
    text = raw.get("text")
    if not isinstance(text, str):
        raise InvalidInput(f"{at}.text: a string", fields=(f"{at}.text",))
    if len(text) > MAX_TURN_CHARS:
        raise InvalidInput(
            f"{at}.text: {len(text)} characters exceeds the maximum of {MAX_TURN_CHARS}",
            fields=(f"{at}.text",),
        )
    if "\x00" in text:
        raise InvalidInput(f"{at}.text: must not hold NUL characters", fields=(f"{at}.text",))
    turn_id = raw.get("turn_id", raw.get("id"))
    if turn_id is None:
        turn_id = f"{conversation_id}-{seq}"
    if not isinstance(turn_id, str) or not _TURN_ID.fullmatch(turn_id):
        raise InvalidInput(
            f"{at}.turn_id: must match [A-Za-z0-9_.:-]{{1,128}}", fields=(f"{at}.turn_id",)
        )
    return Turn(seq=seq, ts=ts, role=role, text=text, turn_id=turn_id)


def check_turns(conversation_id: str, turns: Any) -> tuple[Turn, ...]:
    """The turns checked: each field (naming ``turns.N.field``), ``seq`` strictly increasing
    (in order, no duplicates), turn ids unique, at most :data:`MAX_TURNS`, at least one."""
    if isinstance(turns, (str, bytes, Mapping)) or not isinstance(turns, Sequence):
        raise InvalidInput("turns: a list of turn objects", fields=("turns",))
    if not turns:
        raise InvalidInput("turns: at least one turn", fields=("turns",))
    if len(turns) > MAX_TURNS:
        raise InvalidInput(
            f"turns: {len(turns)} turns exceeds the maximum of {MAX_TURNS}", fields=("turns",)
        )
    out = [_turn(conversation_id, n, raw) for n, raw in enumerate(turns)]
    ids: set[str] = set()
    for n, (before, turn) in enumerate(zip([None, *out], out, strict=False)):
        if before is not None and turn.seq <= before.seq:
            what = "duplicate seq" if turn.seq == before.seq else "turns out of order"
            raise InvalidInput(
                f"turns.{n}.seq: {what} ({turn.seq} after {before.seq})",
                fields=(f"turns.{n}.seq",),
            )
        if turn.turn_id in ids:
            raise InvalidInput(
                f"turns.{n}.turn_id: duplicate turn id {turn.turn_id!r}",
                fields=(f"turns.{n}.turn_id",),
            )
        ids.add(turn.turn_id)
    return tuple(out)


def text_sha(text: str) -> str:
    """The hex SHA-256 of a turn's text: a turn whose text hash is unchanged keeps its vector."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def render_turns(turns: Iterable[Turn], *, marked: Sequence[int] = ()) -> str:
    """Turns one after another: ``[seq] role hh:mm: text`` (``*`` marks a hit), verbatim."""
    lines = []
    for t in turns:
        mark = "*" if t.seq in marked else " "
        lines.append(f"{mark}[{t.seq}] {t.role} {t.ts:%Y-%m-%d %H:%M}: {t.text}")
    return "\n".join(lines)


def passages_of(
    hits: Sequence[ConversationHit],
    turns: Mapping[str, Sequence[Turn]],
    started: Mapping[str, datetime],
    neighbours: int,
) -> list[Passage]:
    """Each hit with ``neighbours`` turns either side from ``turns`` (every fetched turn of
    each hit's conversation, in order); hits whose windows overlap or touch in one
    conversation become one passage. Passages come best first (by their best hit)."""
    windows: dict[str, list[tuple[int, int, list[ConversationHit]]]] = {}
    for hit in hits:
        lo, hi = hit.seq - neighbours, hit.seq + neighbours
        spans = windows.setdefault(hit.conversation_id, [])
        for i, (a, b, members) in enumerate(spans):
            if lo <= b + 1 and hi >= a - 1:
                spans[i] = (min(a, lo), max(b, hi), [*members, hit])
                break
        else:
            spans.append((lo, hi, [hit]))
    out: list[Passage] = []
    for cid, spans in windows.items():
        spans = _merged(spans)
        available = turns.get(cid, ())
        for lo, hi, members in spans:
            in_window = tuple(t for t in available if lo <= t.seq <= hi)
            if not in_window:
                continue
            best = max(members, key=lambda h: (h.probability, h.fused))
            out.append(
                Passage(
                    conversation_id=cid,
                    started_at=started.get(cid, in_window[0].ts),
                    hit_seqs=tuple(sorted(h.seq for h in members)),
                    turns=in_window,
                    fused=best.fused,
                    probability=best.probability,
                )
            )
    order = {(h.conversation_id, h.seq): n for n, h in enumerate(hits)}
    out.sort(key=lambda p: min(order[(p.conversation_id, s)] for s in p.hit_seqs))
    return out


def _merged(
    spans: list[tuple[int, int, list[ConversationHit]]],
) -> list[tuple[int, int, list[ConversationHit]]]:
    """Spans merged until none overlap or touch (a later hit can bridge two earlier ones)."""
    spans = sorted(spans, key=lambda s: s[0])
    merged: list[tuple[int, int, list[ConversationHit]]] = []
    for a, b, members in spans:
        if merged and a <= merged[-1][1] + 1:
            pa, pb, pm = merged[-1]
            merged[-1] = (pa, max(pb, b), [*pm, *members])
        else:
            merged.append((a, b, members))
    return merged


def render_passages(passages: Sequence[Passage], budget_chars: int) -> tuple[list[Passage], str]:
    """The passages that fit ``budget_chars`` whole, in order, and their text (passages are
    never cut: one that does not fit is skipped, a smaller later one may still fit)."""
    kept: list[Passage] = []
    parts: list[str] = []
    used = 0
    for p in passages:
        text = p.render()
        cost = len(text) + (2 if parts else 0)
        if used + cost > budget_chars:
            continue
        kept.append(p)
        parts.append(text)
        used += cost
    return kept, "\n\n".join(parts)


def turns_from_jsonl(lines: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """Conversations from JSONL in the seed's line format (``session_id``, ``turn_uuid``,
    ``seq``, ``ts``, ``role``, ``blocks`` of ``{"block_type": "text", "text": ...}``), as
    turn objects per session id in file order. The text of a line is its text blocks joined
    by a newline. A malformed line raises :class:`InvalidInput` naming ``line N``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{where}: not JSON: {exc.msg}", fields=(where,)) from None
        if not isinstance(row, dict):
            raise InvalidInput(f"{where}: a JSON object", fields=(where,))
        sid = check_conversation_id(row.get("session_id"), f"{where}.session_id")
        blocks = row.get("blocks")
        if not isinstance(blocks, list):
            raise InvalidInput(f"{where}.blocks: a list of blocks", fields=(f"{where}.blocks",))
        texts = [
            b["text"]
            for b in blocks
            if isinstance(b, dict)
            and b.get("block_type") == "text"
            and isinstance(b.get("text"), str)
        ]
        turn: dict[str, Any] = {
            "seq": row.get("seq"),
            "ts": row.get("ts"),
            "role": row.get("role"),
            "text": "\n".join(texts),
        }
        if row.get("turn_uuid") is not None:
            turn["turn_id"] = row["turn_uuid"]
        out.setdefault(sid, []).append(turn)
    return out
