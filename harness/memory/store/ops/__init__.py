"""The store's operations as generators of SQL steps (see :mod:`..executors`): memories and
the write path, recall's retrieval, vectors, run records, status and the table's layout."""

from __future__ import annotations

__all__: list[str] = []
