"""Storing each scope's memories together (PostgreSQL's ``CLUSTER``), and measuring how
scattered they are. Operations for the store facades; the report is pure data."""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory.store import sql
from harness.memory.store.executors import Op

__all__ = ["ClusterReport", "Layout", "cluster_action", "cluster_op", "layout_op"]


@dataclass(frozen=True)
class Layout:
    """Rows of ``memories`` and the heap pages they sit on, summed per (tenant, scope, scope id).

    ``rows_per_page`` near 1 means a scope's rows are scattered one per page (a recall of the
    scope reads about a page per row); several rows per page means they are stored together.
    """

    rows: int
    pages: int

    @property
    def rows_per_page(self) -> float:
        return self.rows / self.pages if self.pages else 0.0


@dataclass(frozen=True)
class ClusterReport:
    """What :meth:`MemoryStore.cluster` did: the layout before and after, and how long it took."""

    before: Layout
    after: Layout
    seconds: float


def cluster_action(lock_wait_s: float) -> str:
    """How a failed cluster names itself in its error."""
    return f"cluster memories (waiting at most {lock_wait_s:g} s for the table's lock)"


def layout_op() -> Op[Layout]:
    """Read-only: the current :class:`Layout` (a scan of the whole table, so without the
    statement timeout)."""
    yield sql.maintenance_settings(None, None)
    return (yield from _measure())


def cluster_op(lock_wait_ms: int, index_memory_mb: int | None) -> Op[tuple[Layout, Layout]]:
    """Measure, rewrite the table in scope order, refresh statistics, measure again (in the
    caller's maintenance transaction, run as the table's owner)."""
    yield sql.maintenance_settings(lock_wait_ms, index_memory_mb)
    before = yield from _measure()
    yield sql.cluster_memories()
    yield sql.analyze_memories()
    after = yield from _measure()
    return before, after


def _measure() -> Op[Layout]:
    row = (yield sql.scope_pages()).mappings().one()
    return Layout(rows=int(row["rows"]), pages=int(row["pages"]))
