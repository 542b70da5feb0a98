"""Statements of recall: the readable set, relevance ranking, the pool probe."""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Float,
    Integer,
    Select,
    String,
    Text,
    TextClause,
    and_,
    bindparam,
    case,
    cast,
    func,
    literal,
    literal_column,
    or_,
    select,
    text,
    type_coerce,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, UUID, aggregate_order_by

from harness.memory.domain.types import Kind, Scope, Status
from harness.memory.store.sql.columns import MEMORY_COLUMNS, m
from harness.memory.store.sql.schema import lesson_events, lesson_scores, memories

__all__ = [
    "ALWAYS_KINDS",
    "CONTEXT_PENALTY",
    "NARROW",
    "OUTCOME_COLUMNS",
    "RANKED_KINDS",
    "STOPWORDS",
    "hnsw_settings",
    "pool_probe",
    "readable_filter",
    "readable_params",
    "recall_rows",
    "relevance_scores",
]

# Words too common to carry meaning in a question (the 'simple' configuration keeps every
# word, and the English one misses question words like "last" or "tell").
STOPWORDS: tuple[str, ...] = (
    "a", "an", "and", "are", "as", "at", "be", "been", "being", "but", "by", "can", "could",
    "did", "do", "does", "doing", "done", "for", "from", "had", "has", "have", "having", "he",
    "her", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "me", "more", "most", "my", "no", "nor", "not", "of", "off", "on", "once", "only",
    "or", "other", "our", "ours", "out", "over", "own", "same", "she", "should", "so", "some",
    "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these", "they",
    "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we",
    "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
    "would", "you", "your", "yours", "yourself", "last", "time", "tell", "about", "again",
    "also", "any", "all", "each", "few", "let", "lets", "get", "got", "ever", "please", "us",
    "did", "say", "said", "remember", "recall", "know",
)  # fmt: skip

#: Added to a context vector's cosine distance: a match through the task that taught a lesson
#: (or a neighbouring turn) counts, but a little less than a match through the content itself.
#: Measured on LoCoMo: without it the context vectors cost dense retrieval 0.06 any@10.
CONTEXT_PENALTY = 0.1

_CONSTANT = re.compile("[a-z_]+")
NARROW = (Scope.SESSION.value, Scope.WORKFLOW.value)
ALWAYS_KINDS = (Kind.CONSTRAINT.value, Kind.PREFERENCE.value)
RANKED_KINDS = (Kind.LESSON.value, Kind.FACT.value, Kind.DECISION.value)


def _one_of(column: Any, values: tuple[str, ...]) -> ColumnElement[bool]:
    """``column IN ('a', 'b')`` with the values written into the statement: they are this
    package's constants (kinds, scopes), and an expanding parameter would make SQLAlchemy
    rewrite the statement's text at every execution."""
    if not all(_CONSTANT.fullmatch(v) for v in values):
        raise ValueError(f"not a constant of this package: {values!r}")
    listed = ", ".join(f"'{v}'" for v in values)
    return column.op("IN", is_comparison=True)(literal_column(f"({listed})"))  # type: ignore[no-any-return]


def readable_filter(*, has_workflow: bool, has_session: bool) -> ColumnElement[bool]:
    """Active, unexpired items of the tenant in platform ∪ user ∪ workflow ∪ session. Nothing else.

    Values come from :func:`readable_params`; the shape depends only on which scopes the
    caller has, so each shape's statements are built (and compiled) once.
    """
    scopes = [
        and_(m.scope == Scope.PLATFORM.value, m.scope_id == ""),
        and_(m.scope == Scope.USER.value, m.scope_id == bindparam("r_user", type_=String)),
    ]
    if has_workflow:
        scopes.append(
            and_(
                m.scope == Scope.WORKFLOW.value, m.scope_id == bindparam("r_workflow", type_=String)
            )
        )
    if has_session:
        scopes.append(
            and_(m.scope == Scope.SESSION.value, m.scope_id == bindparam("r_session", type_=String))
        )
    return and_(
        m.tenant == bindparam("r_tenant", type_=String),
        m.status == Status.ACTIVE.value,
        or_(
            m.expires_at.is_(None), m.expires_at > bindparam("r_now", type_=DateTime(timezone=True))
        ),
        or_(*scopes),
    )


