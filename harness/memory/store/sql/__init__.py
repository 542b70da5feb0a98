"""Every SQL statement of the MemoryStore, as builders that compile without executing.

Tenant is the first filter of every statement that reads or changes memories. One package,
one module per concern: the write path and reads (``memories``), recall (``retrieval``), lessons' events (``lessons``), run
and ingest records (``records``), the MCP server's shared memos (``memos``), read replicas
(``replicas``), row-level security (``security``) and the table's layout (``layout``).
"""

from __future__ import annotations

from harness.memory.store.sql.columns import MEMORY_COLUMNS
from harness.memory.store.sql.layout import *  # noqa: F403
from harness.memory.store.sql.layout import __all__ as _layout_all
from harness.memory.store.sql.lessons import *  # noqa: F403
from harness.memory.store.sql.lessons import __all__ as _lessons_all
from harness.memory.store.sql.memories import *  # noqa: F403
from harness.memory.store.sql.memories import __all__ as _memories_all
from harness.memory.store.sql.memos import *  # noqa: F403
from harness.memory.store.sql.memos import __all__ as _memos_all
from harness.memory.store.sql.records import *  # noqa: F403
from harness.memory.store.sql.records import __all__ as _records_all
from harness.memory.store.sql.replicas import *  # noqa: F403
from harness.memory.store.sql.replicas import __all__ as _replicas_all
from harness.memory.store.sql.retrieval import *  # noqa: F403
from harness.memory.store.sql.retrieval import __all__ as _recall_all
from harness.memory.store.sql.security import *  # noqa: F403
from harness.memory.store.sql.security import __all__ as _security_all

__all__ = [
    "MEMORY_COLUMNS",
    *_layout_all,
    *_lessons_all,
    *_memories_all,
    *_memos_all,
    *_recall_all,
    *_records_all,
    *_replicas_all,
    *_security_all,
]
