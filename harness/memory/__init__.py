"""MemoryStore: scoped long-term memory on PostgreSQL + pgvector.

The package is layered (``CONTRIBUTING.md`` has the diagram): ``domain`` holds the pure values
and rules, ``guard`` the write guard, ``embedding`` the model side, and ``store`` everything
that talks to PostgreSQL. Importing this package does no IO and loads none of them: each name
below is imported on first use. :meth:`MemoryStore.connect` (and the asyncio twin
:meth:`AsyncMemoryStore.connect`) does the IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
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
    from harness.memory.domain.caller import Caller
    from harness.memory.domain.export_format import (
        ExportLineError,
        ExportReport,
        ImportReport,
        UnsupportedExportVersion,
    )
    from harness.memory.domain.idempotency import Answer, IdempotencyOutcome, Idempotent
    from harness.memory.domain.ranking import RankingConfig, RecallConfig
    from harness.memory.domain.recall import Omission, RecalledItem, RecallResult
    from harness.memory.domain.types import (
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
    from harness.memory.store.aio import AsyncMemoryStore, AsyncWriteMany
    from harness.memory.store.ops.layout import ClusterReport, Layout
    from harness.memory.store.ops.status import StoreStatus
    from harness.memory.store.sync import MemoryStore, WriteMany

__all__ = [
    "Answer",
    "AsyncMemoryStore",
    "AsyncWriteMany",
    "Caller",
    "ClusterReport",
    "ConflictingState",
    "EmbeddingModelMismatch",
    "ExportLineError",
    "ExportReport",
    "HarnessError",
    "IdempotencyOutcome",
    "Idempotent",
    "ImportReport",
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
    "RankingConfig",
    "RecallConfig",
    "RecallRequest",
    "RecallResult",
    "RecalledItem",
    "Scope",
    "Source",
    "Status",
    "StoreError",
    "StoreStatus",
    "StoreUnavailable",
    "UnsupportedExportVersion",
    "WorkflowDeleted",
    "WriteMany",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ConflictingState": "harness.errors",
        "EmbeddingModelMismatch": "harness.errors",
        "HarnessError": "harness.errors",
        "IncompleteRecall": "harness.errors",
        "InvalidInput": "harness.errors",
        "MemoryNotFound": "harness.errors",
        "MemoryRejected": "harness.errors",
        "StoreError": "harness.errors",
        "StoreUnavailable": "harness.errors",
        "AsyncMemoryStore": "harness.memory.store.aio",
        "AsyncWriteMany": "harness.memory.store.aio",
        "Caller": "harness.memory.domain.caller",
        "Answer": "harness.memory.domain.idempotency",
        "IdempotencyOutcome": "harness.memory.domain.idempotency",
        "Idempotent": "harness.memory.domain.idempotency",
        "ClusterReport": "harness.memory.store.ops.layout",
        "Layout": "harness.memory.store.ops.layout",
        "Omission": "harness.memory.domain.recall",
        "RankingConfig": "harness.memory.domain.ranking",
        "RecallConfig": "harness.memory.domain.ranking",
        "RecallResult": "harness.memory.domain.recall",
        "RecalledItem": "harness.memory.domain.recall",
        "MemoryStore": "harness.memory.store.sync",
        "WriteMany": "harness.memory.store.sync",
        "StoreStatus": "harness.memory.store.ops.status",
        "Kind": "harness.memory.domain.types",
        "Memory": "harness.memory.domain.types",
        "MemoryCandidate": "harness.memory.domain.types",
        "Origin": "harness.memory.domain.types",
        "RecallRequest": "harness.memory.domain.types",
        "Scope": "harness.memory.domain.types",
        "Source": "harness.memory.domain.types",
        "Status": "harness.memory.domain.types",
        "WorkflowDeleted": "harness.memory.domain.types",
        "ExportLineError": "harness.memory.domain.export_format",
        "ExportReport": "harness.memory.domain.export_format",
        "ImportReport": "harness.memory.domain.export_format",
        "UnsupportedExportVersion": "harness.memory.domain.export_format",
    },
)