def readable_params(
    tenant: str, user_id: str, workflow_id: str | None, session_id: str | None, now: datetime
) -> dict[str, Any]:
    """Bind values for :func:`readable_filter`."""
    params: dict[str, Any] = {"r_tenant": tenant, "r_user": user_id, "r_now": now}
    if workflow_id:
        params["r_workflow"] = workflow_id
    if session_id:
        params["r_session"] = session_id
    return params


@lru_cache(maxsize=16)
def recall_rows(*, has_workflow: bool, has_session: bool) -> Select[Any]:
    """One round trip for every row assembly needs, labelled by ``src``: all readable
    constraints and preferences ("always"), the newest ``narrow_limit`` lessons, facts and
    decisions of the session and workflow ("narrow"), and the relevance winners ``ids``."""
    readable = readable_filter(has_workflow=has_workflow, has_session=has_session)
    always = select(*MEMORY_COLUMNS, literal("always").label("src")).where(
        readable, _one_of(m.kind, ALWAYS_KINDS)
    )
    narrow_q = (
        select(*MEMORY_COLUMNS)
        .where(readable, _one_of(m.scope, NARROW), _one_of(m.kind, RANKED_KINDS))
        .order_by(m.created_at.desc(), m.id)
        .limit(bindparam("narrow_limit", type_=Integer))
        .subquery("narrow")
    )
    narrow = select(*narrow_q.c, literal("narrow").label("src"))
    ranked = select(*MEMORY_COLUMNS, literal("ranked").label("src")).where(
        readable, m.id == func.any(bindparam("ids", type_=ARRAY(UUID(as_uuid=True))))
    )
    union = union_all(always, narrow, ranked).subquery("recall_rows")
    return select(union)


def _query_lexemes() -> Any:
    """The query's lexemes, minus stop words: its words as written (``simple``, so ids like
    MT-4471 match) and their English stems (so "painting" finds "painted")."""
    q_text = bindparam("q_text", type_=Text)
    both = func.to_tsvector(literal_column("'simple'::regconfig"), q_text).op("||")(
        func.to_tsvector(literal_column("'english'::regconfig"), q_text)
    )
    return (
        select(func.array_agg(literal_column("lx")))
        .select_from(func.unnest(func.tsvector_to_array(both)).alias("lx"))
        .where(literal_column("lx") != func.all_(bindparam("stopwords", type_=ARRAY(Text))))
        .scalar_subquery()
    )


