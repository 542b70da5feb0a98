"""What ``harness-memory status`` reports about a store."""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory import sql
from harness.memory.db import redact_url
from harness.memory.embedder import Embedder, EmbedderChoice
from harness.memory.ops import Op
from harness.memory.vectors import stored_model_op

__all__ = ["StoreStatus", "build_status", "status_counts"]


@dataclass(frozen=True)
class StoreStatus:
    """Redacted URL, schema revision, embedder mode, counts per tenant and status."""

    url: str
    revision: str | None
    embedder_mode: str
    embed_model: str | None
    embed_dim: int | None
    stored_model: str | None
    counts: dict[str, dict[str, int]]
    missing_embeddings: int
    pending_cleanups: dict[str, int]
    lexical_reason: str | None = None
    embed_source: str | None = None
    embed_model_path: str | None = None


def status_counts() -> Op[tuple[dict[str, dict[str, int]], int, dict[str, int], str | None]]:
    """Counts per tenant and status, rows missing vectors, open cleanups per tenant, and the
    recorded model. Read-only; run it in a maintenance transaction."""
    counts: dict[str, dict[str, int]] = {}
    for tenant, status, n in (yield sql.counts_by_tenant_status()):
        counts.setdefault(tenant, {})[status] = int(n)
    missing = int((yield sql.count_memories(missing_vector_only=True)).scalar_one())
    cleanups = {t: int(n) for t, n in (yield sql.open_cleanups_by_tenant())}
    stored, _ = yield from stored_model_op()
    return counts, missing, cleanups, stored


def build_status(
    *,
    url: str,
    revision: str | None,
    embedder: Embedder | None,
    choice: EmbedderChoice | None,
    lexical_reason: str | None,
    counts: tuple[dict[str, dict[str, int]], int, dict[str, int], str | None],
) -> StoreStatus:
    """The status report from what :func:`status_counts` read (pure)."""
    per_tenant, missing, cleanups, stored = counts
    return StoreStatus(
        url=redact_url(url),
        revision=revision,
        embedder_mode="lexical-only" if embedder is None else "hybrid",
        embed_model=embedder.model_name if embedder else None,
        embed_dim=embedder.dim if embedder else None,
        stored_model=stored,
        counts=per_tenant,
        missing_embeddings=missing,
        pending_cleanups=cleanups,
        lexical_reason=lexical_reason,
        embed_source=choice.source if choice else None,
        embed_model_path=str(choice.model_path) if choice and choice.model_path else None,
    )
