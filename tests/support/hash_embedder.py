"""A deterministic embedder for tests: no model, still a real vector path."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence


class HashEmbedder:
    """Deterministic bag-of-words vectors: no model, still a real vector path."""

    def __init__(self, dim: int = 384, name: str = "test/hash-embedder"):
        self._dim = dim
        self._name = name

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self._dim
            for word in text.lower().split():
                h = int(
                    hashlib.blake2b(word.strip(".,?!:;").encode(), digest_size=8).hexdigest(), 16
                )
                vec[h % self._dim] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out