@lru_cache(maxsize=64)
def relevance_scores(
    *,
    has_workflow: bool,
    has_session: bool,
    scopes: tuple[str, ...],
    with_vector: bool,
    exact: bool = True,
    bounded_lexical: bool = False,
) -> Select[Any]:
    """Vector and full-text ranks of ranked-kind items in ``scopes``, full-outer-joined.

    Returns rows (id, scope, kind, fingerprint, sim, content_sim, context_sim, negative_sim,
    vrank, lex, coverage, idf_coverage, max_idf, lrank, and the lesson's outcome counts
    :data:`OUTCOME_COLUMNS` with its ``last_seen``, and its scale: ``scale_n``, ``scale_mean``,
    ``scale_m2``). A lesson's context similarity is its best
    over the memory's own context and its positive events; ``negative_sim`` its best over its
    negative (misled) contexts. The full-text query ORs the query's
    lexemes (minus stop words): ``websearch_to_tsquery`` would AND them and lose paraphrases.
    ``exact`` ranks by an exact distance over the rows the caller may read (a top-N sort of
    the filtered rows); otherwise the vector ranking is an HNSW index scan with the readable
    filter applied during the scan (run it with :func:`hnsw_settings`, or a selective filter
    can starve it). ``bounded_lexical`` (for large pools, with vectors) ranks full text only
    over the vector candidates, instead of every row holding any query word: ranking cost
    stays bounded however many rows match.

    Binds: the readable ones (:func:`readable_params`), ``q_text``, ``stopwords``, ``depth``
    and, with vectors, ``qv``.
    """
    readable = readable_filter(has_workflow=has_workflow, has_session=has_session)
    in_pool = and_(readable, _one_of(m.kind, RANKED_KINDS), _one_of(m.scope, scopes))
    depth = bindparam("depth", type_=Integer)
    q = select(_query_lexemes().label("lexemes")).cte("q").prefix_with("MATERIALIZED")

    def joined(op: str) -> Any:
        quoted = (
            select(func.array_agg(func.quote_literal(literal_column("l"))))
            .select_from(func.unnest(q.c.lexemes).alias("l"))
            .scalar_subquery()
        )
        return func.to_tsquery(
            literal_column("'simple'::regconfig"),
            func.coalesce(func.array_to_string(quoted, f" {op} "), ""),
        )

    # Materialised so the tsqueries are built once, not re-evaluated for every row.
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
            joined("|").label("tsq"),
            q.c.lexemes,
            one_each.label("tsqs"),
        )
        .cte("qt")
        .prefix_with("MATERIALIZED")
    )
    qv = bindparam("qv", type_=memories.c.embedding.type)
    pool = None
    if exact:
        # A small pool (exact mode): one pass over its rows through the tenant-first index
        # yields both the distances and the words; the GIN index would instead visit every
        # row of the tenant holding any query word, most of them other users'.
        columns: list[Any] = [m.id, m.scope, m.kind, m.fingerprint, m.tsv]
        if with_vector:
            columns += [
                m.embedding.cosine_distance(qv).label("cd"),
                func.least(
                    m.context_embedding.cosine_distance(qv),
                    _event_distance(m.kind, m.id, qv, "positive", m.tenant),
                ).label("xd"),
                _event_distance(m.kind, m.id, qv, "negative", m.tenant).label("nd"),
            ]
        # OFFSET 0 keeps the planner from inlining this level: each distance is computed once
        # per row, not once per expression that reads it.
        rows = select(*columns).where(in_pool).offset(0).subquery("dist")
        pool_columns = [rows.c.id, rows.c.scope, rows.c.kind, rows.c.fingerprint, rows.c.tsv]
        if with_vector:
            pool_columns += [*_exact_distance_columns(rows.c.cd, rows.c.xd), rows.c.nd]
        pool = select(*pool_columns).cte("pool").prefix_with("MATERIALIZED")
    vec = None
    if with_vector:
        if pool is not None:
            top = (
                select(
                    pool.c.id,
                    pool.c.scope,
                    pool.c.kind,
                    pool.c.fingerprint,
                    pool.c.d,
                    pool.c.raw,
                    pool.c.cd,
                    pool.c.xd,
                    pool.c.nd,
                )
                .where(pool.c.d.is_not(None))
                .order_by(pool.c.d, pool.c.fingerprint, pool.c.id)
                .limit(depth)
                .subquery("top")
            )
        else:
            top = _hnsw_distances(in_pool, qv, depth)
        vec = select(
            top.c.id,
            top.c.scope,
            top.c.kind,
            top.c.fingerprint,
            (1 - top.c.raw).label("sim"),
            (1 - top.c.cd).label("content_sim"),
            (1 - top.c.xd).label("context_sim"),
            (1 - top.c.nd).label("negative_sim"),
            # Equal distances share a rank: the rank feature must not depend on random ids.
            func.rank().over(order_by=top.c.d).label("vrank"),
        ).cte("vec")
    if bounded_lexical and vec is not None:
        # Full text over the vector candidates only. Rows holding every query word were once
        # added through the GIN index, but row-level security keeps the planner from using it
        # (``@@`` is not leakproof): finding them scanned the whole pool, 100-170 ms at 100k.
        candidates = select(func.array_agg(vec.c.id)).scalar_subquery()
        # The cast makes ANY see one array value, not a one-row subquery of arrays.
        source = (
            select(m.id, m.scope, m.kind, m.fingerprint, m.tsv)
            .where(in_pool, m.id == func.any(cast(candidates, ARRAY(UUID(as_uuid=True)))))
            .cte("lex_source")
        )
        n_docs: Any = None  # the matched set itself
    else:
        assert pool is not None
        source = pool
        n_docs = select(func.count()).select_from(pool).scalar_subquery()
    fts = _idf_lexical_ranks(qt, source, n_docs, depth)
    if vec is None:
        outcomes = _outcome_counts(fts.c.id, fts.c.kind)
        scale = _lesson_scale(fts.c.id, fts.c.kind)
        return select(
            fts.c.id,
            fts.c.scope,
            fts.c.kind,
            fts.c.fingerprint,
            literal_column("NULL::float8").label("sim"),
            literal_column("NULL::float8").label("content_sim"),
            literal_column("NULL::float8").label("context_sim"),
            literal_column("NULL::float8").label("negative_sim"),
            literal_column("NULL::bigint").label("vrank"),
            *_lexical_columns(fts),
            *_outcome_columns(outcomes),
            *scale.c,
        ).select_from(
            fts.outerjoin(outcomes, literal_column("true")).outerjoin(scale, literal_column("true"))
        )
    the_id = func.coalesce(vec.c.id, fts.c.id)
    the_kind = func.coalesce(vec.c.kind, fts.c.kind)
    outcomes = _outcome_counts(the_id, the_kind)
    scale = _lesson_scale(the_id, the_kind)
    return select(
        the_id.label("id"),
        func.coalesce(vec.c.scope, fts.c.scope).label("scope"),
        the_kind.label("kind"),
        func.coalesce(vec.c.fingerprint, fts.c.fingerprint).label("fingerprint"),
        vec.c.sim,
        vec.c.content_sim,
        vec.c.context_sim,
        vec.c.negative_sim,
        vec.c.vrank,
        *_lexical_columns(fts),
        *_outcome_columns(outcomes),
        *scale.c,
    ).select_from(
        vec.join(fts, vec.c.id == fts.c.id, full=True)
        .outerjoin(outcomes, literal_column("true"))
        .outerjoin(scale, literal_column("true"))
    )


