"""Table definitions: the single source the Alembic migrations are checked against.

Tenant is the first column of every primary key (ids are unique on their own, but a table
sharded by tenant needs the distribution column in every unique constraint: migration 0005,
docs/scale-out.md) and of every composite index. Two indexes cannot lead with it by
construction: the HNSW vector index (single-column access method) and the GIN full-text index
(``btree_gin`` is not available in the embedded server); recall filters by tenant first anyway.

``memories`` keeps its vectors in the row (``toast_tuple_target = 4080``, migration 0006): exact
recall reads them for every row it ranks.

``mcp_memos`` is UNLOGGED (migration 0008): RecallSet memos are scratch state, never stored
long-term, so they are not written to the WAL, not replicated, and gone after a crash.
"""

from __future__ import annotations

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Computed,
    DateTime,
    Double,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID

__all__ = [
    "DEFAULT_DIM",
    "approvals",
    "cleanup_tasks",
    "conversation_settings",
    "conversation_turns",
    "conversations",
    "ingest_requests",
    "lesson_events",
    "lesson_scores",
    "mcp_memos",
    "memories",
    "metadata",
    "runs",
    "store_meta",
]

DEFAULT_DIM = 384

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "pk": "pk_%(table_name)s",
    }
)

TSV_EXPR = (
    "setweight(to_tsvector('simple'::regconfig, content), 'A') || "
    "setweight(to_tsvector('english'::regconfig, content), 'A') || "
    "setweight(to_tsvector('simple'::regconfig, coalesce(context, '')), 'B') || "
    "setweight(to_tsvector('english'::regconfig, coalesce(context, '')), 'B')"
)

memories = Table(
    "memories",
    metadata,
    Column("id", UUID(as_uuid=True), nullable=False),
    Column("tenant", String(200), nullable=False),
    PrimaryKeyConstraint("tenant", "id"),
    Column("scope", String(16), nullable=False),
    Column("scope_id", String(200), nullable=False, server_default=""),
    Column("kind", String(16), nullable=False),
    Column("memory_key", String(200)),
    Column("content", Text, nullable=False),
    Column("context", Text),
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("status", String(20), nullable=False),
    Column("origin", String(16), nullable=False),
    Column("run_id", String(200)),
    Column("verdict_id", String(200)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True)),
    Column("supersedes", UUID(as_uuid=True)),
    Column("superseded_by", UUID(as_uuid=True)),
    Column("fingerprint", String(64), nullable=False),
    Column("embedding", Vector(DEFAULT_DIM)),
    Column("context_embedding", Vector(DEFAULT_DIM)),
    Column("tsv", TSVECTOR, Computed(TSV_EXPR, persisted=True)),
    Column("approved_by", String(200)),
    Column("approved_at", DateTime(timezone=True)),
    Column("approval_decision", String(16)),
    Column("approval_reason", Text),
    #: The conversation and turn a memory was extracted from (migration 0011), or None.
    Column("source_conversation_id", String(128)),
    Column("source_turn_id", String(128)),
    CheckConstraint("scope IN ('session','workflow','user','platform')", name="scope"),
    CheckConstraint("kind IN ('constraint','preference','lesson','fact','decision')", name="kind"),
    CheckConstraint(
        "status IN ('active','pending_approval','rejected','superseded','retired')",
        name="status",
    ),
    CheckConstraint("origin IN ('verdict','completion','admin','api')", name="origin"),
    CheckConstraint("(scope = 'platform') = (scope_id = '')", name="scope_id"),
    Index("ix_memories_readable", "tenant", "scope", "scope_id", "status", "kind"),
    Index(
        "uq_memories_active_key",
        "tenant",
        "scope",
        "scope_id",
        "memory_key",
        unique=True,
        postgresql_where=text("status = 'active' AND memory_key IS NOT NULL"),
    ),
    Index("ix_memories_history", "tenant", "scope", "scope_id", "memory_key", "created_at"),
    Index("ix_memories_fingerprint", "tenant", "scope", "scope_id", "fingerprint"),
    Index(
        "ix_memories_expires",
        "tenant",
        "expires_at",
        postgresql_where=text("expires_at IS NOT NULL"),
    ),
    Index(
        "ix_memories_pending",
        "tenant",
        "created_at",
        postgresql_where=text("status = 'pending_approval'"),
    ),
    Index(
        "ix_memories_embedding_hnsw",
        "embedding",
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    ),
    Index("ix_memories_tsv", "tsv", postgresql_using="gin"),
    # The console's browser pages a tenant newest first and counts writes per day by origin.
    Index(
        "ix_memories_tenant_created",
        "tenant",
        "created_at",
        "id",
        postgresql_include=["origin"],
    ),
    Index(
        "ix_memories_with_context",
        "tenant",
        "scope",
        "scope_id",
        postgresql_where=text("context_embedding IS NOT NULL"),
    ),
)

