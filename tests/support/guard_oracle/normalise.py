"""Views of a text for the guard: what a reader (or a model) would see once the disguise is off.

Every view keeps a map back to the original text so a rejection can say where the match is. The
cheap path matters: plain ASCII text without line breaks or long tokens gets no extra view at all.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["View", "clean", "decoded_views", "fold_confusables", "joined_lines", "views"]

# Zero-width, joiners, word joiner, BOM, soft hyphen and every bidi control: invisible to a reader.
_INVISIBLE = dict.fromkeys(
    [
        0x00AD,
        0x180E,
        0x200B,
        0x200C,
        0x200D,
        0x200E,
        0x200F,
        0x2060,
        0x2061,
        0x2062,
        0x2063,
        0x2064,
        0xFEFF,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    ]
)

# Letters of other scripts that render like Latin ones (the common subset of Unicode
# confusables.txt for Cyrillic and Greek). Only used on the secret view: a Russian sentence
# folded to Latin look-alikes is nonsense, but it cannot become a token shape.
_CONFUSABLES = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеіјорсхуѕԁһӏԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧαβεικνορτυχ",
    "ABESIJKMHOPCTXYaeijopcxysdhlqwABEZHIKMNOPTYXaBeikvoptux",
)


@dataclass(frozen=True)
class View:
    """One reading of a field: ``text`` plus ``origin(i)`` mapping an index back to the field."""

    text: str
    how: str
    origin: Callable[[int], int]


def _identity(i: int) -> int:
    return i


_HAS_INVISIBLE = re.compile("[" + "".join(map(chr, _INVISIBLE)) + "]")
_HAS_CONFUSABLE = re.compile("[\u0370-\u03ff\u0400-\u052f]")


# Every other line separator reads as "\n" (issue 31: the guard's rules see a line break
# wherever a reader does), one for one.
_AS_NEWLINE = str.maketrans(dict.fromkeys(map(ord, "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"), "\n"))


def clean(text: str) -> str:
    """NFKC-normalise, drop invisible characters, read every line separator as "\n". Pure."""
    text = text.translate(_AS_NEWLINE)
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    # str.translate looks every character up in a dict: only pay for it when needed
    return text.translate(_INVISIBLE) if _HAS_INVISIBLE.search(text) else text


def fold_confusables(text: str) -> str:
    """Replace Cyrillic and Greek look-alikes of Latin letters by the Latin letter. Pure."""
    if text.isascii() or not _HAS_CONFUSABLE.search(text):
        return text
    return text.translate(_CONFUSABLES)


def _clean_origin(original: str) -> Callable[[int], int]:
    def origin(i: int) -> int:
        # only runs on a rejection: walk the original until its cleaned prefix reaches i
        length = 0
        for pos, ch in enumerate(original):
            length += len(clean(ch))
            if length > i:
                return pos
        return len(original)

    return origin


_LINE_BREAK = re.compile(r"[ \t]*\r?\n[ \t>#*/]*")


def joined_lines(text: str) -> tuple[str, Callable[[int], int]]:
    """The text with line breaks (and the indentation or comment marks after them) removed."""
    cuts: list[tuple[int, int]] = []  # (position in joined text, characters removed so far)
    parts: list[str] = []
    last = removed = 0
    for m in _LINE_BREAK.finditer(text):
        parts.append(text[last : m.start()])
        at = m.start() - removed
        removed += m.end() - m.start()
        cuts.append((at, removed))
        last = m.end()
    parts.append(text[last:])

    def origin(i: int) -> int:
        shift = 0
        for at, total in cuts:
            if i >= at:
                shift = total
        return i + shift

    return "".join(parts), origin


_B64_TOKEN = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")
_HEX_TOKEN = re.compile(r"(?:0x)?((?:[0-9a-fA-F]{2}){10,})")
_URL_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def _readable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in text)
    return text if text and printable >= 0.95 * len(text) else None


def decoded_views(text: str) -> Iterator[tuple[str, str, int]]:
    """Readable decodings hidden in ``text``: (decoded text, encoding, start of the token).

    Long base64 / base64url and hex tokens that decode to readable UTF-8, and the URL-decoded
    text when it holds percent escapes. Hashes and random keys decode to bytes, not text, so
    ordinary identifiers produce no view.
    """
    # tokens only live in long whitespace-free words: look nowhere else (this runs on every write)
    long_words = [w for w in text.split() if len(w) >= 16]
    for word in long_words:
        for m in _B64_TOKEN.finditer(word):
            token = m.group()
            # base64 of text mixes cases and digits; hex, words and numbers do not
            if token.islower() or token.isupper() or token.isalpha() or token.isdigit():
                continue
            body = token.rstrip("=")
            padded = body + "=" * (-len(body) % 4)
            for decode in (base64.b64decode, base64.urlsafe_b64decode):
                try:
                    raw = decode(padded)
                except (binascii.Error, ValueError):
                    continue
                readable = _readable(raw)
                if readable is not None and len(readable) >= 8:
                    yield readable, "base64", text.find(token)
                    break
        for m in _HEX_TOKEN.finditer(word):
            readable = _readable(bytes.fromhex(m.group(1)))
            if readable is not None:
                yield readable, "hex", text.find(m.group())
    if "%" in text and _URL_ESCAPE.search(text):
        unquoted = urllib.parse.unquote(text)
        if unquoted != text:
            yield unquoted, "url-encoded", text.index("%")


def views(text: str) -> Iterator[View]:
    """The views the secret rules read, cheapest first: cleaned, line-joined, then decoded."""
    cleaned = fold_confusables(clean(text))
    origin = _identity if cleaned == text else _clean_origin(text)
    yield View(cleaned, "text", origin)
    if "\n" in cleaned:
        joined, join_origin = joined_lines(cleaned)
        yield View(joined, "joined lines", lambda i: origin(join_origin(i)))
    for decoded, how, start in decoded_views(cleaned):
        yield View(fold_confusables(clean(decoded)), how, _constant(origin(start)))


def _constant(at: int) -> Callable[[int], int]:
    # a decoded text has no character-level map back: report where its token starts
    def origin(_i: int) -> int:
        return at

    return origin
