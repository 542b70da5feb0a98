"""Embedders: the Protocol, the fastembed implementation, and the loader with lexical fallback."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["Embedder", "FastEmbedder", "load_embedder"]

log = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension."""

    @property
    def model_name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...


class FastEmbedder:
    """fastembed ``TextEmbedding``; loads the ONNX model from ``model_path`` when given."""

    def __init__(self, model_name: str, model_path: Path | None = None, batch_size: int = 64):
        from fastembed import TextEmbedding  # heavy import; only when a model is wanted

        kwargs: dict[str, Any] = {}
        if model_path is not None:
            if not Path(model_path).is_dir():
                raise FileNotFoundError(f"embedding model folder not found: {model_path}")
            kwargs["specific_model_path"] = str(model_path)
        self._model = TextEmbedding(model_name, **kwargs)
        self._model_name = model_name
        self._batch_size = batch_size
        self._dim = len(self.embed(["dimension probe"])[0])

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return [v.tolist() for v in self._model.embed(list(texts), batch_size=self._batch_size)]


def load_embedder(model_name: str, model_path: Path | None) -> tuple[Embedder | None, str | None]:
    """Try to load the configured model. Returns ``(embedder, None)`` or ``(None, reason)``.

    Never raises: a model that cannot be loaded means lexical-only mode, which the caller
    announces once.
    """
    try:
        return FastEmbedder(model_name, model_path), None
    except Exception as exc:  # any loading failure (missing files, no network, bad ONNX)
        return None, f"{type(exc).__name__}: {exc}"
