"""What both store facades decide when connecting: URL, pool options, embedder (no IO here
except what the embedded default and model loading do, which callers run off the loop)."""

from __future__ import annotations

import select
import warnings
from dataclasses import dataclass
from typing import Any

import psycopg
from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.pool import PoolProxiedConnection

from harness.memory.embedding.embedder import Embedder, EmbedderChoice
from harness.memory.embedding.model_choice import choose_model
from harness.memory.store.db import normalize_url
from harness.settings import Settings

__all__ = [
    "AUTO",
    "POOL_RECYCLE_S",
    "EmbedderPick",
    "engine_options",
    "pick_embedder",
    "resolve_url",
    "watch_pooled_connections",
]

#: Pooled connections older than this are replaced at checkout: a connection a firewall or
#: load balancer dropped without a word (nothing to see on its socket) lives at most this long.
POOL_RECYCLE_S = 300

#: Where ``poll`` exists, a pooled connection's socket is looked at instead of pinging it.
_CAN_POLL = hasattr(select, "poll")


class _Auto:
    def __repr__(self) -> str:
        return "AUTO"


#: Sentinel: load the embedder from settings.
AUTO: Any = _Auto()


def resolve_url(url: str | None, settings: Settings) -> tuple[str, bool]:
    """The psycopg 3 URL to use and whether it is the embedded server (started if needed)."""
    raw_url = url or settings.database_url_value
    embedded = raw_url is None
    if raw_url is None:
        from harness.memory.store.embedded import embedded_url

        raw_url = embedded_url(settings.home)
    return normalize_url(raw_url), embedded


def engine_options(settings: Settings, url: str | None = None) -> dict[str, Any]:
    """Pool and session settings shared by the sync and asyncio engines.

    ``options`` given here replaces the URL's: the operator's (e.g. a search_path) are kept.
    """
    url_options: Any = make_url(url).query.get("options") if url else None
    if isinstance(url_options, tuple):
        url_options = " ".join(url_options)
    return {
        "pool_size": settings.pool_size,
        "max_overflow": settings.pool_size,
        # A round trip per checkout otherwise; see watch_pooled_connections.
        "pool_pre_ping": not _CAN_POLL,
        "pool_recycle": POOL_RECYCLE_S,
        "pool_timeout": 10,
        "connect_args": {
            "connect_timeout": 5,
            "options": (f"{url_options} " if url_options else "")
            + f"-c statement_timeout={settings.statement_timeout_ms} "
            f"-c lock_timeout={settings.lock_timeout_ms}",
        },
    }


def watch_pooled_connections(engine: Engine) -> None:
    """Replace, at checkout, a pooled connection whose server has hung up (restart, crash,
    ``pg_terminate_backend``, idle timeout): side effect, a listener on ``engine``'s pool.

    An idle connection has nothing to read; a server that ends it sends a notice or closes the
    socket, which a zero-timeout ``poll`` sees without a round trip (``pool_pre_ping`` costs
    one per checkout). SQLAlchemy then discards it and checks out another, reconnecting.
    Pass ``AsyncEngine.sync_engine`` for an asyncio engine.
    """
    if _CAN_POLL:
        event.listen(engine, "checkout", _drop_if_hung_up)


def _drop_if_hung_up(dbapi_connection: Any, record: Any, proxy: PoolProxiedConnection) -> None:
    try:
        fd = proxy.driver_connection.fileno()  # type: ignore[union-attr]
    except psycopg.Error as exc:
        raise DisconnectionError("the pooled connection is closed") from exc
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    if poller.poll(0):
        raise DisconnectionError("the server ended this pooled connection")


@dataclass(frozen=True)
class EmbedderPick:
    """The embedder a store uses, why it is lexical-only if so, and where the model came from."""

    embedder: Embedder | None
    reason: str | None
    choice: EmbedderChoice | None

    def warn_if_lexical(self, settings: Settings) -> None:
        """Once, through one channel; an explicit ``embedder=None`` is a choice, not news."""
        if self.choice is not None and self.embedder is None:
            warnings.warn(
                self.choice.lexical_message(settings.embed_model), RuntimeWarning, stacklevel=3
            )


def pick_embedder(embedder: Embedder | None, settings: Settings, *, embedded: bool) -> EmbedderPick:
    """Resolve ``AUTO`` (loads the model: blocking) or take the caller's embedder/None."""
    if embedder is AUTO:
        choice = choose_model(settings, embedded=embedded)
        return EmbedderPick(choice.embedder, choice.reason, choice)
    if embedder is None:
        return EmbedderPick(None, "no embedder configured", None)
    return EmbedderPick(embedder, None, None)
