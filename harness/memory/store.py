"""MemoryStore: the IO edge over PostgreSQL + pgvector (connect, write path, recall, lifecycle)."""

from __future__ import annotations

import contextlib
import logging
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from pydantic import ValidationError
from sqlalchemy.engine import Connection, Engine

from harness.clock import Clock, SystemClock
from harness.errors import (
    ConflictingState,
    InvalidInput,
    MemoryNotFound,
    MemoryRejected,
)
from harness.fingerprint import fingerprint
from harness.memory import sql, vectors
from harness.memory.db import normalize_url, redact_url, translate_errors
from harness.memory.embedder import Embedder, load_embedder
from harness.memory.guard import Guard, default_guard
from harness.memory.migrate import upgrade_to_head
from harness.memory.recall import RecallResult
from harness.memory.retrieval import Retriever
from harness.memory.rows import memory_from_row
from harness.memory.runs import RunRecords
from harness.memory.status import StoreStatus, collect_status
from harness.memory.types import (
    AUTOMATIC_ORIGINS,
    Memory,
    MemoryCandidate,
    RecallRequest,
    Scope,
    Status,
)
from harness.settings import Settings

__all__ = ["AUTO", "MemoryStore", "StoreStatus", "normalize_url", "redact_url"]

log = logging.getLogger(__name__)


class _Auto:
    def __repr__(self) -> str:
        return "AUTO"


#: Sentinel: load the embedder from settings.
AUTO: Any = _Auto()


