"""One calling convention over both store facades, so one suite tests the twins alike."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from harness.memory import AsyncMemoryStore, MemoryStore
from harness.memory.embedding.embedder import Embedder
from harness.settings import Settings
from tests.support.stores import UNREACHABLE_URL

KINDS = ("sync", "async")


class TickingClock:
    """A deterministic clock that moves 1 ms per reading (orders rows written in one test)."""

    def __init__(self, start: datetime):
        self._at = start

    def now(self) -> datetime:
        self._at += timedelta(milliseconds=1)
        return self._at


class Facade:
    """Calls a sync store directly, or drives an async store's coroutines on one event loop
    (the loop its pooled connections belong to). ``facade.write(...)`` returns the result."""

    def __init__(self, kind: str, store: MemoryStore | AsyncMemoryStore, runner: asyncio.Runner):
        self.kind = kind
        self.store = store
        self._runner = runner

    def run(self, value: Any) -> Any:
        return self._runner.run(value) if inspect.isawaitable(value) else value

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)
        if not callable(method):
            return method  # a plain attribute (settings, clock, ...)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.run(method(*args, **kwargs))

        return call

    @property
    def runs(self) -> Any:
        facade = self

        class _Runs:
            def __getattr__(self, name: str) -> Callable[..., Any]:
                method = getattr(facade.store.runs, name)
                return lambda *a, **kw: facade.run(method(*a, **kw))

        return _Runs()

    def close(self) -> None:
        self.run(self.store.close())


def open_facade(
    kind: str,
    url: str,
    embedder: Embedder | None,
    runner: asyncio.Runner,
    clock: Any = None,
    **settings: Any,
) -> Facade:
    """A store of ``kind`` on ``url`` (no migration, no model check), wrapped."""
    options: dict[str, Any] = {
        "embedder": embedder,
        "clock": clock,
        "migrate": False,
        "check_model": False,
        "settings": Settings.from_env(**settings),
    }
    store: MemoryStore | AsyncMemoryStore
    if kind == "sync":
        store = MemoryStore.connect(url, **options)
    else:
        store = runner.run(AsyncMemoryStore.connect(url, **options))
    return Facade(kind, store, runner)


def unreachable_facade(kind: str, embedder: Embedder, runner: asyncio.Runner) -> Facade:
    """A facade whose database cannot be reached."""
    return open_facade(kind, UNREACHABLE_URL, embedder, runner)
