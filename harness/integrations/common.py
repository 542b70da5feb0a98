"""One agent run's memory, whatever the runtime: recall once, a RecallSet, writes after the verdict.

:class:`MemoryRun` is what the runtime modules (``pydantic_ai``, ``openai_agents``) wire into
their framework. It holds the caller's verified identity (never taken from model output), recalls
once, at the first request for instructions, answers RecallSet tool calls with text (a bad call
is an ``error: ...`` answer, never an exception), and writes to the MemoryStore only in
:meth:`MemoryRun.remember`, after the caller's final verdict.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from harness.errors import ConflictingState, HarnessError, InvalidInput
from harness.memory import AsyncMemoryStore, MemoryStore
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import RecallRequest
from harness.recallset import TOOL_DEFINITIONS, RecallSet, RecallSetTools
from harness.recallset.tools import ToolAnswer
from harness.run.after_verdict import aremember, teach
from harness.run.engine import EngineConfig, RunOutcome, Verdict
from harness.run.extract import Extractor
from harness.run.flow import placed_ids

__all__ = ["MemoryRun", "RecallSetToolSpec", "recallset_tool_specs"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecallSetToolSpec:
    """One RecallSet tool as a runtime needs it: name, description, JSON schema of arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


def recallset_tool_specs() -> list[RecallSetToolSpec]:
    """The four RecallSet tools (add, mark, read, overview), as fresh copies."""
    return [
        RecallSetToolSpec(d["name"], d["description"], json.loads(json.dumps(d["input_schema"])))
        for d in TOOL_DEFINITIONS
    ]