class MemoryStore:
    """Long-term memory on PostgreSQL + pgvector. Thread-safe; one instance per process is plenty.

    Build it with :meth:`connect`. Every method is tenant-scoped in SQL; driver errors come out
    as :class:`StoreUnavailable` or :class:`StoreError`.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        settings: Settings,
        embedder: Embedder | None,
        guard: Guard,
        clock: Clock,
        url: str,
        lexical_reason: str | None = None,
    ):
        self._engine = engine
        self.settings = settings
        self.embedder = embedder
        self.guard = guard
        self.clock = clock
        self.url = url
        self.lexical_reason = lexical_reason
        self.retriever = Retriever(self)
        self.runs = RunRecords(self)

    # --- construction --------------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        url: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = AUTO,
        guard: Guard | None = None,
        clock: Clock | None = None,
        migrate: bool = True,
        check_model: bool = True,
    ) -> MemoryStore:
        """Open the store; start the embedded server when no URL is configured.

        Side effects: may start the embedded PostgreSQL (``HARNESS_HOME``), migrates the schema
        to head under an advisory lock (idempotent; safe from several processes at once), and
        loads the embedding model unless ``embedder`` is given (``None`` = lexical-only).

        Raises:
            StoreUnavailable: the database cannot be reached.
            EmbeddingModelMismatch: vectors were built by another model (see ``reembed``).
        """
        settings = settings or Settings.from_env()
        raw_url = url or settings.database_url
        if raw_url is None:
            from harness.memory.embedded import embedded_url

            raw_url = embedded_url(settings.home)
        full_url = normalize_url(raw_url)
        engine = sa.create_engine(
            full_url,
            pool_size=settings.pool_size,
            max_overflow=settings.pool_size,
            pool_pre_ping=True,
            pool_timeout=10,
            connect_args={
                "connect_timeout": 5,
                "options": f"-c statement_timeout={settings.statement_timeout_ms} "
                f"-c lock_timeout={settings.lock_timeout_ms}",
            },
        )
        try:
            if migrate:
                with translate_errors("migrate"):
                    upgrade_to_head(engine)
            reason: str | None = None
            if embedder is AUTO:
                embedder, reason = load_embedder(settings.embed_model, settings.embed_model_path)
            elif embedder is None:
                reason = "no embedder configured"
            store = cls(
                engine,
                settings=settings,
                embedder=embedder,
                guard=guard or default_guard(),
                clock=clock or SystemClock(),
                url=full_url,
                lexical_reason=reason,
            )
            if embedder is None:
                message = (
                    f"harness-memory: no embedding model could be loaded ({reason}); running "
                    "in lexical-only mode (full-text search only). Set HARNESS_EMBED_MODEL_PATH "
                    "to a local model folder to enable vector recall."
                )
                log.warning(message)
                warnings.warn(message, RuntimeWarning, stacklevel=2)
            elif check_model:
                store.check_embedding_model()
            return store
        except BaseException:
            engine.dispose()
            raise

    def close(self) -> None:
        """Release every pooled connection. Idempotent."""
        self._engine.dispose()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for adapters living in this package family)."""
        return self._engine

    @property
    def lexical_only(self) -> bool:
        """True when recall uses full-text search alone."""
        return self.embedder is None

    @contextlib.contextmanager
    def transaction(self, action: str) -> Iterator[Connection]:
        """One transaction with driver errors translated."""
        with translate_errors(action), self._engine.begin() as conn:
            yield conn

    # --- embedding model bookkeeping -----------------------------------------------------------

    def stored_model(self) -> tuple[str | None, int | None]:
        """The (model, dimension) recorded as having built this store's vectors."""
        with self.transaction("read metadata") as conn:
            return vectors.stored_model(conn)

    def check_embedding_model(self) -> None:
        """Raise ``EmbeddingModelMismatch`` when the configured model is not the recorded one."""
        if self.embedder is not None:
            with self.transaction("read metadata") as conn:
                vectors.check_model(conn, self.embedder)

    # --- write path ----------------------------------------------------------------------------

    def _validate(
        self, candidates: Sequence[MemoryCandidate | Mapping[str, Any]]
    ) -> list[MemoryCandidate]:
        if isinstance(candidates, (MemoryCandidate, Mapping)):
            raise InvalidInput("write_many takes a sequence of candidates", fields=("candidates",))
        out: list[MemoryCandidate] = []
        for index, raw in enumerate(candidates):
            try:
                cand = raw if isinstance(raw, MemoryCandidate) else MemoryCandidate(**dict(raw))
            except InvalidInput as exc:
                raise InvalidInput(
                    f"candidate {index}: {exc}", fields=exc.fields, errors=exc.errors
                ) from exc
            except (TypeError, ValidationError) as exc:
                raise InvalidInput(f"candidate {index}: {exc}", fields=("candidate",)) from exc
            if len(cand.content) > self.settings.max_content_chars:
                raise InvalidInput(
                    f"candidate {index}: content: {len(cand.content)} characters exceeds the "
                    f"maximum of {self.settings.max_content_chars}",
                    fields=("content",),
                )
            try:
                self.guard.check(cand)
            except MemoryRejected as exc:
                raise MemoryRejected(
                    exc.reason,
                    rule=exc.rule,
                    index=index,
                    field=exc.field,
                    position=exc.position,
                    excerpt=exc.excerpt,
                ) from None
            out.append(cand)
        return out

    def write(self, candidate: MemoryCandidate | Mapping[str, Any]) -> Memory:
        """Validate, guard, embed and store one candidate; returns the stored memory.

        A keyed write supersedes the active item of the same (tenant, scope, scope_id, key).
        A keyless write whose content matches an active item there returns that item
        (idempotent). Platform candidates of automatic origin wait in ``pending_approval``.

        Raises:
            InvalidInput: bad fields (nothing written). MemoryRejected: the guard refused it.
            StoreUnavailable / StoreError: the database failed (nothing written).
        """
        return self.write_many([candidate])[0]

    def write_many(self, candidates: Sequence[MemoryCandidate | Mapping[str, Any]]) -> list[Memory]:
        """Like :meth:`write` for many candidates in one transaction, embeddings batched.

        All or nothing: one invalid or rejected candidate means none is written.
        """
        cands = self._validate(candidates)
        if not cands:
            return []
        pairs = vectors.embed_or_none(
            self.embedder, [c.content for c in cands], [c.context for c in cands]
        )
        now = self.clock.now()
        with self.transaction("write") as conn:
            if pairs is not None and self.embedder is not None:
                vectors.record_model(conn, self.embedder)
            return [
                self._write_one(
                    conn,
                    cand,
                    pairs[0][i] if pairs else None,
                    pairs[1][i] if pairs else None,
                    now,
                )
                for i, cand in enumerate(cands)
            ]

    def _write_one(
        self,
        conn: Connection,
        cand: MemoryCandidate,
        vector: list[float] | None,
        context_vector: list[float] | None,
        now: datetime,
    ) -> Memory:
        pending = cand.scope is Scope.PLATFORM and cand.source.origin in AUTOMATIC_ORIGINS
        fp = fingerprint(cand.content)
        new_id = uuid.uuid4()
        supersedes: uuid.UUID | None = None
        if cand.key is None:
            existing = (
                conn.execute(
                    sql.active_with_fingerprint(
                        cand.tenant, cand.scope, cand.scope_key, cand.kind, fp
                    )
                )
                .mappings()
                .first()
            )
            if existing is not None:
                return memory_from_row(existing)
        elif not pending:
            conn.execute(sql.lock_key(cand.tenant, cand.scope, cand.scope_key, cand.key))
            old = (
                conn.execute(sql.active_for_key(cand.tenant, cand.scope, cand.scope_key, cand.key))
                .mappings()
                .first()
            )
            if old is not None:
                supersedes = old["id"]
                conn.execute(sql.supersede(cand.tenant, old["id"], new_id))
        row = {
            "id": new_id,
            "tenant": cand.tenant,
            "scope": cand.scope.value,
            "scope_id": cand.scope_key,
            "kind": cand.kind.value,
            "memory_key": cand.key,
            "content": cand.content,
            "context": cand.context,
            "priority": cand.priority,
            "status": (Status.PENDING_APPROVAL if pending else Status.ACTIVE).value,
            "origin": cand.source.origin.value,
            "run_id": cand.source.run_id,
            "verdict_id": cand.source.verdict_id,
            "created_at": now,
            "expires_at": cand.expires_at,
            "supersedes": supersedes,
            "fingerprint": fp,
            "embedding": vector,
            "context_embedding": context_vector,
        }
        return memory_from_row(conn.execute(sql.insert_memory(row)).mappings().one())

    # --- reads ---------------------------------------------------------------------------------

    def get(self, memory_id: uuid.UUID | str) -> Memory | None:
        """The memory with that id, whatever its status; None when there is none."""
        mid = _as_uuid(memory_id)
        with self.transaction("get") as conn:
            row = conn.execute(sql.by_id(mid)).mappings().first()
        return memory_from_row(row) if row else None

    def history(
        self, tenant: str, scope: Scope | str, scope_id: str | None, key: str
    ) -> list[Memory]:
        """Every version of one key, oldest first (superseded ones included)."""
        scope = _as_scope(scope)
        with self.transaction("history") as conn:
            rows = conn.execute(sql.history(tenant, scope, scope_id or "", key)).mappings().all()
        return [memory_from_row(r) for r in rows]

    def pending(self, tenant: str) -> list[Memory]:
        """Memories of the tenant waiting for an admin decision, oldest first."""
        with self.transaction("pending") as conn:
            rows = conn.execute(sql.pending(tenant)).mappings().all()
        return [memory_from_row(r) for r in rows]

    def audit(self, tenant: str) -> list[dict[str, Any]]:
        """Every approval decision of the tenant, oldest first (who, when, what, reason)."""
        with self.transaction("audit") as conn:
            return [dict(r) for r in conn.execute(sql.approval_audit(tenant)).mappings().all()]

    # --- approval ------------------------------------------------------------------------------

    def approve(self, memory_id: uuid.UUID | str, approver: str) -> Memory:
        """Activate a pending memory (superseding the active item of its key) and audit it.

        Raises:
            MemoryNotFound: no such id. ConflictingState: the memory is not pending.
        """
        return self._decide(memory_id, approver, "approved", None)

    def reject(self, memory_id: uuid.UUID | str, approver: str, reason: str) -> Memory:
        """Reject a pending memory with a reason; it is kept (status rejected) and audited."""
        if not reason or not reason.strip():
            raise InvalidInput("reason: a rejection needs a reason", fields=("reason",))
        return self._decide(memory_id, approver, "rejected", reason.strip())

    def _decide(
        self, memory_id: uuid.UUID | str, approver: str, decision: str, reason: str | None
    ) -> Memory:
        if not approver or not approver.strip():
            raise InvalidInput("approver: must name who decides", fields=("approver",))
        mid = _as_uuid(memory_id)
        now = self.clock.now()
        with self.transaction(decision) as conn:
            row = conn.execute(sql.by_id(mid, for_update=True)).mappings().first()
            if row is None:
                raise MemoryNotFound(f"no memory with id {mid}")
            if row["status"] != Status.PENDING_APPROVAL.value:
                raise ConflictingState(f"memory {mid} is {row['status']}, not pending_approval")
            tenant = row["tenant"]
            values: dict[str, Any] = {
                "approved_by": approver.strip(),
                "approved_at": now,
                "approval_decision": decision,
                "approval_reason": reason,
            }
            if decision == "approved":
                values["status"] = Status.ACTIVE.value
                if row["memory_key"] is not None:
                    scope = Scope(row["scope"])
                    conn.execute(sql.lock_key(tenant, scope, row["scope_id"], row["memory_key"]))
                    old = (
                        conn.execute(
                            sql.active_for_key(tenant, scope, row["scope_id"], row["memory_key"])
                        )
                        .mappings()
                        .first()
                    )
                    if old is not None:
                        conn.execute(sql.supersede(tenant, old["id"], mid))
                        values["supersedes"] = old["id"]
            else:
                values["status"] = Status.REJECTED.value
            conn.execute(sql.set_status(tenant, mid, values))
            conn.execute(
                sql.insert_approval(
                    {
                        "tenant": tenant,
                        "memory_id": mid,
                        "decision": decision,
                        "actor": approver.strip(),
                        "reason": reason,
                        "decided_at": now,
                    }
                )
            )
            updated = conn.execute(sql.by_id(mid)).mappings().one()
        return memory_from_row(updated)

    # --- deletion ------------------------------------------------------------------------------

    def forget(self, memory_id: uuid.UUID | str) -> bool:
        """Delete one memory and its embedding for good. Returns False when it did not exist."""
        mid = _as_uuid(memory_id)
        with self.transaction("forget") as conn:
            row = conn.execute(sql.by_id(mid, for_update=True)).mappings().first()
            if row is None:
                return False
            for stmt in sql.unlink(row["tenant"], mid):
                conn.execute(stmt)
            conn.execute(sql.delete_by_id(row["tenant"], mid))
        return True

    def delete_scope(self, tenant: str, scope: Scope | str, scope_id: str | None) -> int:
        """Delete every memory of one (tenant, scope, scope_id), all statuses. Returns the count."""
        scope = _as_scope(scope)
        with self.transaction("delete scope") as conn:
            return conn.execute(sql.delete_scope(tenant, scope, scope_id or "")).rowcount

    def purge_expired(self, now: datetime | None = None) -> int:
        """Delete memories whose ``expires_at <= now``, tenant by tenant. Returns the count."""
        at = now or self.clock.now()
        total = 0
        with self.transaction("purge expired") as conn:
            tenants = conn.execute(sql.tenants_with_expired(at)).scalars().all()
            for tenant in tenants:
                total += conn.execute(sql.purge_expired(tenant, at)).rowcount
        return total

    # --- recall --------------------------------------------------------------------------------

    def recall(self, request: RecallRequest | Mapping[str, Any]) -> RecallResult:
        """Select, resolve, budget and render the memories for a run's first model call.

        Never raises because of the database unless ``request.strict``: a failure returns an
        empty result with ``complete=False`` and logs a warning. See SPEC section 5.
        """
        return self.retriever.recall(request)

    # --- idempotent requests -------------------------------------------------------------------

    def idempotent(
        self,
        tenant: str,
        key: str,
        request_sha256: str,
        attempt: Callable[[], tuple[int, dict[str, Any], bool]],
    ) -> tuple[int, dict[str, Any], bool]:
        """Run ``attempt`` once per (tenant, key); replays answer what the first one did.

        Returns (status, payload, replayed). A key reused with another body answers 409.
        Attempts that fail with a server error are not recorded, so a retry runs again.
        """
        with translate_errors("idempotent request"), self._engine.connect() as conn:
            conn.execute(sql.lock_idempotency(tenant, key))
            conn.commit()
            try:
                record = conn.execute(sql.idempotency_record(tenant, key)).mappings().first()
                conn.commit()
                if record is not None:
                    if record["request_sha256"] != request_sha256:
                        return (
                            409,
                            {"error": "Idempotency-Key was used with a different body"},
                            False,
                        )
                    return record["status_code"], dict(record["response"]), True
                status, payload, _ = attempt()
                if status < 500:
                    conn.execute(
                        sql.insert_idempotency_record(
                            {
                                "tenant": tenant,
                                "idempotency_key": key,
                                "request_sha256": request_sha256,
                                "status_code": status,
                                "response": payload,
                                "created_at": self.clock.now(),
                            }
                        )
                    )
                    conn.commit()
                return status, payload, False
            finally:
                conn.execute(sql.unlock_idempotency(tenant, key))
                conn.commit()

    # --- maintenance ---------------------------------------------------------------------------

    def reembed(
        self,
        *,
        batch_size: int = 256,
        all_rows: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Rebuild vectors with the configured model and record it as the store's model.

        Side effects: rewrites embeddings (all rows, or only missing ones) and the recorded
        model. Idempotent. Returns how many rows were embedded.
        """
        return vectors.reembed(self, batch_size=batch_size, all_rows=all_rows, progress=progress)

    def status(self) -> StoreStatus:
        """Redacted URL, schema revision, embedder mode, counts per tenant and status."""
        return collect_status(self)


def _as_uuid(value: uuid.UUID | str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidInput(
            f"memory_id: {value!r} is not a valid id", fields=("memory_id",)
        ) from None


def _as_scope(value: Scope | str) -> Scope:
    try:
        return Scope(value)
    except ValueError:
        raise InvalidInput(
            f"scope: {value!r} is not one of session, workflow, user, platform", fields=("scope",)
        ) from None
