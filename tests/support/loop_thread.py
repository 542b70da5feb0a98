"""An asyncio event loop in a thread of its own, and an ``AsyncMemoryStore`` living on it.

An asyncio store's pooled connections belong to the loop that opened them, so everything
that uses one (in-process MCP clients, a uvicorn server) runs on the same loop: the test
thread hands coroutines to it with :meth:`LoopThread.run`. The ``aloop`` and ``astore``
fixtures (conftest) give a test one of each.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from harness.clock import Clock
from harness.memory import AsyncMemoryStore
from harness.memory.embedding.embedder import Embedder
from harness.settings import Settings

T = TypeVar("T")


class LoopThread:
    """One event loop running forever in a daemon thread until :meth:`close`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Start ``coro`` on the loop; its result comes through the returned future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
        """Run ``coro`` on the loop and wait for its result here."""
        return self.submit(coro).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


async def open_async_store(
    url: str, embedder: Embedder | None, clock: Clock | None = None, **settings: Any
) -> AsyncMemoryStore:
    """An asyncio store on ``url`` (no migration, no model check), on the running loop."""
    return await AsyncMemoryStore.connect(
        url,
        embedder=embedder,
        clock=clock,
        migrate=False,
        check_model=False,
        settings=Settings.from_env(**settings),
    )
