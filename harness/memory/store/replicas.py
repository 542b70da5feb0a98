"""Read replicas, the pure part: which server answers a read, and what it must have replayed.

``HARNESS_DATABASE_READ_URL`` names one or more streaming replicas; reads go there, every write
to the primary. Read-your-writes: after each committed write the store remembers the primary's
WAL position (per tenant); a read waits, bounded, until the chosen replica has replayed that
far, and otherwise reads the primary. A replica that fails is left alone for a while (the pause
doubles per failure, up to a maximum) and then tried by one read at a time until it answers.

Everything here is state and rules without IO: :mod:`harness.memory.store.read_routing` runs the
statements on real connections for both store facades.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from harness.errors import InvalidInput
from harness.memory.store import sql
from harness.memory.store.db import normalize_url, redact_url
from harness.memory.store.executors import Op

__all__ = [
    "READ_URL_SETTING",
    "ReadRouter",
    "ReadRouting",
    "ReplicaState",
    "Routed",
    "lsn_int",
    "lsn_text",
    "parse_read_urls",
    "replica_read",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

READ_URL_SETTING = "HARNESS_DATABASE_READ_URL"

#: A comma (or whitespace) separates two URLs only where the next URL's scheme starts, so a
#: comma inside one URL (a libpq multi-host list, a query value) stays part of it.
_SEPARATOR = re.compile(r"[,\s]+(?=postgres(?:ql)?(?:\+[a-z0-9_]+)?://)", re.IGNORECASE)
_LSN = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")


def parse_read_urls(text: str | None) -> tuple[str, ...]:
    """The replica URLs of ``HARNESS_DATABASE_READ_URL``: comma-separated, each normalised to
    psycopg 3, duplicates dropped, order kept. Empty or unset: no replicas.

    Raises:
        InvalidInput: a part is not a URL the store can use (names the setting; the password
            is never echoed).
    """
    if text is None or not text.strip():
        return ()
    urls: list[str] = []
    for part in _SEPARATOR.split(text.strip()):
        part = part.strip().strip(",").strip()
        if not part:
            continue
        url = normalize_url(part, setting=READ_URL_SETTING)
        if url not in urls:
            urls.append(url)
    if not urls:
        raise InvalidInput(f"{READ_URL_SETTING}: no URL given", fields=(READ_URL_SETTING,))
    return tuple(urls)


def lsn_int(text: str) -> int:
    """A ``pg_lsn`` (``'16/B374D848'``) as a number that orders like the WAL.

    Raises:
        ValueError: not an LSN.
    """
    match = _LSN.match(text.strip())
    if match is None:
        raise ValueError(f"not a WAL position: {text!r}")
    return (int(match.group(1), 16) << 32) | int(match.group(2), 16)


def lsn_text(value: int) -> str:
    """The ``pg_lsn`` text of a WAL position (inverse of :func:`lsn_int`)."""
    if not 0 <= value < 1 << 64:
        raise ValueError(f"not a WAL position: {value}")
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


@dataclass(frozen=True)
class Routed(Generic[T]):
    """What a read on a replica gave: its value, or ``lagging`` when the replica did not
    replay the needed position in time (then ``value`` is None and the primary answers)."""

    value: T | None
    replayed: int
    lagging: bool


def replica_read(
    tenant: str | None,
    needed: int,
    known_replayed: int,
    wait_ms: int,
    make_op: Callable[[], Op[T]],
) -> Op[Routed[T]]:
    """A read operation as run on a replica: first (when the replica is not known to be far
    enough) wait, bounded, until it has replayed ``needed``; then admit ``tenant``'s rows and
    run the read. One round trip more than on the primary, none once the replica is known to
    be caught up."""
    replayed = known_replayed
    if needed > known_replayed:
        replayed = lsn_int((yield sql.replay_reached(lsn_text(needed), wait_ms)).scalar_one())
        if replayed < needed:
            return Routed(None, replayed, lagging=True)
    if tenant is not None:
        yield sql.set_tenant(tenant)
    return Routed((yield from make_op()), replayed, lagging=False)


@dataclass(frozen=True)
class ReplicaState:
    """One replica as the router sees it (URL without its password)."""

    url: str
    up: bool
    failures: int
    retry_in_s: float
    reads: int
    last_error: str | None


@dataclass(frozen=True)
class ReadRouting:
    """Where reads went: per replica, the primary, and why reads fell back to the primary
    (``down``: no replica available; ``error``: the replica failed mid-read; ``lag``: it did
    not replay the caller's writes in time; ``conflict``: recovery cancelled the read;
    ``unknown``: a write's position is unknown)."""

    replicas: tuple[ReplicaState, ...]
    primary_reads: int
    fallbacks: Mapping[str, int]
    wait_ms: int


@dataclass
class _Replica:
    url: str
    failures: int = 0
    down_until: float = 0.0
    replayed: int = 0
    reads: int = 0
    last_error: str | None = None


#: A tenant whose last write's position could not be read: its reads go to the primary until
#: any later position is known (a later position covers every earlier commit).
_UNKNOWN = -1


@dataclass
class ReadRouter:
    """The replicas' health and each tenant's read-your-writes position. Thread-safe.

    ``now`` is a monotonic clock in seconds. At most ``max_tenants`` positions are kept; a
    forgotten tenant's position raises the floor every read must reach (safe, never stale).
    """

    urls: Sequence[str]
    wait_ms: int = 150
    retry_s: float = 1.0
    retry_max_s: float = 60.0
    now: Callable[[], float] = time.monotonic
    max_tenants: int = 10_000
    _replicas: list[_Replica] = field(init=False)
    _positions: OrderedDict[str, int] = field(init=False, default_factory=OrderedDict)
    _floor: int = field(init=False, default=0)
    _highest: int = field(init=False, default=0)
    _unknown: set[str] = field(init=False, default_factory=set)
    _next: int = field(init=False, default=0)
    _primary_reads: int = field(init=False, default=0)
    _fallbacks: Counter[str] = field(init=False, default_factory=Counter)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._replicas = [_Replica(redact_url(url)) for url in self.urls]

    @property
    def active(self) -> bool:
        """Whether any replica is configured (else every read is the primary's, untracked)."""
        return bool(self._replicas)

    # --- writes --------------------------------------------------------------------------------

    def note_write(self, tenants: Iterable[str | None], lsn: int | None) -> None:
        """A write of ``tenants`` (None: every tenant, e.g. maintenance) committed at or before
        ``lsn`` (None: its position could not be read)."""
        with self._lock:
            value = _UNKNOWN if lsn is None else lsn
            if lsn is not None:
                self._highest = max(self._highest, lsn)
                self._resolve_unknown()
            for tenant in tenants:
                if tenant is None:
                    self._floor = value if value == _UNKNOWN else max(self._floor, value)
                    continue
                old = self._positions.pop(tenant, 0)
                self._positions[tenant] = value if value == _UNKNOWN else max(old, value)
                if value == _UNKNOWN:
                    self._unknown.add(tenant)
            while len(self._positions) > self.max_tenants:
                gone, forgotten = self._positions.popitem(last=False)
                self._unknown.discard(gone)
                self._floor = (
                    _UNKNOWN
                    if _UNKNOWN in (forgotten, self._floor)
                    else max(self._floor, forgotten)
                )

    def share_position(self, source: str, tenants: Iterable[str]) -> None:
        """``tenants`` were written in ``source``'s transaction (a batch spanning tenants):
        their reads must see its position too."""
        others = [t for t in tenants if t != source]
        if not others or not self._replicas:
            return
        with self._lock:
            position = self._positions.get(source)
        if position is not None:
            self.note_write(others, None if position == _UNKNOWN else position)

    def _resolve_unknown(self) -> None:
        """A position read after an unknown one's commit covers it; the highest position seen
        also covers whatever that tenant had before."""
        if self._floor == _UNKNOWN:
            self._floor = self._highest
        for tenant in self._unknown:
            self._positions[tenant] = self._highest
        self._unknown.clear()

    def needed(self, tenant: str | None) -> int | None:
        """The WAL position a read for ``tenant`` must see; None: only the primary will do."""
        with self._lock:
            own = self._positions.get(tenant, 0) if tenant is not None else 0
            if _UNKNOWN in (own, self._floor):
                return None
            return max(own, self._floor)

    # --- reads ---------------------------------------------------------------------------------

    def choose(self, needed: int | None) -> tuple[int, int] | None:
        """The replica to try (index, the position it is known to have replayed), or None:
        read the primary. Healthy replicas take turns; a failed one, once its pause is over,
        is tried by one read while the others keep away."""
        with self._lock:
            if not self._replicas:
                return None
            if needed is None:
                self._to_primary("unknown")
                return None
            now = self.now()
            count = len(self._replicas)
            for step in range(count):
                index = (self._next + step) % count
                replica = self._replicas[index]
                if replica.down_until <= now:
                    if replica.failures:
                        replica.down_until = now + self._pause(replica.failures)
                    self._next = index + 1
                    return index, replica.replayed
            self._to_primary("down")
            return None

    def _to_primary(self, reason: str) -> None:
        self._primary_reads += 1
        self._fallbacks[reason] += 1

    def _pause(self, failures: int) -> float:
        return float(min(self.retry_s * 2 ** min(failures - 1, 32), self.retry_max_s))

    def served(self, index: int, replayed: int) -> None:
        """The replica answered a read."""
        with self._lock:
            replica = self._replicas[index]
            if replica.failures:
                log.warning("read replica %s answers again; reads go to it", replica.url)
            replica.failures = 0
            replica.down_until = 0.0
            replica.replayed = max(replica.replayed, replayed)
            replica.reads += 1

    def lagged(self, index: int, replayed: int) -> None:
        """The replica did not replay the needed position within ``wait_ms``: the primary
        answers this read."""
        with self._lock:
            replica = self._replicas[index]
            replica.replayed = max(replica.replayed, replayed)
            replica.failures = 0
            replica.down_until = 0.0
            self._to_primary("lag")
        log.info(
            "read replica %s lags more than %d ms; read the primary", replica.url, self.wait_ms
        )

    def conflicted(self, index: int) -> None:
        """The replica cancelled the read for a recovery conflict: the primary answers this
        one; the replica stays up."""
        with self._lock:
            self._to_primary("conflict")
        log.info(
            "read on replica %s cancelled by recovery; read the primary", self._replicas[index].url
        )

    def failed(self, index: int, error: BaseException, *, during_read: bool = True) -> float:
        """The replica could not answer (unreachable, gone, or a server error): the read goes
        to the primary, the replica pauses (doubling per failure). Returns the pause in
        seconds. Logs a warning when an outage starts during a read (the start-up probe warns
        itself)."""
        with self._lock:
            replica = self._replicas[index]
            replica.failures += 1
            pause = self._pause(replica.failures)
            replica.down_until = self.now() + pause
            replica.replayed = 0  # another server may answer at that address next time
            replica.last_error = " ".join(str(error).split())[:300]
            if during_read:
                self._to_primary("error")
            first = replica.failures == 1
        if during_read and first:
            log.warning(
                "read replica %s failed, reads go to the primary (tried again in %.1fs): %s",
                replica.url,
                pause,
                replica.last_error,
            )
        else:
            log.info("read replica %s still failing (next try in %.1fs)", replica.url, pause)
        return pause

    def snapshot(self) -> ReadRouting:
        """Where reads went so far, and each replica's health."""
        with self._lock:
            now = self.now()
            return ReadRouting(
                replicas=tuple(
                    ReplicaState(
                        url=r.url,
                        up=r.failures == 0,
                        failures=r.failures,
                        retry_in_s=max(0.0, r.down_until - now) if r.failures else 0.0,
                        reads=r.reads,
                        last_error=r.last_error,
                    )
                    for r in self._replicas
                ),
                primary_reads=self._primary_reads,
                fallbacks=dict(self._fallbacks),
                wait_ms=self.wait_ms,
            )