#: The events whose counts recall reads (what later runs did with a lesson).
OUTCOME_COLUMNS = ("clear", "repeated", "misled", "taught")


def _outcome_counts(memory_id: Any, kind: Any) -> Any:
    """A lesson's outcome counts and last activity (a lateral subquery; no row is read for
    other kinds: the kind test is a one-time filter)."""
    e = lesson_events.c
    return (
        select(
            *(func.count().filter(e.event == name).label(name) for name in OUTCOME_COLUMNS),
            func.max(e.at).filter(e.event != "retired").label("last_seen"),
        )
        .where(
            e.tenant == bindparam("r_tenant", type_=String),
            e.memory_id == memory_id,
            kind == Kind.LESSON.value,
        )
        .correlate_except(lesson_events)
        .lateral("outcomes")
    )


def _lesson_scale(memory_id: Any, kind: Any) -> Any:
    """A lesson's running statistics of its content's cosine to its scope's tasks (a lateral
    subquery; nothing is read for other kinds)."""
    sc = lesson_scores.c
    return (
        select(sc.n.label("scale_n"), sc.mean.label("scale_mean"), sc.m2.label("scale_m2"))
        .where(
            sc.tenant == bindparam("r_tenant", type_=String),
            sc.memory_id == memory_id,
            kind == Kind.LESSON.value,
        )
        .correlate_except(lesson_scores)
        .lateral("scale")
    )


def _outcome_columns(outcomes: Any) -> list[Any]:
    return [*(outcomes.c[name] for name in OUTCOME_COLUMNS), outcomes.c.last_seen]


def _event_distance(kind: Any, memory_id: Any, qv: Any, polarity: str, tenant: Any = None) -> Any:
    """The nearest cosine distance of a lesson's ``polarity`` contexts to the query (NULL for
    other kinds, and for a lesson without such contexts). ``tenant``: the outer row's tenant
    column (a co-located join, also pinned to the caller's tenant: the same rows, and Citus then
    sees every relation of the query on one tenant and routes it to one shard), else the
    caller's."""
    e = lesson_events.c
    caller = e.tenant == bindparam("r_tenant", type_=String)
    nearest = (
        select(func.min(e.embedding.cosine_distance(qv)))
        .where(
            caller if tenant is None else and_(e.tenant == tenant, caller),
            e.memory_id == memory_id,
            e.polarity == polarity,
        )
        .correlate_except(lesson_events)
        .scalar_subquery()
    )
    return case((kind == Kind.LESSON.value, nearest), else_=None)


def _lexical_columns(fts: Any) -> list[Any]:
    return [
        fts.c.lex,
        fts.c.coverage,
        fts.c.idf_coverage,
        fts.c.max_idf,
        fts.c.lrank,
    ]


