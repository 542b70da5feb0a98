"""A small LRU of query vectors: an agent often asks the same thing again."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

__all__ = ["QueryVectorCache"]


class QueryVectorCache:
    """Query text and model -> vector, least recently used dropped past ``size``.

    Vectors are kept as float32 arrays (1.5 kB for 384 dimensions), so 1,024 entries stay
    under 2 MB. Thread-safe; ``size`` 0 disables it. Counts hits and misses.
    """

    def __init__(self, size: int = 1024):
        self.size = size
        self.hits = 0
        self.misses = 0
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, model: str, query: str) -> list[float] | None:
        """The cached vector, or ``None`` (a miss is counted)."""
        with self._lock:
            vector = self._vectors.get((model, query))
            if vector is None:
                self.misses += 1
                return None
            self._vectors.move_to_end((model, query))
            self.hits += 1
        values: list[float] = vector.tolist()
        return values

    def put(self, model: str, query: str, vector: list[float]) -> None:
        """Remember ``vector``; idempotent."""
        if self.size <= 0:
            return
        with self._lock:
            self._vectors[(model, query)] = np.asarray(vector, dtype=np.float32)
            self._vectors.move_to_end((model, query))
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
