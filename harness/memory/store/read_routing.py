"""Read replicas, the IO part: replica engines, the start-up probe, reads routed to a replica
with the primary as the fallback, and the primary's WAL position noted after each commit.

:class:`SyncReads` serves :class:`~harness.memory.store.sync.MemoryStore`, :class:`AsyncReads`
the asyncio store; the rules live in :mod:`harness.memory.store.replicas`. Without
``HARNESS_DATABASE_READ_URL`` both only run reads on the primary and note nothing.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from harness.errors import StoreMisconfigured, StoreUnavailable
from harness.memory.store import sql
from harness.memory.store.connect import engine_options, watch_pooled_connections
from harness.memory.store.db import URL_SETTING, redact_url, translate_errors
from harness.memory.store.executors import Op, run_async, run_sync
from harness.memory.store.replicas import READ_URL_SETTING, ReadRouter, lsn_int, replica_read
from harness.memory.store.rls import assume_app_role
from harness.settings import Settings

__all__ = ["AsyncReads", "SyncReads", "read_router"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: libpq's shortest connect timeout: a replica that vanished costs one read this long at most
#: per retry (the others read the primary meanwhile).
REPLICA_CONNECT_TIMEOUT_S = 2
#: What a failing replica may raise: the read then goes to the primary.
_REPLICA_FAULTS = (sa_exc.DBAPIError, sa_exc.TimeoutError)


def read_router(settings: Settings, urls: Sequence[str]) -> ReadRouter:
    """The router for these replica URLs, with the settings' wait and retry pauses."""
    wait_ms = settings.replica_wait_ms
    if settings.statement_timeout_ms:  # the wait is one statement: it must not be cancelled
        wait_ms = min(wait_ms, settings.statement_timeout_ms // 2)
    return ReadRouter(
        urls,
        wait_ms=wait_ms,
        retry_s=settings.replica_retry_s,
        retry_max_s=max(settings.replica_retry_s, settings.replica_retry_max_s),
    )


def _replica_options(settings: Settings, url: str) -> dict[str, Any]:
    options = engine_options(settings, url)
    options["connect_args"] = {
        **options["connect_args"],
        "connect_timeout": REPLICA_CONNECT_TIMEOUT_S,
    }
    return options


def _start_problem(url: str, exc: BaseException) -> None:
    """At start: a wrong configuration raises (naming the setting); an unreachable replica is
    a warning, and reads go to the primary until it answers."""
    if isinstance(exc, StoreMisconfigured):
        # The diagnosis names the primary's setting; this URL came from the replicas' one.
        fixed = str(exc).replace(URL_SETTING, READ_URL_SETTING)
        raise StoreMisconfigured(f"{READ_URL_SETTING} {redact_url(url)}: {fixed}") from exc
    warnings.warn(
        f"{READ_URL_SETTING}: replica {redact_url(url)} cannot be reached ({exc}); reads go to "
        "the primary until it answers (tried again with backoff)",
        RuntimeWarning,
        stacklevel=4,
    )


def _replica_fault(router: ReadRouter, index: int, exc: BaseException) -> None:
    """A replica read failed: a query cancelled by a recovery conflict (SQLSTATE class 40,
    replay had to remove what the query needed) is the replica working as designed, so only
    this read goes to the primary; anything else pauses the replica."""
    sqlstate = getattr(getattr(exc, "orig", None), "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate.startswith("40"):
        router.conflicted(index)
    else:
        router.failed(index, exc)


def _log_role(url: str, standby: object) -> None:
    if not standby:
        log.info("read URL %s is not a standby: it serves reads as is", redact_url(url))


class SyncReads:
    """Reads on replicas (primary as fallback) and commit positions, for the sync store."""

    def __init__(
        self, primary: Engine, router: ReadRouter, urls: Sequence[str], settings: Settings
    ):
        self.primary = primary
        self.router = router
        self.urls = tuple(urls)
        self.engines: list[Engine] = []
        for url in self.urls:
            engine = sa.create_engine(url, **_replica_options(settings, url))
            sa.event.listen(engine, "connect", assume_app_role)
            watch_pooled_connections(engine)
            self.engines.append(engine)

    def probe(self) -> None:
        """Connect to each replica once (warming its pool). Side effect: a warning per replica
        that cannot be reached (it pauses, reads go to the primary).

        Raises:
            StoreMisconfigured: a replica refuses the login, database or privileges.
        """
        for index, (url, engine) in enumerate(zip(self.urls, self.engines, strict=True)):
            try:
                with translate_errors("connect"), engine.connect() as conn:
                    _log_role(url, conn.execute(sql.in_recovery()).scalar())
            except (StoreMisconfigured, StoreUnavailable) as exc:
                _start_problem(url, exc)
                self.router.failed(index, exc, during_read=False)

    def read(self, action: str, tenant: str | None, make_op: Callable[[], Op[T]]) -> T:
        """Run the read ``make_op()`` on a replica that has replayed this tenant's writes, else
        on the primary (same tenant admission either way). Replica failures never reach the
        caller; the primary's are translated as usual."""
        needed = self.router.needed(tenant) if self.router.active else None
        target = self.router.choose(needed) if self.router.active else None
        if target is not None:
            index, known = target
            op = replica_read(tenant, needed or 0, known, self.router.wait_ms, make_op)
            try:
                with self.engines[index].begin() as conn:
                    routed = run_sync(conn, op)
            except _REPLICA_FAULTS as exc:
                _replica_fault(self.router, index, exc)
            else:
                if not routed.lagging:
                    self.router.served(index, routed.replayed)
                    return cast(T, routed.value)
                self.router.lagged(index, routed.replayed)
        with translate_errors(action), self.primary.begin() as conn:
            if tenant is not None:
                conn.execute(sql.set_tenant(tenant))
            return run_sync(conn, make_op())

    def note_commit(self, conn: Connection, tenants: Iterable[str | None]) -> None:
        """After a commit on ``conn``: remember the primary's WAL position for ``tenants``."""
        if not self.router.active:
            return
        try:
            lsn: int | None = lsn_int(conn.execute(sql.commit_lsn()).scalar_one())
            conn.rollback()
        except _REPLICA_FAULTS as exc:  # committed already: never report the write as failed
            log.warning(
                "WAL position after a write unknown (%s); its tenant reads the primary", exc
            )
            lsn = None
        self.router.note_write(tenants, lsn)

    def dispose(self) -> None:
        """Release every replica connection. Idempotent."""
        for engine in self.engines:
            engine.dispose()


class AsyncReads:
    """:class:`SyncReads` for the asyncio store."""

    def __init__(
        self, primary: AsyncEngine, router: ReadRouter, urls: Sequence[str], settings: Settings
    ):
        self.primary = primary
        self.router = router
        self.urls = tuple(urls)
        self.engines: list[AsyncEngine] = []
        for url in self.urls:
            engine = create_async_engine(url, **_replica_options(settings, url))
            sa.event.listen(engine.sync_engine, "connect", assume_app_role)
            watch_pooled_connections(engine.sync_engine)
            self.engines.append(engine)

    async def probe(self) -> None:
        """As :meth:`SyncReads.probe`."""
        for index, (url, engine) in enumerate(zip(self.urls, self.engines, strict=True)):
            try:
                with translate_errors("connect"):
                    async with engine.connect() as conn:
                        _log_role(url, (await conn.execute(sql.in_recovery())).scalar())
            except (StoreMisconfigured, StoreUnavailable) as exc:
                _start_problem(url, exc)
                self.router.failed(index, exc, during_read=False)

    async def read(self, action: str, tenant: str | None, make_op: Callable[[], Op[T]]) -> T:
        """As :meth:`SyncReads.read`."""
        needed = self.router.needed(tenant) if self.router.active else None
        target = self.router.choose(needed) if self.router.active else None
        if target is not None:
            index, known = target
            op = replica_read(tenant, needed or 0, known, self.router.wait_ms, make_op)
            try:
                async with self.engines[index].begin() as conn:
                    routed = await run_async(conn, op)
            except _REPLICA_FAULTS as exc:
                _replica_fault(self.router, index, exc)
            else:
                if not routed.lagging:
                    self.router.served(index, routed.replayed)
                    return cast(T, routed.value)
                self.router.lagged(index, routed.replayed)
        with translate_errors(action):
            async with self.primary.begin() as conn:
                if tenant is not None:
                    await conn.execute(sql.set_tenant(tenant))
                return await run_async(conn, make_op())

    async def note_commit(self, conn: AsyncConnection, tenants: Iterable[str | None]) -> None:
        """As :meth:`SyncReads.note_commit`."""
        if not self.router.active:
            return
        try:
            lsn: int | None = lsn_int((await conn.execute(sql.commit_lsn())).scalar_one())
            await conn.rollback()
        except _REPLICA_FAULTS as exc:
            log.warning(
                "WAL position after a write unknown (%s); its tenant reads the primary", exc
            )
            lsn = None
        self.router.note_write(tenants, lsn)

    async def dispose(self) -> None:
        """As :meth:`SyncReads.dispose`."""
        for engine in self.engines:
            await engine.dispose()
