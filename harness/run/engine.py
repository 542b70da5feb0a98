"""The run lifecycle: recall before the first model call, writes only after the final verdict.

:meth:`Engine.run` (blocking) and :meth:`Engine.arun` (asyncio) drive one flow
(:mod:`harness.run.flow`); only how each effect is performed differs.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from harness.clock import Clock
from harness.errors import InvalidInput
from harness.memory import AsyncMemoryStore, MemoryStore
from harness.recallset import RecallSet
from harness.run.extract import Extractor
from harness.run.flow import (
    CallJudge,
    CallModel,
    Effect,
    Extract,
    FinishRun,
    Flow,
    Learn,
    Recall,
    StartRun,
    Write,
    run_flow,
)
from harness.run.types import (
    AsyncModelClient,
    AsyncOutputJudge,
    EngineConfig,
    Message,
    ModelClient,
    OutputJudge,
    RunInput,
    RunOutcome,
    Verdict,
)

__all__ = [
    "AsyncModelClient",
    "AsyncOutputJudge",
    "Engine",
    "EngineConfig",
    "ModelClient",
    "OutputJudge",
    "RunInput",
    "RunOutcome",
    "Verdict",
]

T = TypeVar("T")

AnyModel = ModelClient | AsyncModelClient | Callable[[list[Message]], Any]
AnyOutputJudge = OutputJudge | AsyncOutputJudge | Callable[[str, str], Any]


def _not_awaitable(value: T | Awaitable[T], what: str) -> T:
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never awaited: close it instead of leaking a warning
        raise InvalidInput(f"{what}: is asynchronous; use Engine.arun", fields=(what,))
    return value


class Engine:
    """Runs an agent with memory: one recall before the first model call, one RecallSet per
    run, and memory writes only once the final verdict is known.

    ``run`` needs a :class:`MemoryStore` and a blocking model and judge; ``arun`` takes either
    store (a blocking one is used from a worker thread) and a model and judge that are
    coroutine functions or plain callables.
    """

    def __init__(
        self,
        model: AnyModel,
        judge: AnyOutputJudge,
        store: MemoryStore | AsyncMemoryStore,
        extractor: Extractor | None = None,
        max_attempts: int = 3,
        config: EngineConfig | None = None,
        clock: Clock | None = None,
        recallset_factory: Callable[[int], RecallSet] = RecallSet,
    ):
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise InvalidInput("max_attempts: must be at least 1", fields=("max_attempts",))
        if config is not None and not isinstance(config, EngineConfig):
            raise InvalidInput("config: must be an EngineConfig", fields=("config",))
        self.model = model
        self.judge = judge
        self.store = store
        self.extractor = extractor
        self.max_attempts = max_attempts
        self.config = config or EngineConfig()
        self.clock = clock or store.clock
        self.recallset_factory = recallset_factory

    def _flow(self, run: RunInput) -> Flow:
        return run_flow(
            run,
            f"run-{uuid.uuid4().hex[:16]}",
            config=self.config,
            max_attempts=self.max_attempts,
            clock=self.clock,
            recallset_factory=self.recallset_factory,
            extract=self.extractor is not None,
        )

    # --- blocking ------------------------------------------------------------------------------

    def run(self, run: RunInput) -> RunOutcome:
        """Execute one run. Side effects: a run record, and memories written after the verdict.

        Memory-store failures never fail the run: recall degrades to an empty context and
        write failures are logged and reported in ``RunOutcome.write_errors``.

        Raises:
            InvalidInput: the store, model or judge is asynchronous (use :meth:`arun`).
        """
        if not isinstance(self.store, MemoryStore):
            raise InvalidInput("store: is asynchronous; use Engine.arun", fields=("store",))
        flow = self._flow(run)
        step: Effect | _Done = next(flow)
        while not isinstance(step, _Done):
            try:
                result = self._perform(self.store, step)
            except BaseException as exc:  # the flow decides what degrades and what propagates
                step = _throw(flow, exc)
            else:
                step = _send(flow, result)
        return step.outcome

    def _perform(self, store: MemoryStore, effect: Effect) -> Any:
        if isinstance(effect, CallModel):
            return _not_awaitable(self.model(effect.messages), "model")
        if isinstance(effect, CallJudge):
            return _not_awaitable(self.judge(effect.input, effect.output), "judge")
        if isinstance(effect, Extract):
            assert self.extractor is not None
            return self.extractor.extract(effect.input, effect.output, effect.context)
        return _store_call(store, effect)()

    # --- asyncio -------------------------------------------------------------------------------

    async def arun(self, run: RunInput) -> RunOutcome:
        """:meth:`run` for asyncio: the same flow, rules and degradation, with the model and
        judge awaited when they are coroutine functions, the store's calls awaited (an
        :class:`AsyncMemoryStore`) or run in a worker thread (a :class:`MemoryStore`), and the
        extractor (blocking HTTP) in a worker thread. Side effects as :meth:`run`."""
        flow = self._flow(run)
        step: Effect | _Done = next(flow)
        while not isinstance(step, _Done):
            try:
                result = await self._aperform(step)
            except BaseException as exc:  # the flow decides what degrades and what propagates
                step = _throw(flow, exc)
            else:
                step = _send(flow, result)
        return step.outcome

    async def _aperform(self, effect: Effect) -> Any:
        if isinstance(effect, CallModel):
            return await _maybe_await(self.model(effect.messages))
        if isinstance(effect, CallJudge):
            return await _maybe_await(self.judge(effect.input, effect.output))
        if isinstance(effect, Extract):
            assert self.extractor is not None
            return await asyncio.to_thread(
                self.extractor.extract, effect.input, effect.output, effect.context
            )
        if isinstance(self.store, AsyncMemoryStore):
            return await _astore_call(self.store, effect)
        return await asyncio.to_thread(_store_call(self.store, effect))


class _Done:
    def __init__(self, outcome: RunOutcome):
        self.outcome = outcome


def _send(flow: Flow, value: Any) -> Effect | _Done:
    try:
        return flow.send(value)
    except StopIteration as done:
        return _Done(done.value)


def _throw(flow: Flow, exc: BaseException) -> Effect | _Done:
    try:
        return flow.throw(exc)
    except StopIteration as done:
        return _Done(done.value)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _store_call(store: MemoryStore, effect: Effect) -> Callable[[], Any]:
    """The blocking store call performing ``effect``."""
    if isinstance(effect, Recall):
        return lambda: store.recall(effect.request)
    if isinstance(effect, Write):
        return lambda: store.write(effect.candidate)
    if isinstance(effect, Learn):
        return lambda: store.learn(effect.report)
    if isinstance(effect, StartRun):
        return lambda: store.runs.start(**effect.arguments())
    if isinstance(effect, FinishRun):
        return lambda: store.runs.finish(**effect.arguments())
    raise AssertionError(f"not a store effect: {effect!r}")


def _astore_call(store: AsyncMemoryStore, effect: Effect) -> Awaitable[Any]:
    """The asyncio store call performing ``effect``."""
    if isinstance(effect, Recall):
        return store.recall(effect.request)
    if isinstance(effect, Write):
        return store.write(effect.candidate)
    if isinstance(effect, Learn):
        return store.learn(effect.report)
    if isinstance(effect, StartRun):
        return store.runs.start(**effect.arguments())
    if isinstance(effect, FinishRun):
        return store.runs.finish(**effect.arguments())
    raise AssertionError(f"not a store effect: {effect!r}")
