"""Vector bookkeeping: which model built the store's vectors, their dimension, reembed."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

from harness.errors import EmbeddingModelMismatch, StoreError
from harness.memory.domain.lessons import lesson_content
from harness.memory.embedding.embedder import Embedder
from harness.memory.store import sql
from harness.memory.store.executors import Blocking, Op

__all__ = [
    "META_DIM",
    "META_MODEL",
    "Pairs",
    "check_model",
    "claim_model",
    "embed_or_none",
    "embed_pairs",
    "ensure_dimension",
    "record_model",
    "reembed_batch",
    "reembed_prepare",
    "require_embedder",
    "store_embeddings",
    "stored_model_op",
]

log = logging.getLogger(__name__)

META_MODEL = "embedding_model"
META_DIM = "embedding_dim"

Pairs = tuple[list[list[float] | None], list[list[float] | None]]


def stored_model_op() -> Op[tuple[str | None, int | None]]:
    """The (model, dimension) recorded as having built this store's vectors."""
    meta = {name: value for name, value in (yield sql.meta_get())}
    dim = meta.get(META_DIM)
    return meta.get(META_MODEL), int(dim) if dim else None


def check_model(embedder: Embedder) -> Op[None]:
    """Raise ``EmbeddingModelMismatch`` when ``embedder`` is not the recorded model."""
    stored, stored_dim = yield from stored_model_op()
    if stored is not None and (stored != embedder.model_name or stored_dim != embedder.dim):
        raise EmbeddingModelMismatch(stored, stored_dim or 0, embedder.model_name, embedder.dim)


def ensure_dimension(dim: int) -> Op[None]:
    """Re-declare the vector columns when they are not ``vector(dim)`` (clears vectors)."""
    if (yield sql.vector_column_type()).scalar_one() != f"vector({dim})":
        # Only the tables' owner may re-declare a column: the login, for these statements.
        role = (yield sql.current_role()).scalar_one()
        yield sql.reset_local_role()
        for statement in sql.retype_vectors(dim):
            _ = yield statement  # one round trip each
        yield sql.set_local_role(role)


def record_model(embedder: Embedder, *, overwrite: bool = False) -> Op[None]:
    """Record ``embedder`` as the store's model (first use, or a reembed). Clears vectors when
    the dimension changes; callers hold :func:`sql.lock_model` exclusively."""
    yield from ensure_dimension(embedder.dim)
    yield sql.meta_upsert(META_MODEL, embedder.model_name, overwrite=overwrite)
    yield sql.meta_upsert(META_DIM, str(embedder.dim), overwrite=overwrite)


def claim_model(embedder: Embedder) -> Op[None]:
    """Write path: vectors of ``embedder`` may be stored in this transaction.

    Holds the model lock shared until the transaction ends, so a reembed cannot record another
    model between this check and the insert. Records ``embedder`` on the store's first vector
    write; never re-declares the column once a model is recorded.

    Raises:
        EmbeddingModelMismatch: another model is recorded (e.g. another process re-embedded).
    """
    yield sql.lock_model(shared=True)
    stored, _ = yield from stored_model_op()
    if stored is None:
        # First vector write: serialise first writers; the winner records its model.
        yield sql.lock_name("harness.embedding_model.first")
        stored, _ = yield from stored_model_op()
        if stored is None:
            yield from record_model(embedder)
            return
    yield from check_model(embedder)


def embed_pairs(
    embedder: Embedder, contents: Sequence[str], contexts: Sequence[str | None]
) -> Pairs:
    """Vectors for contents and (where present) contexts, in one batch."""
    with_context = [i for i, c in enumerate(contexts) if c]
    vectors = embedder.embed(list(contents) + [contexts[i] or "" for i in with_context])
    content_vecs: list[list[float] | None] = list(vectors[: len(contents)])
    context_vecs: list[list[float] | None] = [None] * len(contents)
    for i, vec in zip(with_context, vectors[len(contents) :], strict=True):
        context_vecs[i] = vec
    return content_vecs, context_vecs


