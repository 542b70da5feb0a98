"""Statements about the memories table's physical layout: how many heap pages a scope's rows
sit on, and ``CLUSTER`` to store each scope's rows together.

Maintenance statements over every tenant, run as the table's owner inside the store's
maintenance transaction; none reads or changes what a memory says. Recall of a scope reads
every row of its pool (the exact path), so a pool spread over one page per row reads several
times the pages of a pool stored together (BENCHMARKS.md section 16).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, TextClause, func, select, text

__all__ = [
    "CLUSTER_INDEX",
    "analyze_memories",
    "cluster_memories",
    "maintenance_settings",
    "scope_pages",
]

#: The index whose order ``CLUSTER`` writes the rows in: tenant, scope, scope id (then status
#: and kind), the order in which recall reads a pool.
CLUSTER_INDEX = "ix_memories_readable"


def scope_pages() -> TextClause:
    """Rows, and the heap pages they sit on summed over every (tenant, scope, scope id)."""
    return text(
        "SELECT coalesce(sum(n), 0)::bigint AS rows, coalesce(sum(pages), 0)::bigint AS pages "
        "FROM (SELECT count(*) AS n, count(DISTINCT (ctid::text::point)[0]) AS pages "
        "FROM memories GROUP BY tenant, scope, scope_id) AS per_scope"
    )


def maintenance_settings(lock_wait_ms: int | None, index_memory_mb: int | None) -> Select[Any]:
    """For this transaction: no statement timeout (a scan or rewrite of the whole table takes
    as long as the table needs); when given, wait at most ``lock_wait_ms`` for a lock (then
    fail, changing nothing) and use ``index_memory_mb`` for rebuilding indexes (an HNSW graph
    built in memory is several times faster than one that spills)."""
    settings = [func.set_config("statement_timeout", "0", True)]
    if lock_wait_ms is not None:
        settings.append(func.set_config("lock_timeout", f"{int(lock_wait_ms)}ms", True))
    if index_memory_mb is not None:
        settings.append(func.set_config("maintenance_work_mem", f"{int(index_memory_mb)}MB", True))
    return select(*settings)


def cluster_memories() -> TextClause:
    """Rewrite the table in :data:`CLUSTER_INDEX` order (and rebuild its indexes). Holds an
    ACCESS EXCLUSIVE lock on ``memories`` until the transaction ends."""
    return text(f"CLUSTER memories USING {CLUSTER_INDEX}")


def analyze_memories() -> TextClause:
    """Fresh planner statistics (the rewrite changes the physical correlation)."""
    return text("ANALYZE memories")
