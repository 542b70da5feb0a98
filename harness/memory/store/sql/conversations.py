"""The conversation archive's statements: tenant then user first in every filter.

A conversation is replaced in one transaction (its row locked first, so two posts of one
conversation apply one after the other); recall ranks the caller's own turns by vector and by
IDF-weighted full text (the memories' lexical ranking, over turns) and fetches the neighbours
of the hits in a second statement of the same read.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import (
    Delete,
    Insert,
    Integer,
    Select,
    String,
    Text,
    Update,
    and_,
    bindparam,
    delete,
    func,
    literal,
    literal_column,
    select,
    union,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.sql.dml import ReturningDelete

from harness.memory.store.sql.retrieval import _idf_lexical_ranks, _query_lexemes
from harness.memory.store.sql.schema import conversation_settings, conversation_turns, conversations

__all__ = [
    "conversation_recall_scores",
    "delete_conversation",
    "delete_conversation_turns",
    "delete_expired_conversations",
    "delete_user_conversations",
    "find_in_conversation_turns",
    "insert_conversation_turns",
    "list_conversations",
    "list_conversations_by_id",
    "neighbour_turns",
    "read_conversation_turns",
    "set_conversation_retention",
    "stored_turn_hashes",
    "turn_seq_of",
    "update_turn_metadata",
    "upsert_conversation",
    "user_turn_count",
]

c = conversations.c
t = conversation_turns.c


def _of(table_c: Any, tenant: str, user_id: str) -> Any:
    return and_(table_c.tenant == tenant, table_c.user_id == user_id)


def upsert_conversation(values: dict[str, Any]) -> Insert:
    """Insert or replace the conversation's row; the conflict update locks it, so posts of one
    conversation are serialised for the rest of the transaction."""
    stmt = pg_insert(conversations).values(**values)
    return stmt.on_conflict_do_update(
        index_elements=[c.tenant, c.user_id, c.conversation_id],
        set_={
            "started_at": stmt.excluded.started_at,
            "last_at": stmt.excluded.last_at,
            "turns": stmt.excluded.turns,
            "stored_at": stmt.excluded.stored_at,
        },
    )


def stored_turn_hashes(tenant: str, user_id: str, conversation_id: str) -> Select[Any]:
    """(seq, turn_id, text_sha256, ts, role, has vector) of the conversation's stored turns."""
    return select(t.seq, t.turn_id, t.text_sha256, t.ts, t.role, t.embedding.is_not(None)).where(
        _of(t, tenant, user_id), t.conversation_id == conversation_id
    )


def delete_conversation_turns(
    tenant: str, user_id: str, conversation_id: str, seqs: list[int]
) -> Delete:
    """Delete these turns of the conversation (removed, or rewritten below)."""
    return delete(conversation_turns).where(
        _of(t, tenant, user_id),
        t.conversation_id == conversation_id,
        t.seq == func.any(bindparam("seqs", seqs, type_=ARRAY(Integer))),
    )


def insert_conversation_turns() -> Insert:
    """Insert turns (executemany over rows of every column but the computed ``tsv``)."""
    return conversation_turns.insert()


def update_turn_metadata() -> Update:
    """A kept turn's timestamp and role (its text, and so its vector, unchanged); executemany
    with ``b_tenant``, ``b_user``, ``b_conv``, ``b_seq``, ``ts``, ``role``."""
    return (
        update(conversation_turns)
        .where(
            t.tenant == bindparam("b_tenant"),
            t.user_id == bindparam("b_user"),
            t.conversation_id == bindparam("b_conv"),
            t.seq == bindparam("b_seq"),
        )
        .values(ts=bindparam("ts"), role=bindparam("role"))
    )


def delete_conversation(tenant: str, user_id: str, conversation_id: str) -> ReturningDelete[Any]:
    """Delete one conversation (its turns go with it: ON DELETE CASCADE)."""
    return (
        delete(conversations)
        .where(_of(c, tenant, user_id), c.conversation_id == conversation_id)
        .returning(c.conversation_id)
    )


def delete_user_conversations(tenant: str, user_id: str) -> ReturningDelete[Any]:
    """Delete every conversation of the user (and their turns)."""
    return delete(conversations).where(_of(c, tenant, user_id)).returning(c.conversation_id)


def set_conversation_retention(tenant: str, days: int | None) -> Insert:
    """Set the tenant's retention (days after a conversation's last turn; None: kept)."""
    s = conversation_settings.c
    stmt = pg_insert(conversation_settings).values(tenant=tenant, name="retention_days", value=days)
    return stmt.on_conflict_do_update(
        index_elements=[s.tenant, s.name], set_={"value": stmt.excluded.value}
    )