def embed_or_none(
    embedder: Embedder | None, contents: Sequence[str], contexts: Sequence[str | None]
) -> Pairs | None:
    """Like :func:`embed_pairs`, but None when lexical-only or when the model fails: the
    write still lands and ``reembed --missing-only`` fills the vectors later."""
    if embedder is None or not contents:
        return None
    try:
        return embed_pairs(embedder, contents, contexts)
    except Exception as exc:
        log.warning(
            "embedding failed (%s); storing without vectors, run `harness-memory "
            "reembed --missing-only` later",
            exc,
        )
        return None


def reembed_prepare(embedder: Embedder, *, all_rows: bool) -> Op[tuple[bool, int]]:
    """Record ``embedder`` as the store's model (as the owner, model lock held exclusively) and
    count the rows to embed. Returns (all_rows, total).

    When the model changes, every old vector is cleared in the same transaction as the new
    model is recorded: the store never holds a vector of another model than the recorded one,
    a NULL is exactly what is still to embed, and a reembed stopped midway is finished by
    ``reembed --missing-only`` (or another reembed). Rows read by their words meanwhile.
    """
    # Recorded first, so a process still writing with the old model is refused from now on
    # instead of mixing its vectors into the rebuilt ones.
    yield sql.lock_model(shared=False)
    stored, stored_dim = yield from stored_model_op()
    if stored is not None and (stored != embedder.model_name or stored_dim != embedder.dim):
        for statement in sql.clear_vectors():
            _ = yield statement
        all_rows = False  # every row is missing its vector now
    yield from record_model(embedder, overwrite=True)
    total = int((yield sql.count_memories(missing_vector_only=not all_rows)).scalar_one())
    return all_rows, total


def reembed_batch(batch_size: int, after: uuid.UUID | None, *, all_rows: bool) -> Op[list[Any]]:
    """The next rows to embed, in id order after ``after``."""
    return list((yield sql.missing_embeddings(batch_size, after, all_rows=all_rows)).all())


def store_embeddings(rows: Sequence[Any], pairs: Pairs) -> Op[None]:
    """Write the vectors of ``rows`` (one statement, executemany)."""
    content_vecs, context_vecs = pairs
    yield (
        sql.set_embedding(),
        [
            {"b_tenant": r.tenant, "b_id": r.id, "b_embedding": v, "b_context_embedding": cv}
            for r, v, cv in zip(rows, content_vecs, context_vecs, strict=True)
        ],
    )


def reembed_events_batch(
    embedder: Embedder, batch_size: int, after: tuple[str, int] | None, *, all_rows: bool
) -> Op[tuple[str, int]]:
    """Embed the next batch of lesson events' tasks and feedback; returns the last (tenant, id)
    done, or ``("", -1)`` when none was left."""
    rows = list((yield sql.events_to_embed(batch_size, after, all_rows=all_rows)).all())
    if not rows:
        return ("", -1)
    tasks = [r.task if r.event in sql.CONTEXT_EVENTS else None for r in rows]
    wordings = [
        lesson_content(r.feedback) if r.event in sql.WORDING_EVENTS and r.feedback else None
        for r in rows
    ]
    texts = [t for t in tasks + wordings if t is not None]
    vecs = iter((yield Blocking(lambda: embedder.embed(texts))) if texts else [])
    task_vecs = [next(vecs) if t is not None else None for t in tasks]
    wording_vecs = [next(vecs) if w is not None else None for w in wordings]
    yield (
        sql.set_event_vectors(),
        [
            {"b_tenant": r.tenant, "b_id": r.id, "b_embedding": tv, "b_feedback_embedding": wv}
            for r, tv, wv in zip(rows, task_vecs, wording_vecs, strict=True)
        ],
    )
    return (rows[-1].tenant, rows[-1].id)


def require_embedder(embedder: Embedder | None, lexical_reason: str | None) -> Embedder:
    """The embedder reembed needs, or ``StoreError`` saying why there is none."""
    if embedder is None:
        raise StoreError(
            f"reembed needs an embedding model; none could be loaded ({lexical_reason})"
        )
    return embedder
