"""One rule for identity strings and one for free text, applied at every entry point.

Identity strings are tenants, scope ids, user/workflow/session ids, keys, approvers and token
identities. They are compared byte for byte in SQL, so ``"alice "`` and ``"alice"`` would be two
users: instead of silently normalising (which made a padded tenant read another tenant's
memories), anything ambiguous is refused with :class:`InvalidInput` naming the field. That
includes what a reader cannot see: ``"alice\u200b"`` would show as ``alice`` in the console, so
every character that renders as nothing (format controls, fillers, variation selectors), every
space but U+0020, and a combining mark with no letter before it are refused too.

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
    "invisible",
    "text_problem",
]

MAX_IDENTIFIER = 200
# The longest memory content any setting admits (Settings.max_content_chars is bounded by it):
# a ceiling checked before any validator walks the text.
MAX_CONTENT_CEILING = 100_000

# Every "other" category: controls, format characters (zero-width, joiners, bidi controls,
# BOM, soft hyphen, tags), lone surrogates, private use (no standard glyph), unassigned; and the
# line/paragraph separators (which split lines).
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_MARKS = frozenset({"Mn", "Mc", "Me"})

# Characters of letter, mark or symbol categories that render as nothing: Unicode's
# Other_Default_Ignorable_Code_Point and Variation_Selector properties (together with Cf they
# make Default_Ignorable_Code_Point, which unicodedata does not expose), and the blank fillers
# outside that property. Ranges are inclusive.
_INVISIBLE_RANGES = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong / jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180D),  # Mongolian free variation selectors
    (0x180F, 0x180F),
    (0x2065, 0x2065),
    (0x2800, 0x2800),  # braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),
    (0x16FE4, 0x16FE4),  # Khitan small script filler
    (0xE0000, 0xE0FFF),  # tags and variation selectors 17-256
)


def invisible(char: str) -> bool:
    """True when ``char`` renders as nothing (or as a blank) on its own: a control, format or
    unassigned character, a separator or space other than U+0020, a filler, a variation
    selector. Pure."""
    category = unicodedata.category(char)
    if category in _FORBIDDEN_CATEGORIES or (category == "Zs" and char != " "):
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _INVISIBLE_RANGES)


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
        if invisible(char):
            return (
                "must not contain control, invisible or blank characters "
                f"(found U+{ord(char):04X} {_name(char)})"
            )
    if unicodedata.category(value[0]) in _MARKS:
        return f"must not start with a combining mark (found U+{ord(value[0]):04X})"
    return None


def _name(char: str) -> str:
    return unicodedata.name(char, "unnamed " + unicodedata.category(char))


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
            holding a control, invisible or blank character (see :func:`invisible`), NUL or a
            lone surrogate, or starting with a combining mark).
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
