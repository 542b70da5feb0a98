"""The conversation archive as store operations: post a conversation (replace it atomically,
embedding only new or changed turns), recall passages, read and search one conversation, list
them, forget one, delete a user's archive, and retention. Plans for both facades.

The rules (validation, passages, rendering) are pure (:mod:`harness.memory.domain.conversations`);
fusion and the "nothing relevant" judgement are memory recall's (:func:`~harness.memory.domain.ranking.fuse`).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import exc as sa_exc

from harness.errors import InvalidInput, MemoryNotFound, StoreError
from harness.identifiers import check_identifier
from harness.memory.domain.conversations import (
    CONVERSATION_THRESHOLD,
    NOTHING_RELEVANT,
    ConversationHit,
    ConversationRecall,
    ConversationSummary,
    Passage,
    PutConversation,
    Turn,
    check_conversation_id,
    check_turns,
    passages_of,
    render_passages,
    text_sha,
)
from harness.memory.domain.idempotency import Answer, IdempotencyOutcome, Idempotent
from harness.memory.domain.ranking import Scored, fuse
from harness.memory.embedding.embedder import Embedder
from harness.memory.store import sql
from harness.memory.store.base import StoreBase
from harness.memory.store.checks import as_uuid, check_whole
from harness.memory.store.executors import Blocking, Op
from harness.memory.store.ops import memories as memory_ops
from harness.memory.store.ops.retrieval import MISS, known_query_vector, remember_query_vector
from harness.memory.store.plans import Plan, embedded, in_transaction, query_vector, read
from harness.memory.store.sql import conversations as conv_sql

__all__ = [
    "delete_user_conversations",
    "find_in_conversation",
    "forget_conversation",
    "list_conversations",
    "purge_old_conversations",
    "put_conversation",
    "put_conversation_once",
    "put_op",
    "read_conversation",
    "recall_conversations",
    "set_conversation_retention",
    "source_passage",
]

log = logging.getLogger(__name__)

#: Turns :func:`read_conversation` and :func:`find_in_conversation` return at most.
MAX_READ_TURNS = 200
_KEYS = uuid.UUID("6f1c3c55-2f0e-4d8a-9a53-0b8e1d1f7c21")


def _caller(tenant: str, user_id: str) -> tuple[str, str]:
    return check_identifier(tenant, "tenant"), check_identifier(user_id, "user_id")


# --- ingest ------------------------------------------------------------------------------------


def put_conversation(
    store: StoreBase,
    *,
    tenant: str,
    user_id: str,
    conversation_id: str,
    turns: Sequence[Turn | Mapping[str, Any]],
) -> Plan[PutConversation]:
    """Store the whole conversation so far, replacing what was stored under its id, in one
    transaction (a reader sees the old version or the new one, never half of either).

    Each turn is ``{"seq", "ts" (ISO 8601 with a zone), "role", "text"}`` plus an optional
    ``turn_id`` (default ``<conversation_id>-<seq>``). Idempotent: posting the same
    conversation again changes nothing and embeds nothing; only turns that are new or whose
    text (or turn id) changed are embedded, before a pooled connection is taken.

    Raises:
        InvalidInput: a bad id, turns out of order or with a duplicate seq or turn id, a
            timestamp without a zone, text over the limit (the field is named; nothing
            stored). StoreUnavailable / StoreError: the database failed (nothing stored).
    """
    tenant, user_id = _caller(tenant, user_id)
    cid = check_conversation_id(conversation_id)
    checked = check_turns(cid, turns)
    stored = yield from read("read conversation", tenant, lambda: _stored(tenant, user_id, cid))
    wanted = [turn for turn in checked if _needs_vector(turn, stored, store.embedder)]
    vectors = yield from embedded(lambda: _embed(store.embedder, [t.text for t in wanted]))
    op = put_op(store, tenant, user_id, cid, checked, vectors)
    return (yield from in_transaction("put conversation", op, tenant))


def put_conversation_once(
    store: StoreBase,
    *,
    tenant: str,
    user_id: str,
    conversation_id: str,
    turns: Sequence[Turn | Mapping[str, Any]],
    idempotency_key: str,
    request_sha256: str,
) -> Plan[Idempotent]:
    """:func:`put_conversation` once per (tenant, ``idempotency_key``), as memory ingest's
    keyed writes: a repeat with the same body (``request_sha256``) gets the first answer
    back (``REPLAY``), another body gets ``CONFLICT`` and nothing is stored. The answer's
    payload is :meth:`PutConversation.summary`, code 201. Raises like :func:`put_conversation`.
    """
    tenant, user_id = _caller(tenant, user_id)
    cid = check_conversation_id(conversation_id)
    key = check_identifier(idempotency_key, "Idempotency-Key")
    checked = check_turns(cid, turns)
    stored = yield from read("read conversation", tenant, lambda: _stored(tenant, user_id, cid))
    wanted = [turn for turn in checked if _needs_vector(turn, stored, store.embedder)]
    vectors = yield from embedded(lambda: _embed(store.embedder, [t.text for t in wanted]))
    op = _put_once(store, tenant, user_id, cid, checked, vectors, key, request_sha256)
    return (yield from in_transaction("put conversation", op, tenant))


def _put_once(
    store: StoreBase,
    tenant: str,
    user_id: str,
    cid: str,
    turns: tuple[Turn, ...],
    vectors: dict[str, list[float]] | None,
    key: str,
    request_sha256: str,
) -> Op[Idempotent]:
    record = yield from memory_ops.idempotency_lookup(tenant, key)
    if record is not None:
        return memory_ops.replay(record, request_sha256)
    put = yield from put_op(store, tenant, user_id, cid, turns, vectors)
    answer = Answer(201, put.summary())
    yield from memory_ops.idempotency_record(tenant, key, request_sha256, answer, store.clock.now())
    return Idempotent(IdempotencyOutcome.NEW, answer)


def _stored(tenant: str, user_id: str, cid: str) -> Op[dict[int, tuple[Any, ...]]]:
    rows = yield conv_sql.stored_turn_hashes(tenant, user_id, cid)
    return {row[0]: tuple(row) for row in rows}


def _needs_vector(
    turn: Turn, stored: Mapping[int, tuple[Any, ...]], embedder: Embedder | None
) -> bool:
    """New, changed (text or turn id), or stored without a vector (the model failed then)."""
    old = stored.get(turn.seq)
    return (
        old is None
        or old[1] != turn.turn_id
        or old[2] != text_sha(turn.text)
        or (embedder is not None and not old[5])
    )


def _embed(embedder: Embedder | None, texts: list[str]) -> dict[str, list[float]] | None:
    """Vectors by text hash; None when lexical-only or when the model fails (the turns are
    stored without vectors: full text still finds them)."""
    if embedder is None:
        return None
    if not texts:
        return {}
    try:
        vectors = embedder.embed(texts)
    except Exception as exc:
        log.warning("embedding conversation turns failed (%s); stored without vectors", exc)
        return None
    return {text_sha(text): list(v) for text, v in zip(texts, vectors, strict=True)}


def put_op(
    store: StoreBase,
    tenant: str,
    user_id: str,
    cid: str,
    turns: tuple[Turn, ...],
    vectors: dict[str, list[float]] | None,
) -> Op[PutConversation]:
    """Replace the stored conversation by ``turns`` (checked) in the caller's transaction;
    ``vectors`` by text hash (``{}``: embed here what needs it; None: store without)."""
    now = store.clock.now()
    yield conv_sql.upsert_conversation(
        {
            "tenant": tenant,
            "user_id": user_id,
            "conversation_id": cid,
            "started_at": min(t.ts for t in turns),
            "last_at": max(t.ts for t in turns),
            "turns": len(turns),
            "stored_at": now,
        }
    )
    # Read again under the row lock: another post may have landed since the first read.
    stored = yield from _stored(tenant, user_id, cid)
    new_seqs = {t.seq for t in turns}
    rewrite = [t for t in turns if _needs_vector(t, stored, store.embedder)]
    gone = [seq for seq in stored if seq not in new_seqs]
    drop = gone + [t.seq for t in rewrite if t.seq in stored]
    if drop:
        yield conv_sql.delete_conversation_turns(tenant, user_id, cid, drop)
    if vectors is not None:
        missing = [t.text for t in rewrite if text_sha(t.text) not in vectors]
        if missing:  # posted concurrently with other text: embed it here
            more = yield Blocking(lambda: _embed(store.embedder, missing))
            vectors = {**vectors, **(more or {})}
    if rewrite:
        yield (
            conv_sql.insert_conversation_turns(),
            [
                {
                    "tenant": tenant,
                    "user_id": user_id,
                    "conversation_id": cid,
                    "seq": turn.seq,
                    "turn_id": turn.turn_id,
                    "ts": turn.ts,
                    "role": turn.role,
                    "text": turn.text,
                    "text_sha256": text_sha(turn.text),
                    "embedding": (vectors or {}).get(text_sha(turn.text)),
                }
                for turn in rewrite
            ],
        )
    moved = [
        {"b_tenant": tenant, "b_user": user_id, "b_conv": cid, "b_seq": turn.seq}
        | {"ts": turn.ts, "role": turn.role}
        for turn in turns
        if turn.seq in stored
        and not _needs_vector(turn, stored, store.embedder)
        and (stored[turn.seq][3] != turn.ts or stored[turn.seq][4] != turn.role)
    ]
    if moved:
        yield conv_sql.update_turn_metadata(), moved
    return PutConversation(
        conversation_id=cid,
        turns=len(turns),
        embedded=len(rewrite) if vectors is not None else 0,
        unchanged=len(turns) - len(rewrite),
        removed=len(gone),
    )


# --- recall ------------------------------------------------------------------------------------


def recall_conversations(
    store: StoreBase,
    *,
    tenant: str,
    user_id: str,
    query: str,
    k: int = 3,
    neighbours: int = 1,
    budget_chars: int = 4000,
    threshold: float | None = None,
) -> Plan[ConversationRecall]:
    """Search the user's own conversations: hybrid (vector + IDF-weighted full text, fused by
    memory recall's RRF), judged by memory recall's relevance judge (so "nothing relevant" is
    an honest answer), the best ``k`` hits each with ``neighbours`` turns either side, grouped into
    dated passages per conversation, whole passages within ``budget_chars``. ``threshold``
    overrides the probability the best of the ``k`` hits needs (default
    :data:`CONVERSATION_THRESHOLD`, else the memory judge's; 0 keeps them whatever they score):
    below it the answer is "nothing relevant", above it all ``k`` come back.

    Read-only (a replica may answer). Never raises because of the database: a failure returns
    an empty result with ``degraded=True`` and logs a warning.

    Raises:
        InvalidInput: a bad tenant, user id, ``k`` (1-50), ``neighbours`` (0-20) or budget.
    """
    tenant, user_id = _caller(tenant, user_id)
    if not isinstance(query, str):
        raise InvalidInput("query: a string", fields=("query",))
    k = check_whole(k, "k", 1, 50)
    neighbours = check_whole(neighbours, "neighbours", 0, 20)
    budget_chars = check_whole(budget_chars, "budget_chars", 1, 1_000_000)
    if threshold is not None and not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
        raise InvalidInput("threshold: a probability in [0, 1]", fields=("threshold",))
    bar = CONVERSATION_THRESHOLD if threshold is None else float(threshold)
    query = query[:2000]
    try:
        return (yield from _recall(store, tenant, user_id, query, k, neighbours, budget_chars, bar))
    except Exception as exc:  # the host run goes on without the archive, whatever failed
        log.warning(
            "conversation recall failed; the run continues without it: %s",
            exc,
            exc_info=not isinstance(exc, (StoreError, sa_exc.SQLAlchemyError)),
        )
        return ConversationRecall((), "", degraded=True)


def _recall(
    store: StoreBase,
    tenant: str,
    user_id: str,
    query: str,
    k: int,
    neighbours: int,
    budget_chars: int,
    bar: float | None,
) -> Plan[ConversationRecall]:
    if not query.strip():
        return ConversationRecall((), NOTHING_RELEVANT)
    qv = yield from _query_vector(store, query)
    ranking = store.retriever.ranking
    op = _recall_op(tenant, user_id, query, qv, ranking.depth, k, neighbours, store, bar)
    hits, turns, started = yield from read("recall conversations", tenant, lambda: op)
    passages = passages_of(hits, turns, started, neighbours)
    kept, text = render_passages(passages, budget_chars)
    return ConversationRecall(
        tuple(kept),
        text or NOTHING_RELEVANT,
        left_out=len(passages) - len(kept),
        hits=tuple(hits),
    )


def _query_vector(store: StoreBase, query: str) -> Plan[list[float] | None]:
    cache = store.retriever.query_vectors
    known = known_query_vector(store.embedder, query, cache)
    if known is not MISS:
        return known
    vector = yield from query_vector(query)
    return remember_query_vector(store.embedder, query, cache, vector)


_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def identifier_query(query: str) -> str:
    """A tsquery (OR) of the query's words holding a digit (``MT-4471``, ``N-11``, ``K2``):
    a large archive ranks the turns holding them by full text whatever the vectors say."""
    words = dict.fromkeys(
        w.lower() for w in _IDENTIFIER.findall(query) if any(ch.isdigit() for ch in w)
    )
    return " | ".join(f"'{w}'" for w in list(words)[:16])


def _recall_op(
    tenant: str,
    user_id: str,
    query: str,
    qv: list[float] | None,
    depth: int,
    k: int,
    neighbours: int,
    store: StoreBase,
    bar: float | None,
) -> Op[tuple[list[ConversationHit], dict[str, list[Turn]], dict[str, datetime]]]:
    n_docs = (yield conv_sql.user_turn_count(tenant, user_id)).scalar_one()
    if not n_docs:
        return [], {}, {}
    # As memory recall: an exact scan for a small archive, the HNSW index past ``large_pool``.
    large = qv is not None and n_docs > store.retriever.config.large_pool
    if large:
        yield sql.hnsw_settings(store.retriever.config.ef_search)
    ids = identifier_query(query) if large else ""
    stmt = conv_sql.conversation_recall_scores(
        with_vector=qv is not None, exact=not large, with_ids=bool(ids)
    )
    bind: dict[str, Any] = {
        "tenant": tenant,
        "user_id": user_id,
        "n_docs": int(n_docs),
        "q_text": query,
        "stopwords": list(sql.STOPWORDS),
        "depth": depth,
        **({"qv": qv} if qv is not None else {}),
        **({"id_query": ids} if ids else {}),
    }
    where: dict[uuid.UUID, tuple[str, int]] = {}
    scored: list[Scored] = []
    for key, sim, vrank, lex, coverage, idf_coverage, max_idf, lrank in (yield (stmt, bind)):
        cid, _, seq = key.rpartition(":")
        sid = uuid.uuid5(_KEYS, key)
        where[sid] = (cid, int(seq))
        scored.append(
            Scored(
                sid,
                sim=sim,
                vrank=vrank,
                lex=lex,
                coverage=coverage,
                lrank=lrank,
                content_sim=sim,
                idf_coverage=idf_coverage,
                max_idf=max_idf,
                fingerprint=key,
            )
        )
    judging = store.retriever.ranking
    # Hits come in fused (RRF) order, which finds LoCoMo's evidence turns a little more often
    # than the judge's order (BENCHMARKS.md); the judge decides only "nothing relevant", on
    # the best of them: when one passes, the others come with it whatever they score.
    ranking = replace(judging, top_n=k, use_floor=False)
    kept, _ = fuse(scored, ranking, lexical_only=qv is None)
    passing = judging.bar(lexical_only=qv is None, override=bar)
    best = max((r.probability for r in kept), default=0.0)
    if not kept or (judging.use_floor and best < passing):
        return [], {}, {}
    hits = [
        ConversationHit(*where[r.scored.id], fused=r.fused, probability=r.probability) for r in kept
    ]
    if not hits:
        return [], {}, {}
    rows = yield (
        conv_sql.neighbour_turns(),
        {
            "tenant": tenant,
            "user_id": user_id,
            "convs": [h.conversation_id for h in hits],
            "seqs": [h.seq for h in hits],
            "neighbours": neighbours,
        },
    )
    turns: dict[str, list[Turn]] = {}
    started: dict[str, datetime] = {}
    for cid, seq, ts, role, text, turn_id, started_at in rows:
        turns.setdefault(cid, []).append(Turn(seq, ts, role, text, turn_id))
        started[cid] = started_at
    return hits, turns, started


# --- reading tools -----------------------------------------------------------------------------


def read_conversation(
    store: StoreBase,
    *,
    tenant: str,
    user_id: str,
    conversation_id: str,
    from_seq: int = 0,
    to_seq: int | None = None,
) -> Plan[list[Turn]]:
    """The user's conversation's turns with ``from_seq <= seq <= to_seq`` (at most
    :data:`MAX_READ_TURNS`), in order. Read-only.

    Raises:
        MemoryNotFound: the user has no conversation with that id (another user's or
            tenant's id included). InvalidInput: a bad id or range.
    """
    tenant, user_id = _caller(tenant, user_id)
    cid = check_conversation_id(conversation_id)
    lo = check_whole(from_seq, "from_seq", 0, 2**31 - 1)
    hi = lo + MAX_READ_TURNS - 1 if to_seq is None else check_whole(to_seq, "to_seq", lo, 2**31 - 1)
    return (
        yield from read("read conversation", tenant, lambda: _read(tenant, user_id, cid, lo, hi))
    )


def _read(tenant: str, user_id: str, cid: str, lo: int, hi: int) -> Op[list[Turn]]:
    yield from _exists(tenant, user_id, cid)
    rows = yield conv_sql.read_conversation_turns(tenant, user_id, cid, lo, hi, MAX_READ_TURNS)
    return [Turn(seq, ts, role, text, turn_id) for _, seq, ts, role, text, turn_id, _ in rows]


def _exists(tenant: str, user_id: str, cid: str) -> Op[None]:
    found = yield conv_sql.list_conversations_by_id(tenant, user_id, cid)
    if found.first() is None:
        raise MemoryNotFound(f"conversation {cid!r} not found")


def find_in_conversation(
    store: StoreBase, *, tenant: str, user_id: str, conversation_id: str, text: str
) -> Plan[list[Turn]]:
    """The turns of the user's conversation holding ``text`` exactly (case-insensitive), in
    order, at most :data:`MAX_READ_TURNS`. Read-only. Raises like :func:`read_conversation`."""
    tenant, user_id = _caller(tenant, user_id)
    cid = check_conversation_id(conversation_id)
    if not isinstance(text, str) or not text.strip() or len(text) > 500:
        raise InvalidInput("text: 1-500 characters to look for", fields=("text",))
    return (
        yield from read("find in conversation", tenant, lambda: _find(tenant, user_id, cid, text))
    )


def _find(tenant: str, user_id: str, cid: str, text: str) -> Op[list[Turn]]:
    yield from _exists(tenant, user_id, cid)
    rows = yield conv_sql.find_in_conversation_turns(tenant, user_id, cid, text, MAX_READ_TURNS)
    return [Turn(seq, ts, role, body, turn_id) for _, seq, ts, role, body, turn_id in rows]


def list_conversations(
    store: StoreBase, *, tenant: str, user_id: str, limit: int = 50
) -> Plan[list[ConversationSummary]]:
    """The user's conversations with their dates and sizes, most recent first. Read-only."""
    tenant, user_id = _caller(tenant, user_id)
    limit = check_whole(limit, "limit", 1, 1000)
    return (yield from read("list conversations", tenant, lambda: _list(tenant, user_id, limit)))


def _list(tenant: str, user_id: str, limit: int) -> Op[list[ConversationSummary]]:
    rows = yield conv_sql.list_conversations(tenant, user_id, limit)
    return [ConversationSummary(*row) for row in rows]


def source_passage(
    store: StoreBase,
    memory_id: uuid.UUID | str,
    *,
    tenant: str,
    user_id: str,
    neighbours: int = 1,
) -> Plan[Passage | None]:
    """The passage a memory was extracted from: its source turn (``Source.turn_id``) with
    ``neighbours`` turns either side, from the caller's own archive. None when the memory has
    no conversation source, or its conversation is not the caller's (or was forgotten).
    Read-only.

    Raises:
        MemoryNotFound: the tenant has no memory with that id. InvalidInput: bad arguments.
    """
    mid = as_uuid(memory_id)
    tenant, user_id = _caller(tenant, user_id)
    neighbours = check_whole(neighbours, "neighbours", 0, 20)
    op = _source(tenant, user_id, mid, neighbours)
    return (yield from read("source passage", tenant, lambda: op))


def _source(tenant: str, user_id: str, mid: uuid.UUID, neighbours: int) -> Op[Passage | None]:
    memory = yield from memory_ops.get(tenant, mid)
    if memory is None:
        raise MemoryNotFound(f"memory {mid} not found")
    cid, turn_id = memory.source.conversation_id, memory.source.turn_id
    if cid is None:
        return None
    seq: int | None = None
    if turn_id is not None:
        seq = (yield conv_sql.turn_seq_of(tenant, user_id, cid, turn_id)).scalar_one_or_none()
    lo, hi = (0, 2 * neighbours) if seq is None else (seq - neighbours, seq + neighbours)
    rows = list(
        (
            yield conv_sql.read_conversation_turns(
                tenant, user_id, cid, max(lo, 0), hi, 2 * neighbours + 1
            )
        )
    )
    turns = tuple(Turn(s, ts, role, text, tid) for _, s, ts, role, text, tid, _ in rows)
    if not turns:
        return None
    started = rows[0][6]
    hits = (seq,) if seq is not None else ()
    return Passage(cid, started, hits, turns, fused=0.0, probability=1.0)


# --- deletion and retention ----------------------------------------------------------------------


def forget_conversation(
    store: StoreBase, *, tenant: str, user_id: str, conversation_id: str
) -> Plan[bool]:
    """Delete one of the user's conversations, its turns' text and vectors, for good.
    Idempotent: False when the user has no such conversation (another user's included)."""
    tenant, user_id = _caller(tenant, user_id)
    cid = check_conversation_id(conversation_id)
    op = _returned(conv_sql.delete_conversation(tenant, user_id, cid))
    return bool((yield from in_transaction("forget conversation", op, tenant)))


def delete_user_conversations(store: StoreBase, *, tenant: str, user_id: str) -> Plan[int]:
    """Delete the user's whole archive (the product deleted the user). Returns how many
    conversations went. Idempotent."""
    tenant, user_id = _caller(tenant, user_id)
    op = _returned(conv_sql.delete_user_conversations(tenant, user_id))
    return (yield from in_transaction("delete user conversations", op, tenant))


def delete_user_op(tenant: str, user_id: str) -> Op[int]:
    """:func:`delete_user_conversations` inside the caller's transaction (cleanups)."""
    return _returned(conv_sql.delete_user_conversations(tenant, user_id))


def _returned(stmt: Any) -> Op[int]:
    rows = yield stmt
    return len(rows.all())


def set_conversation_retention(store: StoreBase, *, tenant: str, days: int | None) -> Plan[None]:
    """Keep the tenant's conversations ``days`` after their last turn (None: for ever);
    :func:`purge_old_conversations` deletes the older ones. Idempotent."""
    tenant = check_identifier(tenant, "tenant")
    if days is not None:
        days = check_whole(days, "days", 1, 100_000)
    yield from in_transaction(
        "set conversation retention",
        _one(conv_sql.set_conversation_retention(tenant, days)),
        tenant,
    )


def _one(stmt: Any) -> Op[None]:
    yield stmt


def purge_old_conversations(store: StoreBase, now: datetime | None = None) -> Plan[int]:
    """Delete, in every tenant with a retention, the conversations past it (text and vectors).
    Returns how many. Idempotent."""
    if now is not None and (not isinstance(now, datetime) or now.tzinfo is None):
        raise InvalidInput("now: a timezone-aware datetime", fields=("now",))
    at = now or store.clock.now()
    op = _returned(conv_sql.delete_expired_conversations(at))
    return (yield from in_transaction("purge conversations", op, admits="everyone"))
