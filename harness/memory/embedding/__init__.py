"""The embedding model side: the ``Embedder`` protocol, fastembed, the int8 query copy, the
query-vector cache and batcher, and which model a store opens with. No database code here."""

from __future__ import annotations

__all__: list[str] = []
