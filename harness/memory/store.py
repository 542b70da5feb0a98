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
    StoreUnavailable,
)
from harness.fingerprint import fingerprint
from harness.identifiers import check_identifier, check_text
from harness.memory import sql, vectors
from harness.memory.db import normalize_url, redact_url, translate_errors
from harness.memory.embedder import Embedder, EmbedderChoice
from harness.memory.guard import Guard, default_guard
from harness.memory.migrate import check_schema_current, upgrade_to_head
from harness.memory.model_choice import choose_model
from harness.memory.recall import RecallResult
from harness.memory.retrieval import Retriever
from harness.memory.rls import assume_app_role
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

__all__ = ["AUTO", "MemoryStore", "StoreStatus", "WriteMany", "normalize_url", "redact_url"]

log = logging.getLogger(__name__)


class _Auto:
    def __repr__(self) -> str:
        return "AUTO"


#: Sentinel: load the embedder from settings.
AUTO: Any = _Auto()

#: ``write_many`` as handed to an idempotent attempt (bound to the request's transaction).
WriteMany = Callable[[Sequence[MemoryCandidate | Mapping[str, Any]]], list[Memory]]


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
        #: Where the embedding model came from (None when the caller passed the embedder).
        self.embedder_choice: EmbedderChoice | None = None
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
        migrate: bool | None = None,
        check_model: bool = True,
    ) -> MemoryStore:
        """Open the store; start the embedded server when no URL is configured.

        Side effects: may start the embedded PostgreSQL (``HARNESS_HOME``), migrates the schema
        to head under an advisory lock (idempotent; safe from several processes at once), and
        loads the embedding model unless ``embedder`` is given (``None`` = lexical-only).
        ``migrate``: None follows ``HARNESS_MIGRATE`` (auto: migrate; never: only check the
        revision, raising when the schema is behind); True migrates; False does neither (the
        caller checks, e.g. a readiness probe).

        Raises:
            InvalidInput: the URL is not one the store can use (names HARNESS_DATABASE_URL).
            StoreMisconfigured: wrong password, missing database or privilege, SSL required,
                unknown host, or (migrations off) a schema behind this version.
            StoreUnavailable: the database cannot be reached.
            EmbeddingModelMismatch: vectors were built by another model (see ``reembed``).
        """
        settings = settings or Settings.from_env()
        raw_url = url or settings.database_url_value
        embedded = raw_url is None
        if raw_url is None:
            from harness.memory.embedded import embedded_url

            raw_url = embedded_url(settings.home)
        full_url = normalize_url(raw_url)
        # ``options`` given here replaces the URL's: keep the operator's (e.g. search_path).
        url_options = sa.engine.make_url(full_url).query.get("options")
        if isinstance(url_options, tuple):
            url_options = " ".join(url_options)
        engine = sa.create_engine(
            full_url,
            pool_size=settings.pool_size,
            max_overflow=settings.pool_size,
            pool_pre_ping=True,
            pool_timeout=10,
            connect_args={
                "connect_timeout": 5,
                "options": (f"{url_options} " if url_options else "")
                + f"-c statement_timeout={settings.statement_timeout_ms} "
                f"-c lock_timeout={settings.lock_timeout_ms}",
            },
        )
        sa.event.listen(engine, "connect", assume_app_role)
        try:
            mode = settings.migrate if migrate is None else ("auto" if migrate else "off")
            if mode == "auto":
                with translate_errors("migrate", url=full_url):
                    upgrade_to_head(engine, app_role=settings.app_role)
                # The migrating connection may predate the application role: start afresh so
                # every pooled connection runs as that role.
                engine.dispose()
            elif mode == "never":
                try:
                    with translate_errors("connect", url=full_url):
                        check_schema_current(engine)
                except StoreUnavailable as exc:
                    # Not migrating, nothing to wait for: the store degrades until the server
                    # is back (pre-ping reconnects); a wrong configuration still fails here.
                    log.warning("schema revision not checked: %s", exc)
            reason: str | None = None
            choice: EmbedderChoice | None = None
            if embedder is AUTO:
                choice = choose_model(settings, embedded=embedded)
                embedder, reason = choice.embedder, choice.reason
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
            store.embedder_choice = choice
            if choice is not None and embedder is None:
                # Once, through one channel; an explicit ``embedder=None`` is a choice, not news.
                warnings.warn(
                    choice.lexical_message(settings.embed_model), RuntimeWarning, stacklevel=2
                )
            elif embedder is not None and check_model:
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
    def transaction(self, action: str, *, tenant: str | None = None) -> Iterator[Connection]:
        """One transaction with driver errors translated, admitting ``tenant``'s rows only.

        Row-level security is defence in depth under the tenant filter every statement has:
        without ``tenant`` no row of a tenant table is visible or writable.
        """
        with translate_errors(action), self._engine.begin() as conn:
            if tenant is not None:
                conn.execute(sql.set_tenant(tenant))
            yield conn

    @contextlib.contextmanager
    def maintenance(self, action: str, *, as_owner: bool = False) -> Iterator[Connection]:
        """One transaction over every tenant's rows, for work that is cross-tenant by nature
        (expiry purge, status counts, reconcile, reembed). ``as_owner`` runs it as the login
        itself, needed to change the schema (re-declaring the vector columns)."""
        with translate_errors(action), self._engine.begin() as conn:
            if as_owner:
                conn.execute(sql.reset_local_role())
            conn.execute(sql.all_tenants())
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
        self, candidates: Sequence[MemoryCandidate | Mapping[str, Any]], *, single: bool = False
    ) -> list[MemoryCandidate]:
        if not isinstance(candidates, (list, tuple)):
            raise InvalidInput(
                "candidates: write_many takes a list of candidates, not "
                f"{type(candidates).__name__}",
                fields=("candidates",),
            )
        out: list[MemoryCandidate] = []
        for index, raw in enumerate(candidates):
            # A single write's errors name fields only; a batch's also say which candidate.
            where = "" if single else f"candidate {index}: "
            if not isinstance(raw, (MemoryCandidate, Mapping)):
                raise InvalidInput(
                    f"{where}a MemoryCandidate or a mapping, not {type(raw).__name__}",
                    fields=("candidate",),
                )
            try:
                cand = raw if isinstance(raw, MemoryCandidate) else MemoryCandidate(**dict(raw))
            except InvalidInput as exc:
                raise InvalidInput(f"{where}{exc}", fields=exc.fields, errors=exc.errors) from exc
            except (TypeError, ValidationError) as exc:
                raise InvalidInput(f"{where}{exc}", fields=("candidate",)) from exc
            if len(cand.content) > self.settings.max_content_chars:
                raise InvalidInput(
                    f"{where}content: {len(cand.content)} characters exceeds the "
                    f"maximum of {self.settings.max_content_chars}",
                    fields=("content",),
                )
            try:
                self.guard.check(cand)
            except MemoryRejected as exc:
                raise MemoryRejected(
                    exc.reason,
                    rule=exc.rule,
                    index=None if single else index,
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
        return self._write_checked(self._validate([candidate], single=True))[0]

    def write_many(self, candidates: Sequence[MemoryCandidate | Mapping[str, Any]]) -> list[Memory]:
        """Like :meth:`write` for many candidates in one transaction, embeddings batched.

        All or nothing: one invalid or rejected candidate means none is written.
        """
        return self._write_checked(self._validate(candidates))

    def _write_checked(self, cands: list[MemoryCandidate]) -> list[Memory]:
        if not cands:
            return []
        pairs = self._embed(cands)  # before taking a pooled connection
        with self.transaction("write", tenant=cands[0].tenant) as conn:
            return self._write_validated(conn, cands, pairs, cands[0].tenant)

    def _embed(self, cands: list[MemoryCandidate]) -> vectors.Pairs | None:
        return vectors.embed_or_none(
            self.embedder, [c.content for c in cands], [c.context for c in cands]
        )

    def _write_validated(
        self,
        conn: Connection,
        cands: list[MemoryCandidate],
        pairs: vectors.Pairs | None,
        tenant: str | None,
    ) -> list[Memory]:
        """Write validated candidates on ``conn``, whose transaction admits ``tenant``."""
        now = self.clock.now()
        if pairs is not None and self.embedder is not None:
            vectors.claim_model(conn, self.embedder)
        # Every lock this batch needs, in one global order: concurrent batches cannot deadlock,
        # and a keyless content is checked and inserted by one writer at a time.
        for name in sorted({n for n in map(_lock_name, cands) if n is not None}):
            conn.execute(sql.lock_name(name))
        written: list[Memory] = []
        for i, cand in enumerate(cands):
            if cand.tenant != tenant:
                tenant = cand.tenant
                conn.execute(sql.set_tenant(tenant))
            vector = pairs[0][i] if pairs else None
            context_vector = pairs[1][i] if pairs else None
            written.append(self._write_one(conn, cand, vector, context_vector, now))
        return written

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
                if pending or existing["status"] == Status.ACTIVE.value:
                    return memory_from_row(existing)
                # A deliberate write of what an automatic one proposed: it takes effect now and
                # the waiting proposal is closed as superseded by it (linked both ways).
                supersedes = existing["id"]
                conn.execute(sql.supersede(cand.tenant, existing["id"], new_id))
                log.info("write %s supersedes identical pending memory %s", new_id, supersedes)
        elif not pending:
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

    def get(self, memory_id: uuid.UUID | str, *, tenant: str) -> Memory | None:
        """The tenant's memory with that id, whatever its status; None when the tenant has none
        (an id of another tenant is not found)."""
        mid = _as_uuid(memory_id)
        tenant = check_identifier(tenant, "tenant")
        with self.transaction("get", tenant=tenant) as conn:
            row = conn.execute(sql.by_id(tenant, mid)).mappings().first()
        return memory_from_row(row) if row else None

    def history(
        self, tenant: str, scope: Scope | str, scope_id: str | None, key: str
    ) -> list[Memory]:
        """Every version of one key, oldest first (superseded ones included)."""
        tenant = check_identifier(tenant, "tenant")
        scope = _as_scope(scope)
        scope_key = _scope_key(scope, scope_id)
        key = check_identifier(key, "key")
        with self.transaction("history", tenant=tenant) as conn:
            rows = conn.execute(sql.history(tenant, scope, scope_key, key)).mappings().all()
        return [memory_from_row(r) for r in rows]

    def pending(self, tenant: str) -> list[Memory]:
        """Memories of the tenant waiting for an admin decision, oldest first."""
        tenant = check_identifier(tenant, "tenant")
        with self.transaction("pending", tenant=tenant) as conn:
            rows = conn.execute(sql.pending(tenant)).mappings().all()
        return [memory_from_row(r) for r in rows]

    def audit(self, tenant: str) -> list[dict[str, Any]]:
        """Every approval decision of the tenant, oldest first (who, when, what, reason)."""
        tenant = check_identifier(tenant, "tenant")
        with self.transaction("audit", tenant=tenant) as conn:
            return [dict(r) for r in conn.execute(sql.approval_audit(tenant)).mappings().all()]

    # --- approval ------------------------------------------------------------------------------

    def approve(self, memory_id: uuid.UUID | str, approver: str, *, tenant: str) -> Memory:
        """Activate the tenant's pending memory (superseding the active item of its key) and
        audit it under that tenant.

        Raises:
            MemoryNotFound: the tenant has no memory with that id (another tenant's id is not
                found). ConflictingState: the memory is not pending.
        """
        return self._decide(memory_id, approver, tenant, "approved", None)

    def reject(
        self, memory_id: uuid.UUID | str, approver: str, reason: str, *, tenant: str
    ) -> Memory:
        """Reject the tenant's pending memory with a reason; it is kept (status rejected) and
        audited. Raises like :meth:`approve`."""
        reason = check_text(reason, "reason", max_length=4000)
        if not reason.strip():
            raise InvalidInput("reason: a rejection needs a reason", fields=("reason",))
        return self._decide(memory_id, approver, tenant, "rejected", reason)

    def _decide(
        self,
        memory_id: uuid.UUID | str,
        approver: str,
        tenant: str,
        decision: str,
        reason: str | None,
    ) -> Memory:
        approver = check_identifier(approver, "approver")
        tenant = check_identifier(tenant, "tenant")
        mid = _as_uuid(memory_id)
        now = self.clock.now()
        with self.transaction(decision, tenant=tenant) as conn:
            row = conn.execute(sql.by_id(tenant, mid, for_update=True)).mappings().first()
            if row is None:
                raise MemoryNotFound(f"tenant {tenant!r} has no memory with id {mid}")
            if row["status"] != Status.PENDING_APPROVAL.value:
                raise ConflictingState(f"memory {mid} is {row['status']}, not pending_approval")
            values: dict[str, Any] = {
                "approved_by": approver,
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
                        "actor": approver,
                        "reason": reason,
                        "decided_at": now,
                    }
                )
            )
            updated = conn.execute(sql.by_id(tenant, mid)).mappings().one()
        return memory_from_row(updated)

    # --- deletion ------------------------------------------------------------------------------

    def forget(self, memory_id: uuid.UUID | str, *, tenant: str) -> bool:
        """Delete one of the tenant's memories and its embedding for good. Idempotent: returns
        False when the tenant has no memory with that id (another tenant's id included)."""
        mid = _as_uuid(memory_id)
        tenant = check_identifier(tenant, "tenant")
        with self.transaction("forget", tenant=tenant) as conn:
            row = conn.execute(sql.by_id(tenant, mid, for_update=True)).mappings().first()
            if row is None:
                return False
            for stmt in sql.unlink(tenant, mid):
                conn.execute(stmt)
            conn.execute(sql.delete_by_id(tenant, mid))
        return True

    def delete_scope(self, tenant: str, scope: Scope | str, scope_id: str | None) -> int:
        """Delete every memory of one (tenant, scope, scope_id), all statuses. Returns the count."""
        tenant = check_identifier(tenant, "tenant")
        scope = _as_scope(scope)
        scope_key = _scope_key(scope, scope_id)
        with self.transaction("delete scope", tenant=tenant) as conn:
            return conn.execute(sql.delete_scope(tenant, scope, scope_key)).rowcount

    def purge_expired(self, now: datetime | None = None) -> int:
        """Delete memories whose ``expires_at <= now``, tenant by tenant. Returns the count."""
        if now is not None and not isinstance(now, datetime):
            raise InvalidInput("now: a timezone-aware datetime", fields=("now",))
        at = now or self.clock.now()
        total = 0
        with self.maintenance("purge expired") as conn:
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
        if isinstance(request, RecallRequest):
            return self.retriever.recall(request)
        if not isinstance(request, Mapping):
            raise InvalidInput(
                f"request: a RecallRequest or a mapping, not {type(request).__name__}",
                fields=("request",),
            )
        try:
            req = RecallRequest(**dict(request))
        except TypeError as exc:  # e.g. non-string keys
            raise InvalidInput(f"request: {exc}", fields=("request",)) from exc
        return self.retriever.recall(req)

    # --- idempotent requests -------------------------------------------------------------------

    def idempotent(
        self,
        tenant: str,
        key: str,
        request_sha256: str,
        attempt: Callable[[WriteMany], tuple[int, dict[str, Any], bool]],
    ) -> tuple[int, dict[str, Any], bool]:
        """Run ``attempt`` once per (tenant, key); replays answer what the first one did.

        ``attempt`` receives a ``write_many`` bound to this request's connection: the lock,
        the lookup, the write and the record happen in one transaction on one pooled
        connection (a request never waits for a second connection while holding one).
        Returns (status, payload, replayed). A key reused with another body answers 409.
        Attempts answering a server error are rolled back and not recorded, so a retry runs
        again.
        """
        tenant = check_identifier(tenant, "tenant")
        key = check_identifier(key, "Idempotency-Key")
        with translate_errors("idempotent request"), self._engine.connect() as conn:
            conn.execute(sql.set_tenant(tenant))
            conn.execute(sql.lock_idempotency(tenant, key))
            record = conn.execute(sql.idempotency_record(tenant, key)).mappings().first()
            if record is not None:
                conn.rollback()
                if record["request_sha256"] != request_sha256:
                    return (
                        409,
                        {"error": "Idempotency-Key was used with a different body"},
                        False,
                    )
                return record["status_code"], dict(record["response"]), True

            def write_here(
                candidates: Sequence[MemoryCandidate | Mapping[str, Any]],
            ) -> list[Memory]:
                cands = self._validate(candidates)
                if not cands:
                    return []
                return self._write_validated(conn, cands, self._embed(cands), tenant)

            status, payload, _ = attempt(write_here)
            if status >= 500:
                conn.rollback()
                return status, payload, False
            conn.execute(sql.set_tenant(tenant))  # the batch may have named other tenants
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
    if not isinstance(value, str):
        raise InvalidInput(
            f"memory_id: an id is a UUID or its string, not {type(value).__name__}",
            fields=("memory_id",),
        )
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidInput(
            f"memory_id: {value!r} is not a valid id", fields=("memory_id",)
        ) from None


def _lock_name(cand: MemoryCandidate) -> str | None:
    """The advisory lock a candidate's write takes: its key, or its keyless content."""
    if cand.key is None:
        return sql.fingerprint_lock_name(
            cand.tenant, cand.scope, cand.scope_key, cand.kind, fingerprint(cand.content)
        )
    if cand.scope is Scope.PLATFORM and cand.source.origin in AUTOMATIC_ORIGINS:
        return None  # pending: supersedes nothing until approved
    return sql.key_lock_name(cand.tenant, cand.scope, cand.scope_key, cand.key)


def _scope_key(scope: Scope, scope_id: str | None) -> str:
    """``scope_id`` as stored; platform is "" and every other scope needs a valid id."""
    if scope is Scope.PLATFORM:
        if scope_id:
            raise InvalidInput("scope_id: must be empty for platform scope", fields=("scope_id",))
        return ""
    return check_identifier(scope_id, "scope_id")


def _as_scope(value: Scope | str) -> Scope:
    try:
        return Scope(value)
    except ValueError:
        raise InvalidInput(
            f"scope: {value!r} is not one of session, workflow, user, platform", fields=("scope",)
        ) from None
