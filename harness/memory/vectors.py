"""Vector bookkeeping: which model built the store's vectors, their dimension, reembed."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

from harness.errors import EmbeddingModelMismatch, StoreError
from harness.memory import sql
from harness.memory.embedder import Embedder

if TYPE_CHECKING:
    from harness.memory.store import MemoryStore

__all__ = [
    "META_DIM",
    "META_MODEL",
    "Pairs",
    "check_model",
    "claim_model",
    "embed_or_none",
    "embed_pairs",
    "record_model",
    "reembed",
    "stored_model",
]

log = logging.getLogger(__name__)

META_MODEL = "embedding_model"
META_DIM = "embedding_dim"

Pairs = tuple[list[list[float] | None], list[list[float] | None]]


def stored_model(conn: Connection) -> tuple[str | None, int | None]:
    """The (model, dimension) recorded as having built this store's vectors."""
    meta = {name: value for name, value in conn.execute(sql.meta_get())}
    dim = meta.get(META_DIM)
    return meta.get(META_MODEL), int(dim) if dim else None


def check_model(conn: Connection, embedder: Embedder) -> None:
    """Raise ``EmbeddingModelMismatch`` when ``embedder`` is not the recorded model."""
    stored, stored_dim = stored_model(conn)
    if stored is not None and (stored != embedder.model_name or stored_dim != embedder.dim):
        raise EmbeddingModelMismatch(stored, stored_dim or 0, embedder.model_name, embedder.dim)


def ensure_dimension(conn: Connection, dim: int) -> None:
    """Re-declare the vector columns when they are not ``vector(dim)`` (clears vectors)."""
    if conn.execute(sql.vector_column_type()).scalar_one() != f"vector({dim})":
        # Only the tables' owner may re-declare a column: the login, for these statements.
        role = conn.execute(sql.current_role()).scalar_one()
        conn.execute(sql.reset_local_role())
        for statement in sql.retype_vectors(dim):
            conn.execute(statement)
        conn.execute(sql.set_local_role(role))


def record_model(conn: Connection, embedder: Embedder, *, overwrite: bool = False) -> None:
    """Record ``embedder`` as the store's model (first use, or a reembed). Clears vectors when
    the dimension changes; callers hold :func:`sql.lock_model` exclusively."""
    ensure_dimension(conn, embedder.dim)
    conn.execute(sql.meta_upsert(META_MODEL, embedder.model_name, overwrite=overwrite))
    conn.execute(sql.meta_upsert(META_DIM, str(embedder.dim), overwrite=overwrite))


def claim_model(conn: Connection, embedder: Embedder) -> None:
    """Write path: vectors of ``embedder`` may be stored in this transaction.

    Holds the model lock shared until the transaction ends, so a reembed cannot record another
    model between this check and the insert. Records ``embedder`` on the store's first vector
    write; never re-declares the column once a model is recorded.

    Raises:
        EmbeddingModelMismatch: another model is recorded (e.g. another process re-embedded).
    """
    conn.execute(sql.lock_model(shared=True))
    stored, _ = stored_model(conn)
    if stored is None:
        # First vector write: serialise first writers; the winner records its model.
        conn.execute(sql.lock_name("harness.embedding_model.first"))
        stored, _ = stored_model(conn)
        if stored is None:
            record_model(conn, embedder)
            return
    check_model(conn, embedder)


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


def reembed(
    store: MemoryStore,
    *,
    batch_size: int,
    all_rows: bool,
    progress: Callable[[int, int], None] | None,
) -> int:
    """Rebuild vectors with the store's embedder, batch by batch; see ``MemoryStore.reembed``."""
    embedder = store.embedder
    if embedder is None:
        raise StoreError(
            f"reembed needs an embedding model; none could be loaded ({store.lexical_reason})"
        )
    with store.maintenance("reembed prepare", as_owner=True) as conn:
        # Recorded first, so a process still writing with the old model is refused from now on
        # instead of mixing its vectors into the rebuilt ones.
        conn.execute(sql.lock_model(shared=False))
        stored, stored_dim = stored_model(conn)
        if stored is not None and (stored != embedder.model_name or stored_dim != embedder.dim):
            all_rows = True
        record_model(conn, embedder, overwrite=True)
        total = int(conn.execute(sql.count_memories(missing_vector_only=not all_rows)).scalar_one())
    done = 0
    after: uuid.UUID | None = None
    while True:
        with store.maintenance("reembed") as conn:
            rows = conn.execute(sql.missing_embeddings(batch_size, after, all_rows=all_rows)).all()
            if not rows:
                break
            content_vecs, context_vecs = embed_pairs(
                embedder, [r.content for r in rows], [r.context for r in rows]
            )
            conn.execute(
                sql.set_embedding(),
                [
                    {"b_id": r.id, "b_embedding": v, "b_context_embedding": cv}
                    for r, v, cv in zip(rows, content_vecs, context_vecs, strict=True)
                ],
            )
        after = rows[-1].id
        done += len(rows)
        if progress:
            progress(done, total)
    return done
