"""The one error hierarchy of harness-memory.

Every error raised on purpose by the library derives from :class:`HarnessError`. Driver errors
(psycopg, SQLAlchemy) are translated into :class:`StoreUnavailable` (a retry may help),
:class:`StoreMisconfigured` (it will not) or :class:`StoreError` at the store boundary only.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "ConflictingState",
    "EmbeddingModelMismatch",
    "HarnessError",
    "IncompleteRecall",
    "InvalidInput",
    "MemoryNotFound",
    "MemoryRejected",
    "StoreError",
    "StoreMisconfigured",
    "StoreUnavailable",
]


#: "scope_id is required ...", "tenant must not be empty": a rule message naming its field.
_FIELD_RULE = re.compile(r"([a-z][a-z0-9_]*) (?:is|must) ")


class HarnessError(Exception):
    """Base of every error harness-memory raises on purpose."""


class InvalidInput(HarnessError, ValueError):
    """Input failed validation; ``fields`` names every offending field (dotted paths)."""

    def __init__(
        self,
        message: str,
        *,
        fields: tuple[str, ...] = (),
        errors: list[Any] | None = None,
        details: tuple[tuple[str, str], ...] = (),
    ):
        super().__init__(message)
        self.fields = fields
        self.errors = errors or []
        self.details = details or tuple((f, message) for f in fields)

    @property
    def field(self) -> str | None:
        """The first offending field, or None."""
        return self.fields[0] if self.fields else None

    @classmethod
    def from_pydantic(cls, model: str, exc: Any) -> InvalidInput:
        """Build from a pydantic ``ValidationError``, keeping each field and message.

        Errors raised by nested models (already ``InvalidInput``) keep their own field paths,
        prefixed with where the nested model sits.
        """
        details: list[tuple[str, str]] = []
        errors = exc.errors(include_url=False)
        for err in errors:
            where = ".".join(str(p) for p in err["loc"])
            nested = (err.get("ctx") or {}).get("error")
            if isinstance(nested, InvalidInput) and nested.details:
                details += [
                    (f"{where}.{sub}" if where else sub, msg) for sub, msg in nested.details
                ]
                continue
            msg = err["msg"].removeprefix("Value error, ")
            if not where:
                # A model-level rule has no field path; its message starts with the field it
                # is about ("scope_id is required ..."), which is what a caller needs to see.
                named = _FIELD_RULE.match(msg)
                where = named.group(1) if named else model
            details.append((where, msg))
        message = f"invalid {model}: " + "; ".join(
            m if f == model or m.startswith(f"{f} ") else f"{f}: {m}" for f, m in details
        )
        return cls(
            message, fields=tuple(f for f, _ in details), errors=errors, details=tuple(details)
        )


class MemoryRejected(HarnessError):
    """The guard refused a candidate. ``rule`` is a stable identifier, ``reason`` is prose.

    ``field`` (e.g. ``content``, ``source.run_id``) and ``position`` (character offset in that
    field) say where; ``excerpt`` shows what matched with any secret masked, never in clear.
    """

    def __init__(
        self,
        reason: str,
        *,
        rule: str,
        index: int | None = None,
        field: str | None = None,
        position: int | None = None,
        excerpt: str | None = None,
    ):
        where = f" (candidate {index})" if index is not None else ""
        at = ""
        if field is not None:
            at = f" [field {field!r}" + (f", character {position}" if position is not None else "")
            at += f": {excerpt}]" if excerpt else "]"
        super().__init__(f"memory rejected by guard rule {rule!r}{where}: {reason}{at}")
        self.reason = reason
        self.rule = rule
        self.index = index
        self.field = field
        self.position = position
        self.excerpt = excerpt


class MemoryNotFound(HarnessError, KeyError):
    """No memory (or RecallSet item) with that id exists."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class ConflictingState(HarnessError):
    """The operation does not apply to the item's current state (e.g. approving an active item)."""


class EmbeddingModelMismatch(HarnessError):
    """The store's vectors were built by another embedding model than the one configured."""

    def __init__(self, stored: str, stored_dim: int, configured: str, configured_dim: int):
        super().__init__(
            f"this store's vectors were built with {stored!r} ({stored_dim} dims) but the configured "
            f"embedding model is {configured!r} ({configured_dim} dims). Mixing them would make "
            "similarity meaningless. Either configure the original model (HARNESS_EMBED_MODEL / "
            "HARNESS_EMBED_MODEL_PATH) or rebuild every vector with the new one: "
            "`harness-memory reembed`."
        )
        self.stored = stored
        self.stored_dim = stored_dim
        self.configured = configured
        self.configured_dim = configured_dim


class StoreError(HarnessError):
    """The database answered with an error the caller did not cause."""


class StoreUnavailable(StoreError):
    """The database could not be reached or timed out; a retry may succeed."""


class StoreMisconfigured(StoreError):
    """The database refused the configuration (wrong password, missing database or extension,
    SSL required, unknown host, missing privilege, schema behind). Retrying will not help; the
    message says what to change. Any URL in it is redacted."""


class IncompleteRecall(HarnessError):
    """Strict recall: a constraint could not be placed in the context."""
