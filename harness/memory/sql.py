"""Every SQL statement of the MemoryStore, as builders that compile without executing.

Tenant is the first filter of every statement that reads or changes memories.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Delete,
    Insert,
    Select,
    TextClause,
    Update,
    and_,
    bindparam,
    delete,
    func,
    insert,
    literal_column,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert

from harness.memory.schema import approvals, memories, runs, store_meta
from harness.memory.types import Kind, Scope, Status

__all__ = [
    "STOPWORDS",
    "active_for_key",
    "active_with_fingerprint",
    "always_on_rows",
    "approval_audit",
    "by_id",
    "counts_by_tenant_status",
    "delete_by_id",
    "delete_runs_of_workflow",
    "delete_scope",
    "finish_run",
    "history",
    "insert_approval",
    "insert_memory",
    "insert_run",
    "lock_key",
    "meta_get",
    "meta_upsert",
    "missing_embeddings",
    "narrow_other_rows",
    "pending",
    "purge_expired",
    "readable_filter",
    "relevance_scores",
    "rows_by_ids",
    "runs_of",
    "set_embedding",
    "set_status",
    "supersede",
    "tenants_with_expired",
    "unlink",
]

m = memories.c

# Words too common to carry meaning in a question ('simple' config keeps every word).
STOPWORDS: tuple[str, ...] = tuple(
    sorted(
        set(
            [
                "a",
                "an",
                "and",
                "are",
                "as",
                "at",
                "be",
                "been",
                "being",
                "but",
                "by",
                "can",
                "could",
                "did",
                "do",
                "does",
                "doing",
                "done",
                "for",
                "from",
                "had",
                "has",
                "have",
                "having",
                "he",
                "her",
                "hers",
                "him",
                "his",
                "how",
                "i",
                "if",
                "in",
                "into",
                "is",
                "it",
                "its",
                "itself",
                "just",
                "me",
                "more",
                "most",
                "my",
                "no",
                "nor",
                "not",
                "of",
                "off",
                "on",
                "once",
                "only",
                "or",
                "other",
                "our",
                "ours",
                "out",
                "over",
                "own",
                "same",
                "she",
                "should",
                "so",
                "some",
                "such",
                "than",
                "that",
                "the",
                "their",
                "theirs",
                "them",
                "then",
                "there",
                "these",
                "they",
                "this",
                "those",
                "through",
                "to",
                "too",
                "under",
                "until",
                "up",
                "very",
                "was",
                "we",
                "were",
                "what",
                "when",
                "where",
                "which",
                "while",
                "who",
                "whom",
                "why",
                "will",
                "with",
                "would",
                "you",
                "your",
                "yours",
                "yourself",
                "last",
                "time",
                "tell",
                "about",
                "again",
                "also",
                "any",
                "all",
                "each",
                "few",
                "let",
                "lets",
                "get",
                "got",
                "ever",
                "please",
                "us",
                "did",
                "say",
                "said",
                "remember",
                "recall",
                "know",
            ]
        )
    )
)


def lock_key(tenant: str, scope: Scope, scope_id: str, key: str) -> TextClause:
    """Serialise writers of one (tenant, scope, scope_id, key) until the transaction ends."""
    return text("SELECT pg_advisory_xact_lock(hashtextextended(:lk, 0))").bindparams(
        lk=f"{tenant}\x1f{scope.value}\x1f{scope_id}\x1f{key}"
    )


def _scope_is(tenant: str, scope: Scope, scope_id: str) -> ColumnElement[bool]:
    return and_(m.tenant == tenant, m.scope == scope.value, m.scope_id == scope_id)


def active_for_key(tenant: str, scope: Scope, scope_id: str, key: str) -> Select[Any]:
    return (
        select(memories)
        .where(
            _scope_is(tenant, scope, scope_id), m.memory_key == key, m.status == Status.ACTIVE.value
        )
        .with_for_update()
    )


def active_with_fingerprint(
    tenant: str, scope: Scope, scope_id: str, kind: Kind, fingerprint: str
) -> Select[Any]:
    return (
        select(memories)
        .where(
            _scope_is(tenant, scope, scope_id),
            m.fingerprint == fingerprint,
            m.kind == kind.value,
            m.memory_key.is_(None),
            m.status.in_([Status.ACTIVE.value, Status.PENDING_APPROVAL.value]),
        )
        .limit(1)
    )


def insert_memory(row: dict[str, Any]) -> Insert:
    return insert(memories).values(**row).returning(memories)


def supersede(tenant: str, old_id: uuid.UUID, new_id: uuid.UUID) -> Update:
    return (
        update(memories)
        .where(m.tenant == tenant, m.id == old_id)
        .values(status=Status.SUPERSEDED.value, superseded_by=new_id)
    )


def by_id(memory_id: uuid.UUID, *, for_update: bool = False) -> Select[Any]:
    stmt = select(memories).where(m.id == memory_id)
    return stmt.with_for_update() if for_update else stmt


def history(tenant: str, scope: Scope, scope_id: str, key: str) -> Select[Any]:
    return (
        select(memories)
        .where(_scope_is(tenant, scope, scope_id), m.memory_key == key)
        .order_by(m.created_at, m.id)
    )


def pending(tenant: str) -> Select[Any]:
    return (
        select(memories)
        .where(m.tenant == tenant, m.status == Status.PENDING_APPROVAL.value)
        .order_by(m.created_at, m.id)
    )


def set_status(tenant: str, memory_id: uuid.UUID, values: dict[str, Any]) -> Update:
    return update(memories).where(m.tenant == tenant, m.id == memory_id).values(**values)


def insert_approval(row: dict[str, Any]) -> Insert:
    return insert(approvals).values(**row)


def approval_audit(tenant: str) -> Select[Any]:
    a = approvals.c
    return select(approvals).where(a.tenant == tenant).order_by(a.decided_at, a.id)


def delete_by_id(tenant: str, memory_id: uuid.UUID) -> Delete:
    return delete(memories).where(m.tenant == tenant, m.id == memory_id)


def unlink(tenant: str, memory_id: uuid.UUID) -> list[Update]:
    """Clear supersession links that point at a memory about to be forgotten."""
    return [
        update(memories)
        .where(m.tenant == tenant, m.supersedes == memory_id)
        .values(supersedes=None),
        update(memories)
        .where(m.tenant == tenant, m.superseded_by == memory_id)
        .values(superseded_by=None),
    ]


def delete_scope(tenant: str, scope: Scope, scope_id: str) -> Delete:
    return delete(memories).where(_scope_is(tenant, scope, scope_id))


def tenants_with_expired(now: datetime) -> Select[Any]:
    return select(m.tenant).where(m.expires_at <= now).distinct()


def purge_expired(tenant: str, now: datetime) -> Delete:
    return delete(memories).where(m.tenant == tenant, m.expires_at <= now)


def counts_by_tenant_status() -> Select[Any]:
    return (
        select(m.tenant, m.status, func.count().label("n"))
        .group_by(m.tenant, m.status)
        .order_by(m.tenant, m.status)
    )


def missing_embeddings(batch: int, after: uuid.UUID | None, *, all_rows: bool) -> Select[Any]:
    stmt = select(m.id, m.content, m.context).order_by(m.id).limit(batch)
    if not all_rows:
        stmt = stmt.where(m.embedding.is_(None))
    if after is not None:
        stmt = stmt.where(m.id > after)
    return stmt


def set_embedding() -> Update:
    return (
        update(memories).where(m.id == bindparam("b_id")).values(embedding=bindparam("b_embedding"))
    )


def meta_get() -> Select[Any]:
    return select(store_meta.c.name, store_meta.c.value)


def meta_upsert(name: str, value: str, *, overwrite: bool) -> Insert:
    stmt = pg_insert(store_meta).values(name=name, value=value)
    if overwrite:
        return stmt.on_conflict_do_update(index_elements=["name"], set_={"value": value})
    return stmt.on_conflict_do_nothing(index_elements=["name"])


# --- recall -----------------------------------------------------------------------------------

NARROW = (Scope.SESSION.value, Scope.WORKFLOW.value)
ALWAYS_KINDS = (Kind.CONSTRAINT.value, Kind.PREFERENCE.value)
RANKED_KINDS = (Kind.LESSON.value, Kind.FACT.value, Kind.DECISION.value)


def readable_filter(
    tenant: str, user_id: str, workflow_id: str | None, session_id: str | None, now: datetime
) -> ColumnElement[bool]:
    """Active, unexpired items of the tenant in platform ∪ user ∪ workflow ∪ session. Nothing else."""
    scopes = [
        and_(m.scope == Scope.PLATFORM.value, m.scope_id == ""),
        and_(m.scope == Scope.USER.value, m.scope_id == user_id),
    ]
    if workflow_id:
        scopes.append(and_(m.scope == Scope.WORKFLOW.value, m.scope_id == workflow_id))
    if session_id:
        scopes.append(and_(m.scope == Scope.SESSION.value, m.scope_id == session_id))
    return and_(
        m.tenant == tenant,
        m.status == Status.ACTIVE.value,
        or_(m.expires_at.is_(None), m.expires_at > now),
        or_(*scopes),
    )


def always_on_rows(readable: ColumnElement[bool]) -> Select[Any]:
    """Constraints and preferences of every readable scope."""
    return select(memories).where(readable, m.kind.in_(ALWAYS_KINDS))


def narrow_other_rows(readable: ColumnElement[bool], limit: int) -> Select[Any]:
    """Lessons, facts and decisions of the session and workflow scopes, newest first."""
    return (
        select(memories)
        .where(readable, m.scope.in_(NARROW), m.kind.in_(RANKED_KINDS))
        .order_by(m.created_at.desc(), m.id)
        .limit(limit)
    )


def rows_by_ids(tenant: str, ids: Sequence[uuid.UUID]) -> Select[Any]:
    return select(memories).where(m.tenant == tenant, m.id.in_(list(ids)))


def relevance_scores(
    readable: ColumnElement[bool],
    *,
    scopes: Sequence[str],
    query: str,
    query_vector: Sequence[float] | None,
    depth: int,
    exact: bool = True,
) -> Select[Any]:
    """Vector and full-text ranks of ranked-kind items in ``scopes``, full-outer-joined.

    Returns rows (id, sim, vrank, lex, coverage, lrank). The full-text query ORs the query's
    lexemes (minus stop words): ``websearch_to_tsquery`` would AND them and lose paraphrases.
    ``exact`` materialises the filtered rows first, so the vector ranking is an exact scan of
    what the caller may read instead of an ANN index scan filtered afterwards.
    """
    pool_q = select(m.id, m.embedding, m.context_embedding, m.tsv).where(
        readable, m.kind.in_(RANKED_KINDS), m.scope.in_(list(scopes))
    )
    pool = pool_q.cte("pool").prefix_with("MATERIALIZED") if exact else pool_q.cte("pool")
    lexemes = (
        select(func.array_agg(literal_column("lx")))
        .select_from(
            func.unnest(
                func.tsvector_to_array(
                    func.to_tsvector(
                        literal_column("'simple'::regconfig"), bindparam("q_text", query)
                    )
                )
            ).alias("lx")
        )
        .where(literal_column("lx") != func.all_(bindparam("stopwords", list(STOPWORDS))))
        .scalar_subquery()
    )
    q = select(lexemes.label("lexemes")).cte("q")
    tsq = func.to_tsquery(
        literal_column("'simple'::regconfig"),
        func.coalesce(
            func.array_to_string(
                select(func.array_agg(func.quote_literal(literal_column("l"))))
                .select_from(func.unnest(q.c.lexemes).alias("l"))
                .scalar_subquery(),
                " | ",
            ),
            "",
        ),
    )
    # Materialised so the tsquery is built once, not re-evaluated for every row.
    qt = select(tsq.label("tsq"), q.c.lexemes).cte("qt").prefix_with("MATERIALIZED")
    p = pool.c
    lex_rank = func.ts_rank_cd(p.tsv, qt.c.tsq)
    coverage_sq = (
        select(func.count())
        .select_from(func.unnest(qt.c.lexemes).alias("l2"))
        .where(
            p.tsv.op("@@")(
                func.to_tsquery(
                    literal_column("'simple'::regconfig"), func.quote_literal(literal_column("l2"))
                )
            )
        )
        .scalar_subquery()
    )
    fts = (
        select(
            p.id.label("id"),
            lex_rank.label("lex"),
            (coverage_sq * 1.0 / func.greatest(func.cardinality(qt.c.lexemes), 1)).label(
                "coverage"
            ),
            func.row_number().over(order_by=(lex_rank.desc(), p.id)).label("lrank"),
        )
        .select_from(pool.join(qt, literal_column("true")))
        .where(p.tsv.op("@@")(qt.c.tsq))
        .order_by(lex_rank.desc(), p.id)
        .limit(depth)
        .cte("fts")
    )
    if query_vector is None:
        return select(
            fts.c.id,
            literal_column("NULL::float8").label("sim"),
            literal_column("NULL::bigint").label("vrank"),
            fts.c.lex,
            fts.c.coverage,
            fts.c.lrank,
        )
    qv = bindparam("qv", list(query_vector), type_=memories.c.embedding.type)
    # A lesson also matches through the task that taught it (its context's own vector).
    dist = func.least(
        p.embedding.cosine_distance(qv),
        func.coalesce(p.context_embedding.cosine_distance(qv), 2.0),
    )
    vec = (
        select(
            p.id.label("id"),
            (1 - dist).label("sim"),
            func.row_number().over(order_by=(dist, p.id)).label("vrank"),
        )
        .where(p.embedding.is_not(None))
        .order_by(dist, p.id)
        .limit(depth)
        .cte("vec")
    )
    return select(
        func.coalesce(vec.c.id, fts.c.id).label("id"),
        vec.c.sim,
        vec.c.vrank,
        fts.c.lex,
        fts.c.coverage,
        fts.c.lrank,
    ).select_from(vec.join(fts, vec.c.id == fts.c.id, full=True))


# --- run records ------------------------------------------------------------------------------


def insert_run(row: dict[str, Any]) -> Insert:
    return insert(runs).values(**row)


def finish_run(tenant: str, run_id: str, values: dict[str, Any]) -> Update:
    return update(runs).where(runs.c.tenant == tenant, runs.c.id == run_id).values(**values)


def runs_of(tenant: str, workflow_id: str | None = None) -> Select[Any]:
    stmt = select(runs).where(runs.c.tenant == tenant)
    if workflow_id is not None:
        stmt = stmt.where(runs.c.workflow_id == workflow_id)
    return stmt.order_by(runs.c.started_at, runs.c.id)


def delete_runs_of_workflow(tenant: str, workflow_id: str) -> Delete:
    return delete(runs).where(runs.c.tenant == tenant, runs.c.workflow_id == workflow_id)
