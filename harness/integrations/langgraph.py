"""LangGraph: a ``BaseStore`` backed by the MemoryStore, a recall node, and the post-verdict write.

Install with ``pip install 'harness-memory[langgraph]'``.

**Namespaces.** The tenant is fixed when :class:`HarnessStore` is built (from the caller's
verified context, never from a namespace), so no namespace can reach another tenant. A
namespace names the scope, its id and the kind, then any labels of your own::

    ("user", user_id, kind, *labels)         # e.g. ("user", "alice", "preference")
    ("workflow", workflow_id, kind, *labels)
    ("session", session_id, kind, *labels)
    ("platform", kind, *labels)              # e.g. ("platform", "constraint")

An item's key is the memory key (with labels, ``ns:<label>.<label>..<key>``), so an item put
under ``("user", "alice", "preference")`` with key ``answer.length`` takes part in precedence
with every other item of that key (a workflow's narrower preference wins at recall; a platform
constraint can never be lifted). A key names one item per scope: putting it again, under any
kind, supersedes the previous version (history stays readable through the MemoryStore).

A value ``{"content": "text"}`` is stored as that text (what recall renders for the model); any
other JSON object as canonical JSON, and ``get`` returns exactly what was put. Every ``put``
passes the guard: a secret or an injection is refused with :class:`harness.errors.MemoryRejected`.
``ttl`` (minutes) becomes ``expires_at``; reads do not refresh it.

**Runs.** :func:`recall_node` / :func:`arecall_node` build a node (or ``pre_model_hook``) that
recalls once, before the first model call, for the identity in ``config["configurable"]``
(``user_id``, optional ``workflow_id`` and ``session_id``), and puts the block first as a system
message. :func:`remember` / :func:`aremember` write the lesson of a rejection once the verdict is
final; nothing is written during the run.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

try:
    from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage, SystemMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # pragma: no cover - exercised by the import-guard test
    raise ImportError(
        "harness.integrations.langgraph needs LangGraph: pip install 'harness-memory[langgraph]'"
    ) from exc

from harness.engine import Verdict
from harness.errors import InvalidInput
from harness.integrations._lg_mapping import (
    NamespacePrefix,
    Target,
    content_of,
    decode_key,
    encode_key,
    matches_filter,
    matches_namespace,
    parse_namespace,
    parse_prefix,
    value_of,
    word_overlap,
)
from harness.integrations._verdicts import (
    Remembered,
    lesson_for,
    write_candidates,
    write_candidates_async,
)
from harness.memory.async_store import AsyncMemoryStore
from harness.memory.recall import RecallResult
from harness.memory.rows import memory_from_row
from harness.memory.sql.console import BrowseFilter, browse
from harness.memory.store import MemoryStore
from harness.memory.types import (
    Memory,
    MemoryCandidate,
    Origin,
    RecallRequest,
    Scope,
    Source,
    Status,
)

__all__ = [
    "RECALL_MESSAGE_ID",
    "HarnessStore",
    "RecallLimits",
    "Remembered",
    "arecall_node",
    "aremember",
    "recall_node",
    "remember",
]

log = logging.getLogger(__name__)

#: Id of the system message the recall node adds; its presence means "already recalled".
RECALL_MESSAGE_ID = "harness-memory-recall"
_PAGE = 200


# --- store calls: the op logic yields these, a sync or an async runner answers them ------------


@dataclass(frozen=True)
class _History:
    target: Target
    key: str


@dataclass(frozen=True)
class _Write:
    candidate: MemoryCandidate


@dataclass(frozen=True)
class _Forget:
    memory_id: uuid.UUID


@dataclass(frozen=True)
class _ListActive:
    prefix: NamespacePrefix


_Call = _History | _Write | _Forget | _ListActive
_Steps = Generator[_Call, Any, Result]


class HarnessStore(BaseStore):
    """A LangGraph ``BaseStore`` over a :class:`MemoryStore` or :class:`AsyncMemoryStore`.

    Args:
        store: the MemoryStore (sync ``batch``; ``abatch`` runs it in a worker thread) or the
            AsyncMemoryStore (``abatch``; sync ``batch`` is refused — use the ``a*`` methods).
        tenant: every operation acts in this tenant only.
        user_id: when given, ``("user", other_id, ...)`` namespaces are refused and listings
            show this user's user-scope items only.
        scan_limit: how many of the newest active items a ``search`` or ``list_namespaces``
            examines per call (they filter in Python; the store's own recall is the ranked path).
    """

    #: ``ttl`` sets the item's expiry; reads do not extend it (``refresh_ttl`` is ignored).
    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore | AsyncMemoryStore,
        *,
        tenant: str,
        user_id: str | None = None,
        scan_limit: int = 2000,
    ) -> None:
        RecallRequest(tenant=tenant, user_id=user_id or "anyone")  # identity rules, once
        if scan_limit < 1:
            raise InvalidInput("scan_limit: must be at least 1", fields=("scan_limit",))
        self.store = store
        self.tenant = tenant
        self.user_id = user_id
        self.scan_limit = scan_limit

    # --- BaseStore ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the ops in order against a sync MemoryStore. Side effects: puts write (guarded,
        superseding), deletes forget every version of the key."""
        store = self.store
        if not isinstance(store, MemoryStore):
            raise TypeError(
                "HarnessStore over an AsyncMemoryStore is async only: use aget/aput/asearch "
                "(graph.ainvoke), or build it over a MemoryStore"
            )
        return [self._drive(self._op(op), lambda call: self._answer(store, call)) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Like :meth:`batch`, for asyncio."""
        store = self.store
        if isinstance(store, MemoryStore):
            return await asyncio.to_thread(self.batch, list(ops))
        results: list[Result] = []
        for op in ops:
            steps = self._op(op)
            try:
                call = next(steps)
                while True:
                    call = steps.send(await self._aanswer(store, call))
            except StopIteration as stop:
                results.append(stop.value)
        return results

    # --- runners --------------------------------------------------------------------------------

    @staticmethod
    def _drive(steps: _Steps, answer: Callable[[_Call], Any]) -> Result:
        try:
            call = next(steps)
            while True:
                call = steps.send(answer(call))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    def _answer(self, store: MemoryStore, call: _Call) -> Any:
        if isinstance(call, _History):
            t = call.target
            return store.history(self.tenant, t.scope, t.scope_id, call.key)
        if isinstance(call, _Write):
            return store.write(call.candidate)
        if isinstance(call, _Forget):
            return store.forget(call.memory_id, tenant=self.tenant)
        found: list[Memory] = []
        before: tuple[datetime, uuid.UUID] | None = None
        flt = self._browse_filter(call.prefix)
        while len(found) < self.scan_limit:
            with store.transaction("langgraph listing", tenant=self.tenant) as conn:
                rows = conn.execute(browse(self.tenant, flt, before=before, limit=_PAGE))
                page = [memory_from_row(r) for r in rows.mappings().all()]
            found += page
            if len(page) < _PAGE:
                break
            before = (page[-1].created_at, page[-1].id)
        return found[: self.scan_limit]

    async def _aanswer(self, store: AsyncMemoryStore, call: _Call) -> Any:
        if isinstance(call, _History):
            t = call.target
            return await store.history(self.tenant, t.scope, t.scope_id, call.key)
        if isinstance(call, _Write):
            return await store.write(call.candidate)
        if isinstance(call, _Forget):
            return await store.forget(call.memory_id, tenant=self.tenant)
        found: list[Memory] = []
        before: tuple[datetime, uuid.UUID] | None = None
        flt = self._browse_filter(call.prefix)
        while len(found) < self.scan_limit:
            async with store.transaction("langgraph listing", tenant=self.tenant) as conn:
                rows = await conn.execute(browse(self.tenant, flt, before=before, limit=_PAGE))
                page = [memory_from_row(r) for r in rows.mappings().all()]
            found += page
            if len(page) < _PAGE:
                break
            before = (page[-1].created_at, page[-1].id)
        return found[: self.scan_limit]

    @staticmethod
    def _browse_filter(prefix: NamespacePrefix) -> BrowseFilter:
        return BrowseFilter(
            scope=prefix.scope,
            scope_id=prefix.scope_id if prefix.scope is not Scope.PLATFORM else None,
            kind=prefix.kind,
            status=Status.ACTIVE,
        )

    # --- op logic (pure but for the yielded calls) ----------------------------------------------

    def _now(self) -> datetime:
        return self.store.clock.now()

    def _target(self, namespace: Sequence[str]) -> Target:
        target = parse_namespace(namespace)
        if (
            self.user_id is not None
            and target.scope is Scope.USER
            and target.scope_id != self.user_id
        ):
            raise InvalidInput(
                f"namespace: {tuple(namespace)!r} belongs to another user; this store serves "
                f"user {self.user_id!r} only",
                fields=("namespace",),
            )
        return target

    def _live(self, memory: Memory) -> bool:
        return memory.status is Status.ACTIVE and (
            memory.expires_at is None or memory.expires_at > self._now()
        )

    def _op(self, op: Op) -> _Steps:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list(op)
        raise InvalidInput(f"op: unknown operation {type(op).__name__}", fields=("op",))

    def _current(self, target: Target, key: str) -> Generator[_Call, Any, list[Memory]]:
        """Every version of the key, when its live version is at this target; else []."""
        history: list[Memory] = yield _History(target, encode_key(target.labels, key))
        live = [m for m in history if self._live(m)]
        if not live or live[-1].kind is not target.kind:
            return []
        return history

    def _get(self, op: GetOp) -> _Steps:
        target = self._target(op.namespace)
        history = yield from self._current(target, op.key)
        if not history:
            return None
        live = [m for m in history if self._live(m)][-1]
        return Item(
            value=value_of(live.content),
            key=op.key,
            namespace=target.namespace,
            created_at=history[0].created_at,
            updated_at=live.created_at,
        )

    def _put(self, op: PutOp) -> _Steps:
        target = self._target(op.namespace)
        if op.value is None:
            for memory in (yield from self._current(target, op.key)):
                yield _Forget(memory.id)
            return None
        expires = None if op.ttl is None else self._now() + timedelta(minutes=op.ttl)
        yield _Write(
            MemoryCandidate(
                tenant=self.tenant,
                scope=target.scope,
                scope_id=target.scope_id,
                kind=target.kind,
                key=encode_key(target.labels, op.key),
                content=content_of(op.value),
                expires_at=expires,
                source=Source(origin=Origin.API),
            )
        )
        return None

    def _listed(
        self, prefix: NamespacePrefix
    ) -> Generator[_Call, Any, list[tuple[Target, str, Memory]]]:
        """Live items under the prefix, newest first, with their targets and keys."""
        memories: list[Memory] = yield _ListActive(prefix)
        out: list[tuple[Target, str, Memory]] = []
        for memory in memories:
            if not self._live(memory) or memory.key is None:
                continue  # keyless memories are not addressable as LangGraph items
            if (
                self.user_id is not None
                and memory.scope is Scope.USER
                and memory.scope_id != self.user_id
            ):
                continue
            labels, key = decode_key(memory.key)
            if labels[: len(prefix.labels)] != prefix.labels:
                continue
            scope_id = memory.scope_id if memory.scope is not Scope.PLATFORM else None
            out.append((Target(memory.scope, scope_id, memory.kind, labels), key, memory))
        return out

    def _search(self, op: SearchOp) -> _Steps:
        prefix = parse_prefix(op.namespace_prefix)
        if prefix.scope is Scope.USER and prefix.scope_id is not None:
            self._target((Scope.USER.value, prefix.scope_id, "fact"))  # same user rule as get
        found = []
        for target, key, memory in (yield from self._listed(prefix)):
            value = value_of(memory.content)
            if matches_filter(value, op.filter):
                score = word_overlap(op.query, memory.content) if op.query else None
                found.append((target, key, memory, value, score))
        if op.query:
            found.sort(key=lambda f: -(f[4] or 0.0))  # stable: newest first among equals
        return [
            SearchItem(
                namespace=target.namespace,
                key=key,
                value=value,
                created_at=memory.created_at,
                updated_at=memory.created_at,
                score=score,
            )
            for target, key, memory, value, score in found[op.offset : op.offset + op.limit]
        ]

    def _list(self, op: ListNamespacesOp) -> _Steps:
        conditions = [(c.match_type, tuple(c.path)) for c in op.match_conditions or ()]
        namespaces = {t.namespace for t, _, _ in (yield from self._listed(NamespacePrefix()))}
        chosen = {ns for ns in namespaces if matches_namespace(ns, conditions)}
        if op.max_depth is not None:
            chosen = {ns[: op.max_depth] for ns in chosen}
        return sorted(chosen)[op.offset : op.offset + op.limit]


# --- the run: recall once before the first model call, write after the verdict -----------------


@dataclass(frozen=True)
class RecallLimits:
    """How much recalled context the first model call gets."""

    budget_chars: int = 2000
    max_items: int = 20
    max_item_chars: int = 500


def _identity(config: RunnableConfig | None) -> dict[str, str | None]:
    conf = (config or {}).get("configurable", {})
    user_id = conf.get("user_id")
    if not isinstance(user_id, str) or not user_id:
        raise InvalidInput(
            "config: configurable.user_id is required (the run's verified user)",
            fields=("configurable.user_id",),
        )
    return {
        "user_id": user_id,
        "workflow_id": conf.get("workflow_id"),
        "session_id": conf.get("session_id"),
    }


def _query(messages: Sequence[AnyMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text if hasattr(message, "text") else str(message.content)
    return ""


def _already_recalled(messages: Sequence[AnyMessage]) -> bool:
    return any(m.id == RECALL_MESSAGE_ID for m in messages)


def _with_block(messages: Sequence[AnyMessage], result: RecallResult) -> dict[str, Any]:
    text = result.text or "No stored memory applies to this request."
    block = SystemMessage(content=f"Memory for this run:\n{text}", id=RECALL_MESSAGE_ID)
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), block, *messages]}


def _request(
    tenant: str, config: RunnableConfig | None, query: str, limits: RecallLimits
) -> RecallRequest:
    return RecallRequest(
        tenant=tenant,
        query=query,
        budget_chars=limits.budget_chars,
        max_items=limits.max_items,
        max_item_chars=limits.max_item_chars,
        **_identity(config),
    )


def recall_node(
    store: MemoryStore, *, tenant: str, limits: RecallLimits | None = None
) -> Callable[[dict[str, Any], RunnableConfig], dict[str, Any]]:
    """A graph node (or ``pre_model_hook``) over ``MessagesState`` that recalls once per thread.

    On its first pass it recalls for ``config["configurable"]`` identity and the latest human
    message, and puts the block first as a system message (id :data:`RECALL_MESSAGE_ID`); later
    passes change nothing. A store failure degrades to an empty block with a warning.
    """
    lim = limits or RecallLimits()

    def node(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages: list[AnyMessage] = list(state.get("messages", []))
        if _already_recalled(messages):
            return {}
        request = _request(tenant, config, _query(messages), lim)
        try:
            result = store.recall(request)
        except Exception as exc:  # recall must never break the host run
            log.warning("recall failed; the run continues without memory: %s", exc)
            result = RecallResult.empty(degraded=True, reason=str(exc))
        return _with_block(messages, result)

    return node


def arecall_node(
    store: AsyncMemoryStore, *, tenant: str, limits: RecallLimits | None = None
) -> Callable[[dict[str, Any], RunnableConfig], Awaitable[dict[str, Any]]]:
    """:func:`recall_node` over an :class:`AsyncMemoryStore` (use with ``graph.ainvoke``)."""
    lim = limits or RecallLimits()

    async def node(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages: list[AnyMessage] = list(state.get("messages", []))
        if _already_recalled(messages):
            return {}
        request = _request(tenant, config, _query(messages), lim)
        try:
            result = await store.recall(request)
        except Exception as exc:  # recall must never break the host run
            log.warning("recall failed; the run continues without memory: %s", exc)
            result = RecallResult.empty(degraded=True, reason=str(exc))
        return _with_block(messages, result)

    return node


def _lessons(
    verdict: Verdict,
    tenant: str,
    config: RunnableConfig | None,
    task_input: str,
    run_id: str | None,
) -> list[MemoryCandidate]:
    ident = _identity(config)
    lesson = lesson_for(
        verdict,
        tenant=tenant,
        user_id=str(ident["user_id"]),
        workflow_id=ident["workflow_id"],
        task_input=task_input,
        run_id=run_id or f"run-{uuid.uuid4().hex[:16]}",
    )
    return [lesson] if lesson is not None else []


def remember(
    store: MemoryStore,
    verdict: Verdict,
    *,
    tenant: str,
    config: RunnableConfig,
    task_input: str,
    run_id: str | None = None,
) -> Remembered:
    """Once the verdict is final: a rejection with concrete feedback becomes a lesson of the
    run's workflow (or user). Side effect: at most one guarded write; refusals and failures are
    reported in the result, never raised. Writing the same feedback again supersedes."""
    return write_candidates(store, _lessons(verdict, tenant, config, task_input, run_id))


async def aremember(
    store: AsyncMemoryStore,
    verdict: Verdict,
    *,
    tenant: str,
    config: RunnableConfig,
    task_input: str,
    run_id: str | None = None,
) -> Remembered:
    """:func:`remember` over an :class:`AsyncMemoryStore`."""
    return await write_candidates_async(
        store, _lessons(verdict, tenant, config, task_input, run_id)
    )
