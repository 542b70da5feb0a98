"""Say a recurring warning once per key and interval, counting what was held back."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

__all__ = ["OncePerInterval"]


class OncePerInterval:
    """Decides when a warning that repeats for the same key may be logged again.

    :meth:`hit` records one occurrence and answers how many occurrences (this one included)
    the caller should report now, or ``None`` while the key is still quiet. At most
    ``max_keys`` keys are remembered (least recently hit forgotten first). Thread-safe.
    """

    def __init__(
        self,
        interval_s: float = 300.0,
        *,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.interval_s = interval_s
        self.max_keys = max_keys
        self._clock = clock
        # key -> (when last reported, occurrences since)
        self._keys: OrderedDict[Hashable, tuple[float, int]] = OrderedDict()
        self._lock = threading.Lock()

    def hit(self, key: Hashable) -> int | None:
        """Record one occurrence of ``key``; the count to report now, or ``None``."""
        now = self._clock()
        with self._lock:
            last = self._keys.pop(key, None)
            if last is not None and now - last[0] < self.interval_s:
                self._keys[key] = (last[0], last[1] + 1)
                return None
            held_back = last[1] if last is not None else 0
            self._keys[key] = (now, 0)
            while len(self._keys) > self.max_keys:
                self._keys.popitem(last=False)
            return held_back + 1

    def mute(self, key: Hashable) -> None:
        """Treat ``key`` as just reported: quiet for one interval (for internal probes)."""
        with self._lock:
            self._keys.pop(key, None)
            self._keys[key] = (self._clock(), 0)