approvals = Table(
    "memory_approvals",
    metadata,
    Column("id", Integer, nullable=False, autoincrement=True),
    Column("tenant", String(200), nullable=False),
    PrimaryKeyConstraint("tenant", "id"),
    Column("memory_id", UUID(as_uuid=True), nullable=False),
    Column("decision", String(16), nullable=False),
    Column("actor", String(200), nullable=False),
    Column("reason", Text),
    Column("decided_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("decision IN ('approved','rejected')", name="decision"),
    Index("ix_memory_approvals_tenant_decided", "tenant", "decided_at"),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(64), nullable=False),
    Column("tenant", String(200), nullable=False),
    PrimaryKeyConstraint("tenant", "id"),
    Column("user_id", String(200), nullable=False),
    Column("workflow_id", String(200)),
    Column("session_id", String(200)),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("error", Text),
    #: The memories the run's recall placed in its context (migration 0009).
    Column("recalled", ARRAY(UUID(as_uuid=True))),
    Index("ix_runs_tenant_workflow", "tenant", "workflow_id"),
)

#: What happened to each lesson (migration 0009): its teachings, the outcomes of later runs,
#: and retirement decisions. A row with a ``polarity`` is a context: the task that taught the
#: lesson or that it should have reached (positive), or that it misled (negative), with the
#: task's vector.
lesson_events = Table(
    "lesson_events",
    metadata,
    Column("tenant", String(200), nullable=False),
    Column("id", BigInteger, Identity(), nullable=False),
    PrimaryKeyConstraint("tenant", "id"),
    Column("memory_id", UUID(as_uuid=True), nullable=False),
    Column("event", String(16), nullable=False),
    Column("polarity", String(8)),
    Column("run_id", String(200)),
    Column("verdict_id", String(200)),
    Column("actor", String(200)),
    Column("task", Text),
    Column("feedback", Text),
    Column("embedding", Vector(DEFAULT_DIM)),
    Column("feedback_embedding", Vector(DEFAULT_DIM)),
    Column("at", DateTime(timezone=True), nullable=False),
    CheckConstraint(
        "event IN ('taught','repeated','missed','misled','clear','recalled','retired','restored')",
        name="event",
    ),
    CheckConstraint("polarity IS NULL OR polarity IN ('positive','negative')", name="polarity"),
    Index("ix_lesson_events_tenant_memory_id", "tenant", "memory_id", "event", "at"),
)

