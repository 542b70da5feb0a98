"""Anthropic's client-side ``memory`` tool, backed by harness-memory.

Install with ``pip install 'harness-memory-pg[anthropic]'``.

:class:`HarnessMemoryTool` (sync, over a :class:`MemoryStore`) and
:class:`AsyncHarnessMemoryTool` (over an :class:`AsyncMemoryStore`) are the SDK's
``BetaAbstractMemoryTool`` / ``BetaAsyncAbstractMemoryTool``: pass one in ``tools=[...]`` of
``client.beta.messages.tool_runner``. One handler serves one run:

1. ``recall(query)`` once, before the first model call: put ``result.text`` in ``system``. The
   recalled memories also appear as files under ``/memories`` (layout in
   :data:`harness.integrations._memory_files.LAYOUT`); ``view`` of a file recall left out asks
   the store.
2. During the run every ``create``, ``str_replace``, ``insert``, ``delete`` and ``rename`` is
   staged in the handler (and logged in the run's RecallSet); nothing is written long-term, so
   a model cannot plant a memory mid-run. Paths outside ``/memories``, ``..``, other users'
   (or workflows', sessions') folders, oversize files and content the guard refuses get the
   tool's error text (``ToolError``), never an exception that ends the run.
3. ``remember(verdict, task_input=...)`` once the verdict is final: an accepted run's staged
   files are written (origin ``completion``; platform files wait for approval) and its staged
   deletions forgotten; a rejected run's staged changes are dropped and its concrete feedback
   becomes a lesson.

The tenant is the handler's (from the caller's verified context); no path can name another.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

try:
    from anthropic.lib.tools import (
        BetaAbstractMemoryTool,
        BetaAsyncAbstractMemoryTool,
        ToolError,
    )
    from anthropic.types.beta import (
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
except ImportError as exc:  # pragma: no cover - exercised by the import-guard test
    raise ImportError(
        "harness.integrations.anthropic_memory needs the Anthropic SDK: "
        "pip install 'harness-memory-pg[anthropic]'"
    ) from exc

from harness.errors import HarnessError, InvalidInput, MemoryRejected
from harness.integrations._memory_files import (
    LAYOUT,
    FileError,
    FileLocation,
    MemoryFiles,
    StagedChange,
)
from harness.memory import AsyncMemoryStore, Caller, MemoryStore
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import (
    Memory,
    MemoryCandidate,
    Origin,
    RecallRequest,
    Source,
    Status,
)
from harness.recallset import RecallSet
from harness.run import after_verdict
from harness.run.after_verdict import Remembered, Teaching, chain, learn, write_all
from harness.run.engine import Verdict

__all__ = ["LAYOUT", "AsyncHarnessMemoryTool", "HarnessMemoryTool", "Remembered"]

log = logging.getLogger(__name__)


def _arg(command: object, name: str) -> Any:
    """A command attribute; a command built from bad input may lack it (the tool's error)."""
    try:
        return getattr(command, name)
    except AttributeError:
        raise ToolError(f"The memory command lacks {name!r}.") from None


#: Each command applied to the run's staged files (both handlers; nothing is written here).
_OPERATIONS: dict[str, Callable[[MemoryFiles, object], str]] = {
    "view": lambda files, c: files.view(_arg(c, "path"), getattr(c, "view_range", None)),
    "create": lambda files, c: files.create(_arg(c, "path"), _arg(c, "file_text")),
    "str_replace": lambda files, c: files.str_replace(
        _arg(c, "path"), _arg(c, "old_str"), _arg(c, "new_str")
    ),
    "insert": lambda files, c: files.insert(
        _arg(c, "path"), _arg(c, "insert_line"), _arg(c, "insert_text")
    ),
    "delete": lambda files, c: files.delete(_arg(c, "path")),
    "rename": lambda files, c: files.rename(_arg(c, "old_path"), _arg(c, "new_path")),
}


def _paths(name: str, command: object) -> tuple[object, ...]:
    """The paths a command names, each looked up in the store before the command runs."""
    if name == "rename":
        return _arg(command, "old_path"), _arg(command, "new_path")
    return (_arg(command, "path"),)


class _Run:
    """What both handlers share: identity, the staged files, the run's bookkeeping."""

    def __init__(
        self,
        store: MemoryStore | AsyncMemoryStore,
        identity: Caller,
        recallset: RecallSet | None,
        run_id: str | None,
    ) -> None:
        RecallRequest(**vars(identity))  # identity rules, once: bad input is InvalidInput
        self.store = store
        self.identity = identity
        self.run_id = run_id or f"run-{uuid.uuid4().hex[:16]}"
        self.recallset = recallset if recallset is not None else RecallSet()
        self.files = MemoryFiles(
            identity,
            self.recallset,
            max_file_chars=store.settings.max_content_chars,
            check=self._check,
        )
        self.recalled: RecallResult | None = None
        self.done = False

    def _candidate(self, loc: FileLocation, content: str) -> MemoryCandidate:
        return MemoryCandidate(
            tenant=self.identity.tenant,
            scope=loc.scope,
            scope_id=loc.scope_id,
            kind=loc.kind,
            key=loc.key,
            content=content,
            source=Source(origin=Origin.COMPLETION, run_id=self.run_id),
        )

    def _check(self, loc: FileLocation, content: str) -> None:
        try:
            self.store.check_candidate(self._candidate(loc, content))
        except MemoryRejected as exc:
            raise FileError(f"Refused: {exc.reason}. Memory files must not hold that.") from None
        except InvalidInput as exc:
            raise FileError(f"Refused: {exc}") from None

    def request(
        self, query: str, budget_chars: int, max_items: int, max_item_chars: int
    ) -> RecallRequest:
        return RecallRequest.for_caller(
            self.identity,
            query=query,
            budget_chars=budget_chars,
            max_items=max_items,
            max_item_chars=max_item_chars,
        )

    def stage(self, name: str, command: object) -> str:
        """Apply one command to the staged files (nothing is written before the verdict); a
        refused change is the tool's error."""
        try:
            return _OPERATIONS[name](self.files, command)
        except FileError as exc:
            raise _tool_error(exc) from None

    def live(self, history: Sequence[Memory]) -> Memory | None:
        now = self.store.clock.now()
        for memory in history:
            if memory.status is Status.ACTIVE and (
                memory.expires_at is None or memory.expires_at > now
            ):
                return memory
        return None

    def plan(
        self, verdict: Verdict, task_input: str
    ) -> tuple[list[MemoryCandidate], list[uuid.UUID]]:
        """The writes and forgets the verdict calls for."""
        if self.done:
            raise InvalidInput("verdict: this run was already remembered", fields=("verdict",))
        self.done = True
        writes: list[MemoryCandidate] = []
        forgets: list[uuid.UUID] = []
        if verdict.accepted:
            for change in self.files.staged():
                writes += self._writes(change)
                if change.base is not None and (
                    change.content is None or change.location.key is None
                ):
                    forgets.append(change.base.id)
        self.files.clear()
        self.recallset.clear()
        return writes, forgets

    def learning(self, verdict: Verdict, task_input: str) -> Teaching:
        """What the verdict teaches the lessons (``store.learn``)."""
        return learn([verdict], caller=self.identity, task_input=task_input, run_id=self.run_id)

    def _writes(self, change: StagedChange) -> list[MemoryCandidate]:
        if change.content is None:
            return []
        return [self._candidate(change.location, change.content)]


def _tool_error(exc: FileError) -> ToolError:
    return ToolError(str(exc))


class HarnessMemoryTool(BetaAbstractMemoryTool):
    """The ``memory`` tool over a :class:`MemoryStore`, for one run (see the module docs)."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        tenant: str,
        user_id: str,
        workflow_id: str | None = None,
        session_id: str | None = None,
        recallset: RecallSet | None = None,
        run_id: str | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.run = _Run(store, Caller(tenant, user_id, workflow_id, session_id), recallset, run_id)

    def recall(
        self,
        query: str,
        *,
        budget_chars: int = 2000,
        max_items: int = 20,
        max_item_chars: int = 500,
    ) -> RecallResult:
        """Recall once for this run (later calls return the same result); put ``.text`` in the
        first request's ``system``. A store failure degrades to an empty result."""
        if self.run.recalled is None:
            request = self.run.request(query, budget_chars, max_items, max_item_chars)
            # the store's recall degrades to an empty result on failure; it never raises
            self.run.recalled = self.store.recall(request)
            self.run.files.load(item.memory for item in self.run.recalled.items)
        return self.run.recalled

    def _lookup(self, path: object) -> None:
        loc = self.run.files.needs_lookup(path) if isinstance(path, str) else None
        if loc is None or loc.key is None:
            return
        try:
            history = self.store.history(self.run.identity.tenant, loc.scope, loc.scope_id, loc.key)
        except HarnessError as exc:
            raise ToolError(f"The memory store is unavailable ({exc}); try again later.") from None
        self.run.files.looked_up(loc, self.run.live(history))

    def _handle(self, name: str, command: object) -> str:
        for path in _paths(name, command):
            self._lookup(path)
        return self.run.stage(name, command)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """Serve a directory listing or a file (recalled, staged, or from the store)."""
        return self._handle("view", command)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """Stage a new file (nothing is written before the verdict)."""
        return self._handle("create", command)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Stage an edit."""
        return self._handle("str_replace", command)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Stage an insertion."""
        return self._handle("insert", command)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Stage a deletion."""
        return self._handle("delete", command)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Stage a move."""
        return self._handle("rename", command)

    def remember(self, verdict: Verdict, *, task_input: str) -> Remembered:
        """After the final verdict (once per run): write what it calls for. Refusals and
        failures are reported in the result, never raised; the staged files are then gone."""
        writes, forgets = self.run.plan(verdict, task_input)
        teaching = chain(write_all(writes), self.run.learning(verdict, task_input))
        out = after_verdict.remember(self.store, teaching)
        for memory_id in forgets:
            try:
                out.forgotten += int(self.store.forget(memory_id, tenant=self.run.identity.tenant))
            except HarnessError as exc:
                out.errors.append(f"forget {memory_id}: {exc}")
        return out


class AsyncHarnessMemoryTool(BetaAsyncAbstractMemoryTool):
    """:class:`HarnessMemoryTool` over an :class:`AsyncMemoryStore`."""

    def __init__(
        self,
        store: AsyncMemoryStore,
        *,
        tenant: str,
        user_id: str,
        workflow_id: str | None = None,
        session_id: str | None = None,
        recallset: RecallSet | None = None,
        run_id: str | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.run = _Run(store, Caller(tenant, user_id, workflow_id, session_id), recallset, run_id)

    async def recall(
        self,
        query: str,
        *,
        budget_chars: int = 2000,
        max_items: int = 20,
        max_item_chars: int = 500,
    ) -> RecallResult:
        """See :meth:`HarnessMemoryTool.recall`."""
        if self.run.recalled is None:
            request = self.run.request(query, budget_chars, max_items, max_item_chars)
            # the store's recall degrades to an empty result on failure; it never raises
            self.run.recalled = await self.store.recall(request)
            self.run.files.load(item.memory for item in self.run.recalled.items)
        return self.run.recalled

    async def _lookup(self, path: object) -> None:
        loc = self.run.files.needs_lookup(path) if isinstance(path, str) else None
        if loc is None or loc.key is None:
            return
        try:
            history = await self.store.history(
                self.run.identity.tenant, loc.scope, loc.scope_id, loc.key
            )
        except HarnessError as exc:
            raise ToolError(f"The memory store is unavailable ({exc}); try again later.") from None
        self.run.files.looked_up(loc, self.run.live(history))

    async def _handle(self, name: str, command: object) -> str:
        for path in _paths(name, command):
            await self._lookup(path)
        return self.run.stage(name, command)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """See :meth:`HarnessMemoryTool.view`."""
        return await self._handle("view", command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """See :meth:`HarnessMemoryTool.create`."""
        return await self._handle("create", command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """See :meth:`HarnessMemoryTool.str_replace`."""
        return await self._handle("str_replace", command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """See :meth:`HarnessMemoryTool.insert`."""
        return await self._handle("insert", command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """See :meth:`HarnessMemoryTool.delete`."""
        return await self._handle("delete", command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """See :meth:`HarnessMemoryTool.rename`."""
        return await self._handle("rename", command)

    async def remember(self, verdict: Verdict, *, task_input: str) -> Remembered:
        """See :meth:`HarnessMemoryTool.remember`."""
        writes, forgets = self.run.plan(verdict, task_input)
        teaching = chain(write_all(writes), self.run.learning(verdict, task_input))
        out = await after_verdict.aremember(self.store, teaching)
        for memory_id in forgets:
            try:
                out.forgotten += int(
                    await self.store.forget(memory_id, tenant=self.run.identity.tenant)
                )
            except HarnessError as exc:
                out.errors.append(f"forget {memory_id}: {exc}")
        return out