def delete_expired_conversations(now: Any) -> ReturningDelete[Any]:
    """Delete, in every tenant with a retention, the conversations whose last turn is older
    than it; returns (tenant, user_id, conversation_id)."""
    s = conversation_settings.c
    cutoff = literal(now) - func.make_interval(0, 0, 0, s.value)
    return (
        delete(conversations)
        .where(
            s.tenant == c.tenant,
            s.name == "retention_days",
            s.value.is_not(None),
            c.last_at < cutoff,
        )
        .returning(c.tenant, c.user_id, c.conversation_id)
    )


def list_conversations(tenant: str, user_id: str, limit: int) -> Select[Any]:
    """The user's conversations, most recent last turn first."""
    return (
        select(c.conversation_id, c.started_at, c.last_at, c.turns)
        .where(_of(c, tenant, user_id))
        .order_by(c.last_at.desc(), c.conversation_id)
        .limit(limit)
    )


def list_conversations_by_id(tenant: str, user_id: str, conversation_id: str) -> Select[Any]:
    """The user's conversation with that id (no row: not the caller's, or none)."""
    return select(c.conversation_id).where(
        _of(c, tenant, user_id), c.conversation_id == conversation_id
    )


def turn_seq_of(tenant: str, user_id: str, conversation_id: str, turn_id: str) -> Select[Any]:
    """The seq of the user's turn with that turn id (no row: not the caller's, or none)."""
    return select(t.seq).where(
        _of(t, tenant, user_id), t.conversation_id == conversation_id, t.turn_id == turn_id
    )


def _turn_columns() -> list[Any]:
    return [t.conversation_id, t.seq, t.ts, t.role, t.text, t.turn_id]


def read_conversation_turns(
    tenant: str, user_id: str, conversation_id: str, from_seq: int, to_seq: int, limit: int
) -> Select[Any]:
    """The conversation's turns with ``from_seq <= seq <= to_seq``, in order (at most
    ``limit``), each with the conversation's start."""
    return (
        select(*_turn_columns(), c.started_at)
        .join(
            conversations,
            and_(
                c.tenant == t.tenant,
                c.user_id == t.user_id,
                c.conversation_id == t.conversation_id,
            ),
        )
        .where(
            _of(t, tenant, user_id),
            t.conversation_id == conversation_id,
            t.seq >= from_seq,
            t.seq <= to_seq,
        )
        .order_by(t.seq)
        .limit(limit)
    )


def find_in_conversation_turns(
    tenant: str, user_id: str, conversation_id: str, needle: str, limit: int
) -> Select[Any]:
    """Turns of the conversation holding ``needle`` exactly (case-insensitive, no pattern
    characters: ``strpos`` on lower-cased text), in order."""
    return (
        select(*_turn_columns())
        .where(
            _of(t, tenant, user_id),
            t.conversation_id == conversation_id,
            func.strpos(func.lower(t.text), func.lower(bindparam("needle", needle, type_=Text)))
            > 0,
        )
        .order_by(t.seq)
        .limit(limit)
    )


def neighbour_turns() -> Select[Any]:
    """Every turn of the caller within ``neighbours`` of a hit (binds ``tenant``, ``user_id``,
    ``convs`` and ``seqs``: the hits, pairwise; ``neighbours``), with the conversation's
    start, in conversation and turn order."""
    hits = (
        select(
            func.unnest(bindparam("convs", type_=ARRAY(String))).label("cid"),
            func.unnest(bindparam("seqs", type_=ARRAY(Integer))).label("seq"),
        )
    ).subquery("hits")
    n = bindparam("neighbours", type_=Integer)
    near = (
        select(t.conversation_id, t.seq)
        .join(
            hits,
            and_(
                t.conversation_id == hits.c.cid,
                t.seq >= hits.c.seq - n,
                t.seq <= hits.c.seq + n,
            ),
        )
        .where(t.tenant == bindparam("tenant"), t.user_id == bindparam("user_id"))
        .distinct()
        .subquery("near")
    )
    return (
        select(*_turn_columns(), c.started_at)
        .join(
            near,
            and_(t.conversation_id == near.c.conversation_id, t.seq == near.c.seq),
        )
        .join(
            conversations,
            and_(
                c.tenant == t.tenant,
                c.user_id == t.user_id,
                c.conversation_id == t.conversation_id,
            ),
        )
        .where(t.tenant == bindparam("tenant"), t.user_id == bindparam("user_id"))
        .order_by(t.conversation_id, t.seq)
    )


def user_turn_count(tenant: str, user_id: str) -> Select[Any]:
    """How many turns the user's archive holds (their conversations' sizes, summed)."""
    return select(func.coalesce(func.sum(c.turns), 0)).where(_of(c, tenant, user_id))


