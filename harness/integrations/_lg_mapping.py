"""Pure rules of the LangGraph store: namespaces <-> (scope, scope id, kind), values <-> text.

The namespace layout (documented in :mod:`harness.integrations.langgraph`)::

    ("user", user_id, kind, *labels)          ("workflow", workflow_id, kind, *labels)
    ("session", session_id, kind, *labels)    ("platform", kind, *labels)

The tenant is never part of a namespace: it is fixed when the store is built, from the
caller's verified context. No IO, no LangGraph import: property-testable on its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import InvalidInput
from harness.memory.domain.types import Kind, Scope

__all__ = [
    "NamespacePrefix",
    "Target",
    "content_of",
    "decode_key",
    "encode_key",
    "matches_filter",
    "matches_namespace",
    "parse_namespace",
    "parse_prefix",
    "word_overlap",
]

_LAYOUT = (
    '("user", user_id, kind, ...), ("workflow", workflow_id, kind, ...), '
    '("session", session_id, kind, ...) or ("platform", kind, ...), '
    f"kind one of {', '.join(k.value for k in Kind)}"
)
#: Memory keys of items stored under extra labels: ``ns:<label>.<label>..<key>``. Labels never
#: hold a period (LangGraph refuses them), so the first ``..`` ends the labels.
_LABELLED = "ns:"


@dataclass(frozen=True)
class Target:
    """Where one LangGraph item lives in the MemoryStore."""

    scope: Scope
    scope_id: str | None
    kind: Kind
    labels: tuple[str, ...] = ()

    @property
    def namespace(self) -> tuple[str, ...]:
        """The LangGraph namespace of this target (the inverse of :func:`parse_namespace`)."""
        head = (
            (self.scope.value,)
            if self.scope is Scope.PLATFORM
            else (self.scope.value, self.scope_id or "")
        )
        return (*head, self.kind.value, *self.labels)


@dataclass(frozen=True)
class NamespacePrefix:
    """A search or listing prefix: each part None means "any"."""

    scope: Scope | None = None
    scope_id: str | None = None
    kind: Kind | None = None
    labels: tuple[str, ...] = ()


def _bad(ns: Sequence[str], why: str) -> InvalidInput:
    return InvalidInput(
        f"namespace: {tuple(ns)!r} {why}; expected {_LAYOUT}", fields=("namespace",)
    )


def _scope(ns: Sequence[str], label: str) -> Scope:
    try:
        return Scope(label)
    except ValueError:
        raise _bad(ns, f"starts with {label!r}, not a scope") from None


def _kind(ns: Sequence[str], label: str) -> Kind:
    try:
        return Kind(label)
    except ValueError:
        raise _bad(ns, f"names kind {label!r}, not a kind") from None


def parse_namespace(ns: Sequence[str]) -> Target:
    """The target of a full namespace; ``InvalidInput`` naming ``namespace`` when it does not
    follow the layout."""
    if not ns:
        raise _bad(ns, "is empty")
    scope = _scope(ns, ns[0])
    rest = tuple(ns[1:])
    scope_id: str | None = None
    if scope is not Scope.PLATFORM:
        if not rest:
            raise _bad(ns, f"lacks the {scope.value} id")
        scope_id, rest = rest[0], rest[1:]
    if not rest:
        raise _bad(ns, "lacks the kind")
    return Target(scope, scope_id, _kind(ns, rest[0]), rest[1:])


def parse_prefix(prefix: Sequence[str]) -> NamespacePrefix:
    """A (possibly partial) namespace prefix: ``()``, ``("user",)``, ``("user", "alice")``..."""
    if not prefix:
        return NamespacePrefix()
    scope = _scope(prefix, prefix[0])
    rest = tuple(prefix[1:])
    scope_id: str | None = None
    if scope is not Scope.PLATFORM:
        if not rest:
            return NamespacePrefix(scope)
        scope_id, rest = rest[0], rest[1:]
    if not rest:
        return NamespacePrefix(scope, scope_id)
    return NamespacePrefix(scope, scope_id, _kind(prefix, rest[0]), rest[1:])


def encode_key(labels: tuple[str, ...], key: str) -> str:
    """The memory key of ``key`` under extra ``labels``: the key itself when there are none (so
    an item put under ``("user", id, kind)`` takes part in precedence with every other item of
    that key)."""
    if not labels:
        if key.startswith(_LABELLED):
            raise InvalidInput(
                f"key: {key!r} must not start with {_LABELLED!r} (reserved for labelled namespaces)",
                fields=("key",),
            )
        return key
    return f"{_LABELLED}{'.'.join(labels)}..{key}"


def decode_key(memory_key: str) -> tuple[tuple[str, ...], str]:
    """The inverse of :func:`encode_key`: (labels, key)."""
    if memory_key.startswith(_LABELLED) and ".." in memory_key:
        labels, key = memory_key[len(_LABELLED) :].split("..", 1)
        return tuple(labels.split(".")), key
    return (), memory_key


def _json_object(text: str) -> bool:
    if not text.startswith("{"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def content_of(value: Mapping[str, Any]) -> str:
    """The stored text of a LangGraph value.

    ``{"content": "text"}`` is stored as the text itself (what recall renders for the model);
    any other value as canonical JSON. :func:`value_of` reverses it exactly.
    """
    content = value.get("content")
    if set(value) == {"content"} and isinstance(content, str) and not _json_object(content):
        return content
    try:
        return json.dumps(dict(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"value: must be JSON-serialisable ({exc})", fields=("value",)) from None


def value_of(content: str) -> dict[str, Any]:
    """The LangGraph value of stored text (the inverse of :func:`content_of`)."""
    if _json_object(content):
        loaded: dict[str, Any] = json.loads(content)
        return loaded
    return {"content": content}


_OPS = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _compare(actual: Any, cond: Any) -> bool:
    if isinstance(cond, Mapping) and cond and all(str(k).startswith("$") for k in cond):
        for op, expected in cond.items():
            if op not in _OPS:
                raise InvalidInput(
                    f"filter: unknown operator {op!r} (known: {sorted(_OPS)})", fields=("filter",)
                )
            try:
                if not _OPS[op](actual, expected):
                    return False
            except TypeError:
                return False
        return True
    return bool(actual == cond)


def matches_filter(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter semantics: every field matches exactly or by ``$eq/$ne/$gt/$gte/$lt/
    $lte``; a dotted field reaches into nested objects; a missing field never matches."""
    for field, cond in (flt or {}).items():
        current: Any = value
        for part in field.split("."):
            if not isinstance(current, Mapping) or part not in current:
                return False
            current = current[part]
        if not _compare(current, cond):
            return False
    return True


def matches_namespace(ns: tuple[str, ...], conditions: Sequence[tuple[str, Sequence[str]]]) -> bool:
    """Whether ``ns`` meets every (``"prefix"`` | ``"suffix"``, path) condition; ``"*"`` in a
    path matches any one label."""
    for match_type, path in conditions:
        if len(path) > len(ns):
            return False
        part = ns[: len(path)] if match_type == "prefix" else ns[len(ns) - len(path) :]
        if any(p != "*" and p != label for p, label in zip(path, part, strict=True)):
            return False
    return True


_WORD = re.compile(r"\w+")


def word_overlap(query: str, text: str) -> float:
    """Share of the query's distinct words that occur in ``text`` (case-folded), 0..1."""
    wanted = set(_WORD.findall(query.casefold()))
    if not wanted:
        return 0.0
    return len(wanted & set(_WORD.findall(text.casefold()))) / len(wanted)