def _idf_lexical_ranks(qt: Any, source: Any, n_docs: Any, depth: Any) -> Any:
    """Rank the ``source`` rows holding any query word by the summed IDF of the query words
    they hold, with the evidence the relevance judge reads.

    A binary BM25 (no term-frequency saturation or length normalisation): PostgreSQL's
    ``ts_rank`` has no IDF at all, so a common word weighed as much as a rare name. Document
    frequencies come from the matched rows themselves (a row without any query word cannot
    hold it); N is ``n_docs``, or the matched set when that is None. Besides ``lex`` (the sum)
    and ``coverage`` (share of the query's words held), each row gets ``idf_coverage`` (the
    share of the query's total IDF it holds; a query word no row holds weighs most) and
    ``max_idf`` (the IDF of the rarest query word it holds, over the IDF a word held by no
    row would have): an exact match on a rare identifier is strong evidence, "the" is none.
    """
    src = source.c
    each = func.unnest(qt.c.tsqs).table_valued("tq", with_ordinality="i").render_derived(name="u")
    hits = select(func.array_agg(each.c.i)).where(src.tsv.op("@@")(each.c.tq)).scalar_subquery()
    matched = (
        select(
            src.id.label("id"),
            src.scope.label("scope"),
            src.kind.label("kind"),
            src.fingerprint.label("fingerprint"),
            hits.label("hits"),
        )
        .select_from(source.join(qt, literal_column("true")))
        .where(src.tsv.op("@@")(qt.c.tsq))
        .cte("matched")
        .prefix_with("MATERIALIZED")
    )
    if n_docs is None:
        n_docs = select(func.count()).select_from(matched).scalar_subquery()
    hit = func.unnest(matched.c.hits).table_valued("i").render_derived(name="h")
    df = (
        select(hit.c.i.label("i"), func.count().label("df"))
        .select_from(matched.join(hit, literal_column("true")))
        .group_by(hit.c.i)
        .subquery("df")
    )
    # Query word i's weight is w[i] (NULL when no row holds it), so each row's sums are a
    # few array reads instead of a join and a grouping per row.
    docs = select(n_docs.label("n")).cte("docs").prefix_with("MATERIALIZED")
    n_lexemes = func.greatest(func.cardinality(qt.c.lexemes), 1)
    every = func.generate_series(1, n_lexemes).table_valued("i").render_derived(name="g")
    weight = func.ln(1.0 + (docs.c.n - df.c.df + 0.5) / (df.c.df + 0.5), type_=Float)
    # The IDF of a query word no row holds (df = 0): the most a word can weigh.
    unseen_w = func.ln(1.0 + (docs.c.n + 0.5) / 0.5, type_=Float)
    per_word = (
        select(
            func.array_agg(aggregate_order_by(weight, every.c.i)).label("w"),
            func.sum(func.coalesce(weight, unseen_w)).label("idf_total"),
        )
        .select_from(every.outerjoin(df, df.c.i == every.c.i))
        .lateral("per_word")
    )
    weights = (
        select(
            type_coerce(per_word.c.w, ARRAY(Float)).label("w"),
            per_word.c.idf_total,
            unseen_w.label("unseen_w"),
            n_lexemes.label("n_lexemes"),
        )
        .select_from(qt.join(docs, literal_column("true")).join(per_word, literal_column("true")))
        .cte("weights")
        .prefix_with("MATERIALIZED")
    )
    held = func.unnest(matched.c.hits).table_valued("i").render_derived(name="h2")
    held_w = weights.c.w[held.c.i]
    sums = (
        select(func.sum(held_w).label("lex"), func.max(held_w).label("top_w"))
        .select_from(held)
        .lateral("sums")
    )
    scores = (
        select(
            matched.c.id,
            matched.c.scope,
            matched.c.kind,
            matched.c.fingerprint,
            sums.c.lex,
            _ratio(cast(func.cardinality(matched.c.hits), Float), weights.c.n_lexemes).label(
                "coverage"
            ),
            _ratio(sums.c.lex, func.greatest(weights.c.idf_total, 1e-9)).label("idf_coverage"),
            _ratio(sums.c.top_w, func.greatest(weights.c.unseen_w, 1e-9)).label("max_idf"),
        )
        .select_from(
            matched.join(weights, literal_column("true")).join(sums, literal_column("true"))
        )
        # Equal sums are cut by content (the same data cuts the same way in any tenant).
        .order_by(sums.c.lex.desc(), matched.c.fingerprint, matched.c.id)
        .limit(depth)
        .subquery("scores")
    )
    return select(
        scores.c.id,
        scores.c.scope,
        scores.c.kind,
        scores.c.fingerprint,
        scores.c.lex,
        scores.c.coverage,
        scores.c.idf_coverage,
        scores.c.max_idf,
        # Equal sums share a rank: the rank feature must not depend on random ids.
        func.rank().over(order_by=scores.c.lex.desc()).label("lrank"),
    ).cte("fts")


def _ratio(numerator: Any, denominator: Any) -> Any:
    """``numerator / denominator`` in double precision (SQLAlchemy's ``/`` would cast the
    denominator to NUMERIC, and every score would come back a ``Decimal``)."""
    return numerator.op("/", return_type=Float)(denominator)


