"""The MemoryStore's IO edge: the only package that imports SQLAlchemy or psycopg.

``sync`` and ``aio`` are the two facades (thin executors); ``ops`` the operations, each a
generator of SQL steps written once; ``sql`` every statement and the schema; ``executors``
runs an operation on a sync or an asyncio connection; ``connect``, ``db``, ``embedded``,
``migrate``, ``rls``, ``read_routing`` and ``replicas`` the connection plumbing. Other
packages import :class:`harness.memory.MemoryStore` and call its named operations.
"""

from __future__ import annotations

__all__: list[str] = []
