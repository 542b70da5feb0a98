"""MemoryStore: scoped long-term memory on PostgreSQL + pgvector.

Importing this package does no IO; :meth:`MemoryStore.connect` (and the asyncio twin
:meth:`AsyncMemoryStore.connect`) does.
"""

from __future__ import annotations

from harness.errors import (
    ConflictingState,
    EmbeddingModelMismatch,
    HarnessError,
    IncompleteRecall,
    InvalidInput,
    MemoryNotFound,
    MemoryRejected,
    StoreError,
    StoreUnavailable,
)
from harness.memory.async_store import AsyncMemoryStore
from harness.memory.caller import Caller
from harness.memory.idempotency import Answer, IdempotencyOutcome, Idempotent
from harness.memory.layout import ClusterReport, Layout
from harness.memory.recall import Omission, RecalledItem, RecallResult
from harness.memory.store import MemoryStore, StoreStatus
from harness.memory.types import (
    Kind,
    Memory,
    MemoryCandidate,
    Origin,
    RecallRequest,
    Scope,
    Source,
    Status,
    WorkflowDeleted,
)

__all__ = [
    "Answer",
    "AsyncMemoryStore",
    "Caller",
    "ClusterReport",
    "ConflictingState",
    "EmbeddingModelMismatch",
    "HarnessError",
    "IdempotencyOutcome",
    "Idempotent",
    "IncompleteRecall",
    "InvalidInput",
    "Kind",
    "Layout",
    "Memory",
    "MemoryCandidate",
    "MemoryNotFound",
    "MemoryRejected",
    "MemoryStore",
    "Omission",
    "Origin",
    "RecallRequest",
    "RecallResult",
    "RecalledItem",
    "Scope",
    "Source",
    "Status",
    "StoreError",
    "StoreStatus",
    "StoreUnavailable",
    "WorkflowDeleted",
]
