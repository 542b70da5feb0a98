"""One rule for identity strings and one for free text, applied at every entry point.

Identity strings are tenants, scope ids, user/workflow/session ids, keys, approvers and token
identities. They are compared byte for byte in SQL, so ``"alice "`` and ``"alice"`` would be two
users: instead of silently normalising (which made a padded tenant read another tenant's
memories), anything ambiguous is refused with :class:`InvalidInput` naming the field.

Pure functions, no IO.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from harness.errors import InvalidInput

__all__ = [
    "MAX_CONTENT_CEILING",
    "MAX_IDENTIFIER",
    "check_identifier",
    "check_optional_identifier",
    "check_text",
    "identifier_problem",
    "text_problem",
]

MAX_IDENTIFIER = 200
# The longest memory content any setting admits (Settings.max_content_chars is bounded by it):
# a ceiling checked before any validator walks the text.
MAX_CONTENT_CEILING = 100_000

# Control characters, lone surrogates, and the line/paragraph separators (which split lines).
_FORBIDDEN_IN_IDENTIFIER = frozenset({"Cc", "Cs", "Zl", "Zp"})


def identifier_problem(value: Any, *, max_length: int = MAX_IDENTIFIER) -> str | None:
    """Why ``value`` is not a valid identity string, or None when it is."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value:
        return "must not be empty"
    if len(value) > max_length:
        return f"{len(value)} characters exceeds the maximum of {max_length}"
    if value != value.strip():
        return "must not start or end with whitespace"
    for char in value:
        if unicodedata.category(char) in _FORBIDDEN_IN_IDENTIFIER:
            return f"must not contain control characters or surrogates (found U+{ord(char):04X})"
    return None


def text_problem(value: Any) -> str | None:
    """Why ``value`` cannot be stored as text (NUL, lone surrogates), or None when it can."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if "\x00" in value:
        return "must not contain NUL characters"
    for char in value:
        if "\ud800" <= char <= "\udfff":
            return f"must not contain lone surrogates (found U+{ord(char):04X})"
    return None


def check_identifier(value: Any, field: str, *, max_length: int = MAX_IDENTIFIER) -> str:
    """Return ``value`` unchanged when it is a valid identity string.

    Raises:
        InvalidInput: naming ``field`` (not a string, empty, too long, padded with whitespace,
            or holding control characters, NUL or lone surrogates).
    """
    problem = identifier_problem(value, max_length=max_length)
    if problem is not None:
        raise InvalidInput(f"{field}: {problem}", fields=(field,))
    return str(value)


def check_optional_identifier(value: Any, field: str) -> str | None:
    """Like :func:`check_identifier`, but None passes through."""
    return None if value is None else check_identifier(value, field)


def check_text(value: Any, field: str, *, max_length: int | None = None) -> str:
    """Return ``value`` unchanged when it can be stored as text.

    Raises:
        InvalidInput: naming ``field`` (not a string, NUL, lone surrogate, too long).
    """
    problem = text_problem(value)
    if problem is None and max_length is not None and len(value) > max_length:
        problem = f"{len(value)} characters exceeds the maximum of {max_length}"
    if problem is not None:
        raise InvalidInput(f"{field}: {problem}", fields=(field,))
    return str(value)
