"""Concurrent query embeddings coalesced into one model call (asyncio and threads).

The model embeds a batch of short queries for a fraction of the cost of embedding them one
by one (MiniLM on two cores: about 12 ms CPU for one query alone, 3-5 ms each in a batch of
8). Under load many recalls wait for a query vector at once, so the first one starts the
model at once (no added wait when idle) and the queries that arrive while it runs go
together in the next call.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence

__all__ = ["BlockingQueryBatcher", "QueryBatcher"]

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], list[list[float]]]


class QueryBatcher:
    """Embeds queries in batches of at most ``max_batch``, in a worker thread (off the loop).

    ``embed`` is the model's batch call. Use from one event loop. A model failure answers
    None to every query of that batch (full-text for those queries only, as for a single
    query). A caller that is cancelled while waiting leaves its query in the batch; the
    other callers are not affected.
    """

    def __init__(self, embed: Embed, *, max_batch: int = 16):
        self._embed = embed
        self.max_batch = max_batch
        self._waiting: dict[str, asyncio.Future[list[float] | None]] = {}
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Model calls made and queries embedded (for benchmarks and tests).
        self.calls = 0
        self.queries = 0

    async def vector(self, query: str) -> list[float] | None:
        """The vector of ``query``, computed together with the other queries waiting now."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # futures belong to one loop: start afresh on a new one
            self._loop, self._waiting, self._worker = loop, {}, None
        future = self._waiting.get(query)
        if future is None:
            future = loop.create_future()
            self._waiting[query] = future
            if self._worker is None or self._worker.done():
                self._worker = loop.create_task(self._drain())
        # shield: one caller's cancellation must not cancel the answer others wait for
        return await asyncio.shield(future)

    async def _drain(self) -> None:
        batch: dict[str, asyncio.Future[list[float] | None]] = {}
        try:
            while self._waiting:
                texts = list(self._waiting)[: self.max_batch]
                batch = {text: self._waiting.pop(text) for text in texts}
                try:
                    vectors: list[list[float] | None] = list(
                        await asyncio.to_thread(self._embed, texts)
                    )
                except Exception as exc:  # full-text for these queries only
                    log.warning("query embedding failed, using full-text only: %s", exc)
                    vectors = [None] * len(texts)
                self.calls += 1
                self.queries += len(texts)
                for future, vector in zip(batch.values(), vectors, strict=True):
                    if not future.done():
                        future.set_result(vector)
        except BaseException:  # the loop is shutting down: release every waiter
            for future in [*batch.values(), *self._waiting.values()]:
                future.cancel()
            self._waiting.clear()
            raise


class _Waiting:
    """One query's place in a :class:`BlockingQueryBatcher`: its answer, once there is one."""

    __slots__ = ("answered", "vector")

    def __init__(self) -> None:
        self.answered = False
        self.vector: list[float] | None = None


class BlockingQueryBatcher:
    """:class:`QueryBatcher` for callers on threads: the first caller runs the model at once
    (no added wait when idle); callers arriving while it runs wait, and the first of them then
    runs all their queries in one call, at most ``max_batch`` at a time. Thread-safe.

    A model failure answers None to every query of that batch (full-text for those queries
    only, as for a single query).
    """

    def __init__(self, embed: Embed, *, max_batch: int = 16):
        self._embed = embed
        self.max_batch = max_batch
        self._changed = threading.Condition()
        self._waiting: dict[str, _Waiting] = {}
        #: A model call is running, or the next batch's caller has been chosen.
        self._busy = False
        self._next: _Waiting | None = None
        #: Model calls made and queries embedded (for benchmarks and tests).
        self.calls = 0
        self.queries = 0

    def vector(self, query: str) -> list[float] | None:
        """The vector of ``query``, computed together with the other queries waiting now.
        Blocks until it is there."""
        with self._changed:
            place = self._waiting.get(query)
            if place is None:
                place = self._waiting[query] = _Waiting()
            if self._busy:
                while not place.answered and self._next is not place:
                    self._changed.wait()
                if place.answered:
                    return place.vector
                self._next = None  # this caller runs the next batch (its query is first)
            self._busy = True
        self._run_batch()
        return place.vector

    def _run_batch(self) -> None:
        with self._changed:
            texts = list(self._waiting)[: self.max_batch]
            batch = [self._waiting.pop(text) for text in texts]
        vectors: list[list[float] | None] = [None] * len(texts)
        try:
            vectors = list(self._embed(texts))
        except Exception as exc:  # full-text for these queries only
            log.warning("query embedding failed, using full-text only: %s", exc)
        finally:
            with self._changed:
                self.calls += 1
                self.queries += len(texts)
                for place, vector in zip(batch, vectors, strict=True):
                    place.vector, place.answered = vector, True
                # Hand the next batch to a caller already waiting, or stand down.
                self._next = next(iter(self._waiting.values()), None)
                self._busy = self._next is not None
                self._changed.notify_all()