class MemoryRun:
    """The memory of one agent run. Create one per run; it is not shared between runs.

    Args:
        store: an :class:`AsyncMemoryStore` (or a sync :class:`MemoryStore`, whose calls then
            run in worker threads).
        tenant, user_id, workflow_id, session_id: who the run is for, from the caller's verified
            context. They decide what is recalled and where lessons go.
        input: the run's task text: the recall query and a lesson's context. When omitted, the
            integration takes it from the runtime's prompt at the first model request.
        config: recall limits and the RecallSet cap (the engine's :class:`EngineConfig`).
        extractor: proposes candidates from an accepted run (e.g. ``RuleExtractor``).
        record_run: record the run in the store's run records (start at recall, finish at
            :meth:`remember`), as the engine does.

    Raises:
        InvalidInput: naming the field, for a bad identity or input.
    """

    def __init__(
        self,
        store: AsyncMemoryStore | MemoryStore,
        *,
        tenant: str,
        user_id: str,
        workflow_id: str | None = None,
        session_id: str | None = None,
        input: str | None = None,
        config: EngineConfig | None = None,
        extractor: Extractor | None = None,
        record_run: bool = True,
    ):
        self.config = config or EngineConfig()
        # Validates the identity now, so a bad caller fails before any model call.
        self._identity = RecallRequest(
            tenant=tenant,
            user_id=user_id,
            workflow_id=workflow_id,
            session_id=session_id,
            budget_chars=self.config.budget_chars,
            max_items=self.config.max_items,
            max_item_chars=self.config.max_item_chars,
        )
        if input is not None and not isinstance(input, str):
            raise InvalidInput("input: must be a string", fields=("input",))
        self.store = store
        self.input = input
        self.extractor = extractor
        self.record_run = record_run
        self.run_id = f"run-{uuid.uuid4().hex[:16]}"
        self.recallset = RecallSet(self.config.recallset_max_items)
        self.tools = RecallSetTools(self.recallset)
        self._recall: RecallResult | None = None
        self._lock = asyncio.Lock()
        self._started = False
        self._finished = False

    @property
    def tenant(self) -> str:
        return self._identity.tenant

    @property
    def user_id(self) -> str:
        return self._identity.user_id

    @property
    def workflow_id(self) -> str | None:
        return self._identity.workflow_id

    @property
    def session_id(self) -> str | None:
        return self._identity.session_id

    @property
    def recalled(self) -> RecallResult | None:
        """The run's recall, once :meth:`recall` has run (None before)."""
        return self._recall

    @property
    def finished(self) -> bool:
        """True once :meth:`remember` or :meth:`close` ended the run."""
        return self._finished

    # --- before the first model call -----------------------------------------------------------

    async def recall(self, query: str | None = None) -> RecallResult:
        """Recall for this run's caller, once: the first call reads the store (and records the
        run as started); every later call returns the same result, whatever ``query`` says.

        ``query`` (or the ``input`` given at construction) is the text relevance is judged
        against. Never raises because of the store: a failure yields an empty context and a
        logged warning.
        """
        async with self._lock:
            if self._recall is not None:
                return self._recall
            if self._finished:
                raise ConflictingState("recall: this run has already finished")
            if self.input is None and query is not None:
                self.input = query
            text = self.input if self.input is not None else (query or "")
            await self._record_start()
            self._recall = await self._read(text)
            return self._recall

    async def instructions(self, query: str | None = None) -> str:
        """The recalled block for the system prompt / instructions (see :meth:`recall`)."""
        return (await self.recall(query)).text

    async def _read(self, query: str) -> RecallResult:
        # The store's recall is the one degradation boundary: a failure comes back as an
        # empty, degraded result, never as an exception (SPEC section 12).
        req = RecallRequest.model_validate({**self._identity.model_dump(), "query": query[:20_000]})
        if isinstance(self.store, AsyncMemoryStore):
            return await self.store.recall(req)
        return await asyncio.to_thread(self.store.recall, req)

    # --- during the run ------------------------------------------------------------------------

    def call_tool(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolAnswer:
        """Run one RecallSet tool call; bad calls answer ``error: ...`` (``is_error``), never raise.

        Only the run's RecallSet changes; nothing reaches the MemoryStore.
        """
        if self._finished:
            return ToolAnswer("error: this run has already finished", is_error=True)
        return self.tools.answer({"name": name, "arguments": arguments or {}})

    # --- after the final verdict ---------------------------------------------------------------

    async def remember(
        self, output: str | None, verdict: Verdict | Sequence[Verdict]
    ) -> RunOutcome:
        """Write what the run taught, now that the verdict is final, and end the run.

        A rejection with concrete feedback becomes a lesson (workflow scope when the run has a
        workflow, else user scope) keeping the run's input as its context; an accepted run
        gives the extractor's candidates. Every candidate passes the store's guard: refusals
        land in ``rejected_candidates``, store failures in ``write_errors`` (never silent, never
        raised). The RecallSet is cleared. Pass every verdict of the run, oldest first, when
        the caller retried.

        Raises:
            ConflictingState: ``remember`` already ran for this run.
            InvalidInput: naming the field, for a verdict that is not a :class:`Verdict`.
        """
        verdicts = [verdict] if isinstance(verdict, Verdict) else list(verdict)
        if not verdicts or not all(isinstance(v, Verdict) for v in verdicts):
            raise InvalidInput("verdict: give one Verdict or a non-empty list", fields=("verdict",))
        if output is not None and not isinstance(output, str):
            raise InvalidInput("output: must be a string or None", fields=("output",))
        async with self._lock:
            if self._finished:
                raise ConflictingState("remember: this run has already finished")
            self._finished = True
        outcome = RunOutcome(
            run_id=self.run_id,
            output=output,
            attempts=len(verdicts),
            verdicts=verdicts,
            recall=self._recall,
        )
        teaching = teach(
            verdicts,
            caller=self._identity.caller,
            task_input=self.input or "",
            run_id=self.run_id,
            output=output,
            extract=self.extractor is not None,
            placed=placed_ids(self._recall),
        )
        try:
            done = await aremember(self.store, teaching, self.extractor)
            outcome.learned = done.learned
            outcome.memories_written += done.written
            outcome.rejected_candidates += done.rejected
            outcome.write_errors += done.errors
        finally:
            self.recallset.clear()
            await self._record_finish("accepted" if outcome.accepted else "rejected", len(verdicts))
        return outcome

    def remember_sync(self, output: str | None, verdict: Verdict | Sequence[Verdict]) -> RunOutcome:
        """:meth:`remember` for synchronous code (e.g. after ``agent.run_sync``), with a sync
        :class:`MemoryStore`; same writes, same errors.

        Raises:
            InvalidInput: naming ``store``, for an :class:`AsyncMemoryStore` (its connections
                belong to its event loop: ``await remember`` there), or when called from a
                running event loop.
        """
        if isinstance(self.store, AsyncMemoryStore):
            raise InvalidInput(
                "store: remember_sync needs a MemoryStore; await remember() with an "
                "AsyncMemoryStore",
                fields=("store",),
            )
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.remember(output, verdict))
        raise InvalidInput(
            "store: remember_sync called inside a running event loop; await remember()",
            fields=("store",),
        )

    async def close(self) -> None:
        """End the run without a verdict: nothing is written, the RecallSet is cleared, the run
        record says ``failed``. Idempotent; a no-op after :meth:`remember`."""
        async with self._lock:
            if self._finished:
                return
            self._finished = True
        self.recallset.clear()
        await self._record_finish("failed", 0)

    async def __aenter__(self) -> MemoryRun:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- run records (best effort) -------------------------------------------------------------

    async def _record_start(self) -> None:
        if not self.record_run or self._started:
            return
        self._started = True
        kwargs: dict[str, Any] = {
            "run_id": self.run_id,
            "tenant": self.tenant,
            "user_id": self.user_id,
            "workflow_id": self.workflow_id,
            "session_id": self.session_id,
            "at": self.store.clock.now(),
        }
        try:
            if isinstance(self.store, AsyncMemoryStore):
                await self.store.runs.start(**kwargs)
            else:
                await asyncio.to_thread(lambda: self.store.runs.start(**kwargs))
        except HarnessError as exc:
            log.warning("run record not written (the run goes on): %s", exc)

    async def _record_finish(self, status: str, attempts: int) -> None:
        if not self.record_run or not self._started:
            return
        kwargs: dict[str, Any] = {
            "run_id": self.run_id,
            "tenant": self.tenant,
            "status": status,
            "attempts": attempts,
            "at": self.store.clock.now(),
        }
        try:
            if isinstance(self.store, AsyncMemoryStore):
                await self.store.runs.finish(**kwargs)
            else:
                await asyncio.to_thread(lambda: self.store.runs.finish(**kwargs))
        except HarnessError as exc:
            log.warning("run record not finished (the run goes on): %s", exc)
