"""Embedders: the Protocol, the fastembed implementation, and the loader with lexical fallback.

Where the model comes from is decided once, fast, in this order (:func:`choose_embedder`):
``HARNESS_EMBED_MODEL_PATH``; the folder this home last used (its ``config.json``); fastembed's
local cache; a download, attempted only when the model hub answers within
:data:`HUB_PROBE_TIMEOUT_S`. Otherwise the store runs lexical-only, and the caller says so once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from harness.memory.embedding.quantize import MODEL_FILE, int8_copy

__all__ = [
    "HUB_PROBE_TIMEOUT_S",
    "Embedder",
    "EmbedderChoice",
    "FastEmbedder",
    "QueryEmbedder",
    "choose_embedder",
    "hub_reachable",
    "load_embedder",
]

log = logging.getLogger(__name__)

#: Upper bound of the "is the model hub reachable?" probe; the whole decision stays under 2 s.
HUB_PROBE_TIMEOUT_S = 1.5
_DEFAULT_HUB = "https://huggingface.co"


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


@runtime_checkable
class QueryEmbedder(Protocol):
    """An embedder with its own path for search queries (e.g. a faster model variant whose
    vectors are compared with the memories' as if the model's own)."""

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """One query vector per text, in order."""
        ...


@contextlib.contextmanager
def _quiet_fastembed() -> Iterator[None]:
    """fastembed logs every failed source at ERROR level; the caller reports the outcome once."""
    from loguru import logger

    logger.disable("fastembed")
    try:
        yield
    finally:
        logger.enable("fastembed")


class FastEmbedder:
    """fastembed ``TextEmbedding``; loads the ONNX model from ``model_path`` when given.

    ``local_files_only`` restricts loading to fastembed's cache (no network). ``threads`` is
    onnxruntime's thread count per call (None: its default, one per core). With
    ``query_model_path`` (the model's int8 copy, :mod:`quantize`) :meth:`embed_queries` runs
    there; memories are always embedded by the model itself.
    """

    def __init__(
        self,
        model_name: str,
        model_path: Path | None = None,
        batch_size: int = 64,
        *,
        local_files_only: bool = False,
        threads: int | None = None,
        query_model_path: Path | None = None,
    ):
        from fastembed import TextEmbedding  # heavy import; only when a model is wanted

        kwargs: dict[str, Any] = {}
        if model_path is not None:
            if not Path(model_path).is_dir():
                raise FileNotFoundError(f"embedding model folder not found: {model_path}")
            kwargs["specific_model_path"] = str(model_path)
        if local_files_only:
            kwargs["local_files_only"] = True
        with _quiet_fastembed():
            self._model = TextEmbedding(model_name, threads=threads, **kwargs)
            self._query_model = None
            if query_model_path is not None:
                if not Path(query_model_path).is_dir():
                    raise FileNotFoundError(f"query model folder not found: {query_model_path}")
                self._query_model = TextEmbedding(
                    model_name, threads=threads, specific_model_path=str(query_model_path)
                )
        self._model_name = model_name
        self._batch_size = batch_size
        #: onnxruntime's threads per call (None: its default).
        self.threads = threads
        #: True when queries run through the model's int8 copy (:mod:`quantize`).
        self.int8_queries = self._query_model is not None
        self._dim = len(self.embed(["dimension probe"])[0])

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Texts are batched shortest first: a batch is padded
        to its longest text, so batching like with like wastes less of the model's work."""
        if not texts:
            return []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        batches = self._model.embed([texts[i] for i in order], batch_size=self._batch_size)
        for i, vector in zip(order, batches, strict=True):
            vectors[i] = vector.tolist()
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """One query vector per text, in order: through the int8 copy when there is one, one
        text per model call. Its activations are quantized with one scale per call, so a
        batch would make a query's vector depend on the queries it was batched with; alone,
        the same text always gets the same vector."""
        if self._query_model is None:
            return self.embed(texts)
        return [vector.tolist() for text in texts for vector in self._query_model.embed([text])]


@dataclass(frozen=True)
class EmbedderChoice:
    """The outcome of :func:`choose_embedder`.

    ``source`` says where a loaded model came from (``HARNESS_EMBED_MODEL_PATH``,
    ``remembered``, ``fastembed cache``, ``download``); ``reason`` why none was loaded.
    """

    embedder: Embedder | None
    source: str | None = None
    model_path: Path | None = None
    reason: str | None = None
    #: Why the int8 copy of the model is not used although it was asked for (None: it is, or
    #: it was not asked for).
    int8_fallback: str | None = None

    def lexical_message(self, model_name: str) -> str:
        """One message: lexical-only, why, how to get a model and how to point at it."""
        return (
            f"harness-memory: no embedding model ({self.reason}); running lexical-only "
            "(full-text search, no vector recall). To enable vectors, get the model folder "
            f"on a machine with network (`hf download {hub_repo(model_name)} --local-dir "
            "<folder>`), then set HARNESS_EMBED_MODEL_PATH=<folder>."
        )


def hub_repo(model_name: str) -> str:
    """The Hugging Face repository fastembed downloads ``model_name`` from (best effort)."""
    try:
        from fastembed import TextEmbedding

        for entry in TextEmbedding.list_supported_models():
            if entry.get("model") == model_name:
                return str(entry.get("sources", {}).get("hf") or model_name)
    except Exception:  # the hint must never break loading
        log.debug("fastembed model list unavailable", exc_info=True)
    return model_name


def hub_reachable(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether the model hub (``HF_ENDPOINT`` or huggingface.co) answers within ``timeout_s``.

    False at once when ``HF_HUB_OFFLINE`` is set. Name resolution is bounded too: the probe
    runs in a daemon thread that is abandoned at the deadline.
    """
    return _start_hub_probe(timeout_s)()


def _start_hub_probe(timeout_s: float) -> Callable[[], bool]:
    """Start probing the hub in the background; the returned call waits for the answer."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES", "ON"}:
        return lambda: False
    import httpx

    endpoint = os.environ.get("HF_ENDPOINT", "").strip() or _DEFAULT_HUB
    deadline = time.monotonic() + timeout_s
    done = threading.Event()
    answered: list[bool] = []

    def probe() -> None:
        try:
            httpx.head(endpoint, timeout=timeout_s)
            answered.append(True)
        except httpx.HTTPError:
            pass
        finally:
            done.set()

    threading.Thread(target=probe, name="harness-hub-probe", daemon=True).start()

    def wait() -> bool:
        done.wait(max(0.0, deadline - time.monotonic()))
        return bool(answered)

    return wait


def _try(
    model_name: str,
    model_path: Path | None,
    *,
    local_files_only: bool = False,
    threads: int | None = None,
    query_model_path: Path | None = None,
) -> tuple[Embedder | None, str | None]:
    try:
        embedder = FastEmbedder(
            model_name,
            model_path,
            local_files_only=local_files_only,
            threads=threads,
            query_model_path=query_model_path,
        )
        return embedder, None
    except Exception as exc:  # any loading failure (missing files, no network, bad ONNX)
        return None, f"{type(exc).__name__}: {exc}"


def _try_folder(
    model_name: str, folder: Path, *, threads: int | None, int8_cache: Path | None
) -> tuple[Embedder | None, str | None, str | None]:
    """Load from ``folder``, with its int8 copy for queries when ``int8_cache`` is given and
    the copy can be made and loaded; returns (embedder, reason, why the int8 copy is not
    used)."""
    fallback = None
    if int8_cache is not None and (folder / MODEL_FILE).is_file():
        try:
            copy = int8_copy(folder, int8_cache)
        except Exception as exc:  # no onnx package, read-only cache, a model it cannot quantize
            fallback = f"{type(exc).__name__}: {exc}"
        else:
            embedder, reason = _try(model_name, folder, threads=threads, query_model_path=copy)
            if embedder is not None:
                return embedder, None, None
            fallback = reason
        log.warning(
            "the int8 copy of the embedding model is not available (%s); embedding queries "
            "with the original model (slower). HARNESS_EMBED_INT8=off silences this.",
            fallback,
        )
    embedder, reason = _try(model_name, folder, threads=threads)
    return embedder, reason, fallback


def choose_embedder(
    model_name: str,
    model_path: Path | None,
    *,
    remembered: Path | None = None,
    hub_timeout_s: float = HUB_PROBE_TIMEOUT_S,
    threads: int | None = None,
    int8_cache: Path | None = None,
) -> EmbedderChoice:
    """Load the model from the first place that has it; never raises.

    An explicit ``model_path`` is final (no fallback to other sources: a typo must not start
    a download). Without one, ``remembered`` (the home's last folder), then fastembed's cache,
    then a download if the hub answers within ``hub_timeout_s``. With ``int8_cache``, a model
    loaded from a folder embeds queries through its int8 copy kept there (:mod:`quantize`;
    made on first use), or through itself, with a warning, when the copy cannot be made.
    """
    if model_path is not None:
        embedder, reason, fallback = _try_folder(
            model_name, Path(model_path), threads=threads, int8_cache=int8_cache
        )
        if embedder is None:
            return EmbedderChoice(None, reason=f"HARNESS_EMBED_MODEL_PATH={model_path}: {reason}")
        return EmbedderChoice(
            embedder, "HARNESS_EMBED_MODEL_PATH", Path(model_path), int8_fallback=fallback
        )
    if remembered is not None and remembered.is_dir():
        embedder, _, fallback = _try_folder(
            model_name, remembered, threads=threads, int8_cache=int8_cache
        )
        if embedder is not None:
            return EmbedderChoice(embedder, "remembered", remembered, int8_fallback=fallback)
    # The hub probe runs while fastembed looks in its cache: one bounded wait at most.
    hub_answered = _start_hub_probe(hub_timeout_s)
    embedder, _ = _try(model_name, None, local_files_only=True, threads=threads)
    if embedder is not None:
        return EmbedderChoice(embedder, "fastembed cache")
    if not hub_answered():
        return EmbedderChoice(
            None,
            reason="HARNESS_EMBED_MODEL_PATH is unset, the model is not in fastembed's cache "
            "and the model hub is unreachable",
        )
    embedder, reason = _try(model_name, None, threads=threads)
    if embedder is None:
        return EmbedderChoice(None, reason=f"download failed: {reason}")
    return EmbedderChoice(embedder, "download")


def load_embedder(
    model_name: str,
    model_path: Path | None,
    *,
    threads: int | None = None,
    int8_cache: Path | None = None,
) -> tuple[Embedder | None, str | None]:
    """Try to load the configured model. Returns ``(embedder, None)`` or ``(None, reason)``.

    Never raises; see :func:`choose_embedder` for the order of sources and ``int8_cache``.
    """
    choice = choose_embedder(model_name, model_path, threads=threads, int8_cache=int8_cache)
    return choice.embedder, choice.reason
