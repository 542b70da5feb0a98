"""What ``harness-memory status`` reports about a store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.memory import sql
from harness.memory.db import redact_url
from harness.memory.migrate import current_revision
from harness.memory.types import Kind, RecallRequest, Scope
from harness.memory.vectors import stored_model

if TYPE_CHECKING:
    from harness.memory.store import MemoryStore

__all__ = ["StoreStatus", "collect_status"]


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
    constraints_over_budget: dict[str, int] = field(default_factory=dict)


def collect_status(store: MemoryStore) -> StoreStatus:
    """Read-only: one transaction for the counts, then one recall per tenant (the
    platform-constraint probe)."""
    with store.maintenance("status") as conn:
        revision = current_revision(conn)
        counts: dict[str, dict[str, int]] = {}
        for tenant, status, n in conn.execute(sql.counts_by_tenant_status()):
            counts.setdefault(tenant, {})[status] = int(n)
        missing = int(conn.execute(sql.count_memories(missing_vector_only=True)).scalar_one())
        cleanups = {t: int(n) for t, n in conn.execute(sql.open_cleanups_by_tenant())}
        stored, _ = stored_model(conn)
    embedder = store.embedder
    choice = store.embedder_choice
    return StoreStatus(
        url=redact_url(store.url),
        revision=revision,
        embedder_mode="lexical-only" if embedder is None else "hybrid",
        embed_model=embedder.model_name if embedder else None,
        embed_dim=embedder.dim if embedder else None,
        stored_model=stored,
        counts=counts,
        missing_embeddings=missing,
        pending_cleanups=cleanups,
        lexical_reason=store.lexical_reason,
        embed_source=choice.source if choice else None,
        embed_model_path=str(choice.model_path) if choice and choice.model_path else None,
        constraints_over_budget={
            t: n for t in counts if (n := _platform_constraints_over_budget(store, t))
        },
    )


#: A user id no caller has (ids are validated elsewhere); its recall sees platform items only.
PROBE_USER = "harness-status-probe"


def _platform_constraints_over_budget(store: MemoryStore, tenant: str) -> int:
    """How many platform constraints a default-sized recall cannot place (each recall of
    that tenant is then incomplete; the warning itself is logged once per caller and
    interval)."""
    store.retriever.incomplete_warnings.mute((tenant, PROBE_USER))
    result = store.recall(RecallRequest(tenant=tenant, user_id=PROBE_USER))
    if result.complete:
        return 0
    left_out = (
        store.get(o.memory_id, tenant=tenant) for o in result.omitted if o.reason != "conflict"
    )
    return sum(1 for m in left_out if m and m.scope is Scope.PLATFORM and m.kind is Kind.CONSTRAINT)
