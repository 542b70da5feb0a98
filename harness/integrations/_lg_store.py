"""The LangGraph ``BaseStore`` over the MemoryStore (see :mod:`harness.integrations.langgraph`).

Imported through :mod:`harness.integrations.langgraph`, which checks that LangGraph is installed.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

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

from harness.errors import InvalidInput
from harness.identifiers import check_identifier, check_optional_identifier
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
from harness.memory import AsyncMemoryStore, MemoryStore
from harness.memory.domain.listing import BrowseFilter
from harness.memory.domain.types import (
    Memory,
    MemoryCandidate,
    Origin,
    Scope,
    Source,
    Status,
)

__all__ = ["HarnessStore"]

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
        check_identifier(tenant, "tenant")
        check_optional_identifier(user_id, "user_id")
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
            page = store.browse(self.tenant, flt, before=before, limit=_PAGE)
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
            page = await store.browse(self.tenant, flt, before=before, limit=_PAGE)
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
        self._check_user(target.scope, target.scope_id, namespace)
        return target

    def _check_user(
        self, scope: Scope | None, scope_id: str | None, namespace: Sequence[str]
    ) -> None:
        if (
            self.user_id is not None
            and scope is Scope.USER
            and scope_id not in (None, self.user_id)
        ):
            raise InvalidInput(
                f"namespace: {tuple(namespace)!r} belongs to another user; this store serves "
                f"user {self.user_id!r} only",
                fields=("namespace",),
            )

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
        self._check_user(prefix.scope, prefix.scope_id, op.namespace_prefix)
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
