"""Columns shared by the statement modules."""

from __future__ import annotations

from typing import Any

from harness.memory.store.sql.schema import memories

__all__ = ["MEMORY_COLUMNS", "m"]

m = memories.c

#: Every column a Memory needs, without the vectors and tsvector (never parsed back).
MEMORY_COLUMNS: tuple[Any, ...] = (
    *(c for c in memories.c if c.name not in ("embedding", "context_embedding", "tsv")),
    m.embedding.is_not(None).label("has_vector"),
)