def _exact_distance_columns(content_d: Any, context_d: Any) -> list[Any]:
    """``d`` orders (context matches penalised); ``raw`` is the plain nearest distance of
    content or context; ``cd`` and ``xd`` are the content's and the context's own distances
    (``xd`` NULL without a context). All NULL without a vector (``content_d`` is then NULL)."""
    # A lesson also matches through the task that taught it (its context's own vector).
    missing = content_d.is_(None)
    d = case((missing, None), else_=func.least(content_d, context_d + CONTEXT_PENALTY))
    raw = case((missing, None), else_=func.least(content_d, context_d))
    return [
        d.label("d"),
        raw.label("raw"),
        content_d.label("cd"),
        case((missing, None), else_=context_d).label("xd"),
    ]


def _hnsw_distances(in_pool: ColumnElement[bool], qv: Any, depth: Any) -> Any:
    content_d = m.embedding.cosine_distance(qv)
    context_d = m.context_embedding.cosine_distance(qv)
    common = [
        m.id.label("id"),
        m.scope.label("scope"),
        m.kind.label("kind"),
        m.fingerprint.label("fingerprint"),
    ]
    by_content = (
        select(
            *common,
            content_d.label("d"),
            func.least(content_d, context_d).label("raw"),
            content_d.label("cd"),
            context_d.label("xd"),
        )
        .where(in_pool, m.embedding.is_not(None))
        .order_by(content_d)
        .limit(depth)
    )
    by_context = (
        select(
            *common,
            (context_d + CONTEXT_PENALTY).label("d"),
            func.least(content_d, context_d).label("raw"),
            content_d.label("cd"),
            context_d.label("xd"),
        )
        .where(in_pool, m.context_embedding.is_not(None))
        .order_by(context_d)
        .limit(depth)
    )
    both = union_all(by_content, by_context).subquery("both_vec")
    best = (
        select(
            both.c.id,
            func.min(both.c.scope).label("scope"),
            func.min(both.c.kind).label("kind"),
            func.min(both.c.fingerprint).label("fingerprint"),
            func.min(both.c.d).label("d"),
            func.min(both.c.raw).label("raw"),
            func.min(both.c.cd).label("cd"),
            func.min(both.c.xd).label("xd"),
        )
        .group_by(both.c.id)
        .subquery("best")
    )
    # A lesson's other contexts (its events) are matched for the index's candidates only.
    with_events = select(
        best,
        _event_distance(best.c.kind, best.c.id, qv, "positive").label("ed"),
        _event_distance(best.c.kind, best.c.id, qv, "negative").label("nd"),
    ).subquery("with_events")
    w = with_events.c
    return (
        select(
            w.id,
            w.scope,
            w.kind,
            w.fingerprint,
            func.least(w.d, w.ed + CONTEXT_PENALTY).label("d"),
            func.least(w.raw, w.ed).label("raw"),
            w.cd,
            func.least(w.xd, w.ed).label("xd"),
            w.nd,
        )
        .order_by(func.least(w.d, w.ed + CONTEXT_PENALTY), w.fingerprint, w.id)
        .limit(depth)
        .subquery("top")
    )


@lru_cache(maxsize=16)
def pool_probe(*, has_workflow: bool, has_session: bool) -> Select[Any]:
    """How many lessons, facts and decisions the caller may read, counted up to ``probe_limit``
    (a bounded index scan: it only has to tell small pools from large ones)."""
    readable = readable_filter(has_workflow=has_workflow, has_session=has_session)
    bounded = (
        select(literal(1))
        .where(readable, _one_of(m.kind, RANKED_KINDS))
        .limit(bindparam("probe_limit", type_=Integer))
        .subquery("bounded")
    )
    return select(func.count()).select_from(bounded)


def hnsw_settings(ef_search: int) -> TextClause:
    """Per-transaction HNSW settings in one round trip: iterative scans keep filtered ANN
    queries filled, and the caller has measured the pool as large, so a sequential scan is
    never wanted (the planner's HNSW cost grows with ``ef_search`` and it would pick one).

    ``SET LOCAL`` (not ``set_config``) so that Citus replays them on the shards' workers
    (``sql/security.py``); three commands in one simple-protocol message (no parameters:
    ``ef_search`` is an int rendered here)."""
    return text(
        "SET LOCAL hnsw.iterative_scan = relaxed_order; "
        f"SET LOCAL hnsw.ef_search = {int(ef_search)}; SET LOCAL enable_seqscan = off"
    ).execution_options(no_parameters=True)