cleanup_tasks = Table(
    "cleanup_tasks",
    metadata,
    Column("id", String(64), nullable=False),
    Column("tenant", String(200), nullable=False),
    PrimaryKeyConstraint("tenant", "id"),
    Column("target", String(16), nullable=False),
    Column("target_id", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_error", Text),
    Column("done_at", DateTime(timezone=True)),
    #: Not to be tried before this (a failed cleanup backs off); None: at once.
    Column("next_attempt_at", DateTime(timezone=True)),
    CheckConstraint("target IN ('workflow','session','user')", name="target"),
    Index("ix_cleanup_tasks_tenant_open", "tenant", "done_at"),
)

ingest_requests = Table(
    "ingest_requests",
    metadata,
    Column("tenant", String(200), primary_key=True),
    Column("idempotency_key", String(200), primary_key=True),
    Column("request_sha256", String(64), nullable=False),
    Column("status_code", Integer, nullable=False),
    Column("response", JSONB, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

#: The MCP server's RecallSet memos, shared by its worker processes (``PostgresMemoBook``).
#: Only the SHA-256 of a handle is stored. The caller is (tenant, user_id, workflow_id,
#: session_id), with '' for a missing workflow or session (identifiers are never empty).
mcp_memos = Table(
    "mcp_memos",
    metadata,
    Column("tenant", String(200), nullable=False),
    Column("handle_sha256", String(64), nullable=False),
    PrimaryKeyConstraint("tenant", "handle_sha256"),
    Column("user_id", String(200), nullable=False),
    Column("workflow_id", String(200), nullable=False),
    Column("session_id", String(200), nullable=False),
    #: The MCP server's SHA-256 of the bearer token's identity (migration 0010; '' over stdio):
    #: a memo opens only for the token that opened it.
    Column("token_sha256", String(64), nullable=False),
    #: ``RecallSet.to_state()`` as JSON text (text, not JSONB: notes may hold NUL, which JSONB
    #: cannot); NULL once the memo has ended.
    Column("state", Text),
    #: Unix seconds of the last open or use (the idle timer).
    Column("last_used", Double, nullable=False),
    #: The caller's use order (least recently used first): one above the caller's highest.
    Column("touched", BigInteger, nullable=False),
    Column("ended_why", Text),
    Column("ended_at", Double),
    Index("ix_mcp_memos_caller", "tenant", "user_id", "workflow_id", "session_id", "last_used"),
    # The per-tenant sweep of memos abandoned long ago.
    Index("ix_mcp_memos_tenant_last_used", "tenant", "last_used"),
    prefixes=["UNLOGGED"],
)

#: Per lesson, the running mean and sum of squared deviations (Welford) of its content's cosine
#: to the tasks of its scope's runs (migration 0009): how similar that lesson is to any task.
lesson_scores = Table(
    "lesson_scores",
    metadata,
    Column("tenant", String(200), nullable=False),
    Column("memory_id", UUID(as_uuid=True), nullable=False),
    PrimaryKeyConstraint("tenant", "memory_id"),
    Column("n", Integer, nullable=False),
    Column("mean", Double, nullable=False),
    Column("m2", Double, nullable=False),
)

#: The conversation archive (migration 0011): each of a user's conversations, kept verbatim,
#: its turns embedded and full-text indexed one by one. The turn's vector is inline like a
#: memory's (``toast_tuple_target = 4080``).
conversations = Table(
    "conversations",
    metadata,
    Column("tenant", String(200), nullable=False),
    Column("user_id", String(200), nullable=False),
    Column("conversation_id", String(128), nullable=False),
    PrimaryKeyConstraint("tenant", "user_id", "conversation_id"),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("last_at", DateTime(timezone=True), nullable=False),
    Column("turns", Integer, nullable=False),
    Column("stored_at", DateTime(timezone=True), nullable=False),
    Index("ix_conversations_tenant_last_at", "tenant", "last_at"),
)

CONVERSATION_TSV_EXPR = (
    "to_tsvector('simple'::regconfig, text) || to_tsvector('english'::regconfig, text)"
)

conversation_turns = Table(
    "conversation_turns",
    metadata,
    Column("tenant", String(200), nullable=False),
    Column("user_id", String(200), nullable=False),
    Column("conversation_id", String(128), nullable=False),
    Column("seq", Integer, nullable=False),
    PrimaryKeyConstraint("tenant", "user_id", "conversation_id", "seq"),
    Column("turn_id", String(128), nullable=False),
    Column("ts", DateTime(timezone=True), nullable=False),
    Column("role", String(16), nullable=False),
    Column("text", Text, nullable=False),
    Column("text_sha256", String(64), nullable=False),
    Column("embedding", Vector(DEFAULT_DIM)),
    Column("tsv", TSVECTOR, Computed(CONVERSATION_TSV_EXPR, persisted=True)),
    ForeignKeyConstraint(
        ["tenant", "user_id", "conversation_id"],
        ["conversations.tenant", "conversations.user_id", "conversations.conversation_id"],
        ondelete="CASCADE",
        name="fk_conversation_turns_conversation",
    ),
    CheckConstraint("role IN ('user','assistant','system','tool')", name="role"),
    Index(
        "uq_conversation_turns_turn_id",
        "tenant",
        "user_id",
        "conversation_id",
        "turn_id",
        unique=True,
    ),
    Index(
        "ix_conversation_turns_embedding_hnsw",
        "embedding",
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    ),
    Index("ix_conversation_turns_tsv", "tsv", postgresql_using="gin"),
)

#: Per tenant, the archive's settings by name: ``retention_days``, how many days conversations
#: are kept after their last turn (no row, or NULL: for ever).
conversation_settings = Table(
    "conversation_settings",
    metadata,
    Column("tenant", String(200), nullable=False),
    Column("name", String(64), nullable=False),
    PrimaryKeyConstraint("tenant", "name"),
    Column("value", Integer),
    CheckConstraint("name IN ('retention_days')", name="name"),
    CheckConstraint("value IS NULL OR value > 0", name="value"),
)

store_meta = Table(
    "store_meta",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("value", Text, nullable=False),
)
