"""How large each caller's relevance pool was, remembered briefly: recall probes the pool to
choose exact or HNSW ranking, and a pool's size moves slowly, so the probe's round trip is
spent once per caller and interval rather than on every recall."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

__all__ = ["PoolSizes"]


class PoolSizes:
    """Caller -> "is the pool large", for ``ttl_s`` seconds, at most ``size`` callers (LRU).

    A stale answer only picks the slower of two correct strategies for up to ``ttl_s``
    (both rank the same readable rows). Thread-safe; ``ttl_s`` 0 disables it.
    """

    def __init__(
        self, ttl_s: float = 30.0, size: int = 4096, clock: Callable[[], float] = time.monotonic
    ):
        self.ttl_s = ttl_s
        self.size = size
        self._clock = clock
        self._seen: OrderedDict[Hashable, tuple[float, bool]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, caller: Hashable) -> bool | None:
        """The remembered answer, or None when unknown or older than ``ttl_s``."""
        with self._lock:
            seen = self._seen.get(caller)
            if seen is None or self._clock() - seen[0] >= self.ttl_s:
                return None
            self._seen.move_to_end(caller)
            return seen[1]

    def put(self, caller: Hashable, large: bool) -> None:
        """Remember ``large`` for ``caller`` from now on."""
        if self.ttl_s <= 0:
            return
        with self._lock:
            self._seen[caller] = (self._clock(), large)
            self._seen.move_to_end(caller)
            while len(self._seen) > self.size:
                self._seen.popitem(last=False)

    def clear(self) -> None:
        """Forget every caller (e.g. after a bulk load or delete)."""
        with self._lock:
            self._seen.clear()
