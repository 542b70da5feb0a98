"""What ``harness-memory status`` reports about a store."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from harness.errors import StoreError, StoreUnavailable
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import Kind, Memory, RecallRequest, Scope
from harness.memory.embedding.embedder import Embedder, EmbedderChoice, FastEmbedder
from harness.memory.store import sql
from harness.memory.store.base import StoreBase
from harness.memory.store.db import redact_url
from harness.memory.store.executors import OnConnection, Op
from harness.memory.store.migrate import current_revision, head_revision, recorded_revision
from harness.memory.store.ops.vectors import stored_model_op
from harness.memory.store.plans import Plan, in_transaction
from harness.memory.store.replicas import ReplicaState

__all__ = [
    "PROBE_USER",
    "SchemaState",
    "StoreStatus",
    "build_status",
    "constraints_among",
    "left_out_ids",
    "probe_request",
    "schema_state",
    "status_counts",
]


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
    #: True when queries run through the model's int8 copy (:mod:`harness.memory.embedding.quantize`).
    embed_int8: bool = False
    constraints_over_budget: dict[str, int] = field(default_factory=dict)
    #: Each read replica (HARNESS_DATABASE_READ_URL) as this store sees it, URL redacted.
    read_replicas: tuple[ReplicaState, ...] = ()


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
    constraints_over_budget: dict[str, int],
    read_replicas: tuple[ReplicaState, ...] = (),
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
        embed_int8=isinstance(embedder, FastEmbedder) and embedder.int8_queries,
        constraints_over_budget=constraints_over_budget,
        read_replicas=read_replicas,
    )


#: A user id no caller has (ids are validated elsewhere); its recall sees platform items only.
PROBE_USER = "harness-status-probe"


def probe_request(tenant: str) -> RecallRequest:
    """The platform-constraint probe: a default-sized recall that sees platform items only."""
    return RecallRequest(tenant=tenant, user_id=PROBE_USER)


def left_out_ids(result: RecallResult) -> list[Any]:
    """Ids the probe could not place for lack of room (conflicts are not a budget matter)."""
    return [o.memory_id for o in result.omitted if o.reason != "conflict"]


def constraints_among(left_out: Iterable[Memory | None]) -> int:
    """How many of the left-out memories are platform constraints (each recall of that
    tenant is then incomplete; the warning itself is logged once per caller and interval)."""
    return sum(1 for m in left_out if m and m.scope is Scope.PLATFORM and m.kind is Kind.CONSTRAINT)


@dataclass(frozen=True)
class SchemaState:
    """The schema revision the database is at and the head this version ships."""

    revision: str | None
    head: str

    @property
    def current(self) -> bool:
        return self.revision == self.head


def schema_state(store: StoreBase) -> Plan[SchemaState]:
    """The database's schema revision (one statement; the careful read when the version
    table is missing) and the shipped head. Read-only; for readiness probes."""
    try:
        revision = yield from in_transaction(
            "readiness check", _revision(recorded_revision), admits="none"
        )
    except StoreUnavailable:
        raise
    except StoreError:  # no alembic_version table: ask the careful way
        revision = yield from in_transaction(
            "readiness check", _revision(current_revision), admits="none"
        )
    return SchemaState(revision, head_revision())


def _revision(read: Callable[[Connection], str | None]) -> Op[str | None]:
    return (yield OnConnection(read))  # type: ignore[no-any-return]