@lru_cache(maxsize=8)
def conversation_recall_scores(
    *, with_vector: bool, exact: bool = True, with_ids: bool = False
) -> Select[Any]:
    """The caller's turns ranked by vector and by IDF-weighted full text (memory recall's
    lexical ranking, over turns), full-outer-joined: rows (key ``conversation_id:seq``, sim,
    vrank, lex, coverage, idf_coverage, max_idf, lrank).

    ``exact`` ranks vectors by an exact distance over the user's turns and full text over all
    of them (N for the IDF: ``n_docs``, the user's turn count). Otherwise (a large archive)
    vectors come from the HNSW index with the user filter applied during the scan (run it with
    ``hnsw_settings``) and full text ranks only the vector candidates plus, ``with_ids``, the
    turns holding one of the query's identifiers (``id_query``, a tsquery of words with a
    digit): ranking every turn holding any query word costs 100 ms and more at 10k turns, and
    an identifier the vectors miss is what full text is for. Row-level security keeps the GIN
    index out (``@@`` is not leakproof), so full text reads the user's turns by primary key.
    Binds ``tenant``, ``user_id``, ``n_docs``, ``q_text``, ``stopwords``, ``depth``, with
    vectors ``qv``, ``with_ids`` ``id_query``."""
    depth = bindparam("depth", type_=Integer)
    q = select(_query_lexemes().label("lexemes")).cte("q").prefix_with("MATERIALIZED")

    quoted = (
        select(func.array_agg(func.quote_literal(literal_column("l"))))
        .select_from(func.unnest(q.c.lexemes).alias("l"))
        .scalar_subquery()
    )
    one_each = (
        select(
            func.array_agg(
                func.to_tsquery(
                    literal_column("'simple'::regconfig"), func.quote_literal(literal_column("l"))
                )
            )
        )
        .select_from(func.unnest(q.c.lexemes).alias("l"))
        .scalar_subquery()
    )
    qt = (
        select(
            func.to_tsquery(
                literal_column("'simple'::regconfig"),
                func.coalesce(func.array_to_string(quoted, " | "), ""),
            ).label("tsq"),
            q.c.lexemes,
            one_each.label("tsqs"),
        )
        .cte("qt")
        .prefix_with("MATERIALIZED")
    )
    # A turn's key as one text value (the lexical ranking keys rows by one ``id`` column).
    key = (t.conversation_id + literal(":") + func.cast(t.seq, Text)).label("id")
    mine = and_(t.tenant == bindparam("tenant"), t.user_id == bindparam("user_id"))
    vec = None
    if with_vector:
        qv = bindparam("qv", type_=conversation_turns.c.embedding.type)
        d = t.embedding.cosine_distance(qv)
        if exact:
            # OFFSET 0: each distance is computed once per row, not once per reader.
            dist = (
                select(key, t.text_sha256.label("fingerprint"), d.label("d"))
                .where(mine, t.embedding.is_not(None))
                .offset(0)
                .subquery("dist")
            )
            top = (
                select(dist.c.id, dist.c.d)
                .order_by(dist.c.d, dist.c.fingerprint, dist.c.id)
                .limit(depth)
                .subquery("top")
            )
        else:
            top = (
                select(key, t.conversation_id.label("cid"), t.seq.label("seq"), d.label("d"))
                .where(mine, t.embedding.is_not(None))
                .order_by(d)
                .limit(depth)
                .subquery("top")
            )
        vec = (
            select(
                top.c.id,
                (1 - top.c.d).label("sim"),
                func.rank().over(order_by=top.c.d).label("vrank"),
                *([top.c.cid, top.c.seq] if not exact else []),
            )
            .cte("vec")
            .prefix_with("MATERIALIZED")
        )
    n_docs: Any = bindparam("n_docs", type_=Integer)
    lexical_columns = [
        key,
        literal("user").label("scope"),
        literal("fact").label("kind"),
        t.text_sha256.label("fingerprint"),
        t.tsv,
    ]
    source: Any
    if vec is not None and not exact:
        # The vector candidates by primary key (a key expression would scan every turn).
        near = (
            select(*lexical_columns)
            .select_from(
                conversation_turns.join(
                    vec, and_(t.conversation_id == vec.c.cid, t.seq == vec.c.seq)
                )
            )
            .where(mine)
        )
        if with_ids:
            ids = func.to_tsquery(
                literal_column("'simple'::regconfig"), bindparam("id_query", type_=Text)
            )
            held = select(*lexical_columns).where(mine, t.tsv.op("@@")(ids))
            source = union(near, held).subquery("lex_source")
        else:
            source = near.subquery("lex_source")
        n_docs = None  # the matched set itself, as memory recall's bounded full text
    else:
        source = select(*lexical_columns).where(mine).subquery("lex_source")
    fts = _idf_lexical_ranks(qt, source, n_docs, depth)
    lexical = [fts.c.lex, fts.c.coverage, fts.c.idf_coverage, fts.c.max_idf, fts.c.lrank]
    if vec is None:
        return select(
            fts.c.id,
            literal_column("NULL::float8").label("sim"),
            literal_column("NULL::bigint").label("vrank"),
            *lexical,
        )
    return select(
        func.coalesce(vec.c.id, fts.c.id).label("id"),
        vec.c.sim,
        vec.c.vrank,
        *lexical,
    ).select_from(vec.join(fts, vec.c.id == fts.c.id, full=True))
