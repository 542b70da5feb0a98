"""The MemoryStore's pure core: values and rules, tested without a database or a model.

``types`` (scopes, kinds, candidates, memories, requests), ``caller`` (the one verified
identity), ``recall`` (precedence, ordering, limits, budget, rendering), ``ranking`` and
``judge`` (fusion and the relevance judge's maths), ``idempotency`` (what a repeated request
finds). Nothing here imports SQLAlchemy, psycopg or onnxruntime (import-linter checks it).
"""

from __future__ import annotations

__all__: list[str] = []
