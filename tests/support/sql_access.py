"""Raw SQL on a store's database, for tests that check what the public API cannot show.

The store is closed (no connection or transaction leaves it); these open their own short-lived
connection to the same database, as the application role (row-level security applies) exactly
as the store's pooled connections do, admitting one tenant's rows, none, or every tenant's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harness.memory.store import sql
from harness.memory.store.db import translate_errors
from harness.memory.store.rls import assume_app_role

__all__ = ["all_tenants", "as_tenant"]


@contextlib.contextmanager
def _connection(store: Any) -> Iterator[Connection]:
    engine = sa.create_engine(store.url, poolclass=sa.NullPool)
    sa.event.listen(engine, "connect", assume_app_role)
    try:
        # driver errors come out as the store's own (StoreError, StoreUnavailable), as there
        with translate_errors("test sql"), engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


@contextlib.contextmanager
def as_tenant(store: Any, tenant: str | None = None) -> Iterator[Connection]:
    """One transaction as the application role admitting ``tenant``'s rows (None: no
    tenant's rows at all). Commits when the block ends without an error."""
    with _connection(store) as conn, conn.begin():
        if tenant is not None:
            conn.execute(sql.set_tenant(tenant))
        yield conn


@contextlib.contextmanager
def all_tenants(store: Any, *, as_owner: bool = False) -> Iterator[Connection]:
    """One transaction over every tenant's rows (the store's maintenance transaction);
    ``as_owner`` runs it as the login itself (schema changes). Commits at the end."""
    with _connection(store) as conn, conn.begin():
        if as_owner:
            conn.execute(sql.reset_local_role())
        conn.execute(sql.all_tenants())
        yield conn
