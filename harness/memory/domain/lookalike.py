"""What a reader sees in a text once look-alikes are off: the one boundary for recall's headers.

Recall labels each item ``- [platform constraint | admin | 2024-01-01]``; stored text that a
reader (or a model) would take for such a label could pass for a policy it is not. Whether a text
imitates the label is decided here, once, on the text as it reads: NFKC, every invisible or
combining character dropped, Cyrillic/Greek look-alike letters folded to Latin, bracket and bar
look-alikes folded to ``[`` and ``|``, every Unicode space and line separator read as one space.
The write path refuses such content (``MemoryCandidate``) and rendering defuses it
(:func:`defuse_headers`), so a memory stored before this rule cannot forge one either.

The guard's views (``harness.memory.guard.normalise``) share the invisible and look-alike tables.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "CONFUSABLES",
    "INVISIBLE",
    "LINE_BREAK",
    "defuse_headers",
    "imitates_header",
    "reader_text",
]

# Zero-width, joiners, word joiner, BOM, soft hyphen and every bidi control: invisible to a reader.
INVISIBLE: dict[int, None] = dict.fromkeys(
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
# confusables.txt for Cyrillic and Greek).
CONFUSABLES = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеіјорсхуѕԁһӏԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧαβεικνορτυχ",
    "ABESIJKMHOPCTXYaeijopcxysdhlqwABEZHIKMNOPTYXaBeikvoptux",
)

# Every character str.splitlines() breaks on (11 with "\r\n"): each starts a new line for a reader.
LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")

# Look-alikes NFKD leaves alone: Latin small capitals and letter variants, Armenian letters,
# Cyrillic and Greek letters that read as Latin small capitals.
_MORE_LOOKALIKES = str.maketrans(
    "ᴀʙᴄᴅᴇғɢʜɪᴊᴋʟᴍɴᴏᴘǫʀꜱᴛᴜᴠᴡʏᴢıȷɑɡɩʋօսոհցքткмнвєϲτυ",
    "abcdefghijklmnopqrstuvwyzijagiuounhgptkmhbectu",
)
# Blank letters: Hangul fillers and the braille blank render as nothing or as a space.
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f")
# Brackets and bars a reader takes for "[" and "|" (NFKC already maps the fullwidth forms).
_BRACKETS = frozenset("[⟦⟨⦋⦍⦏⁅❲❴〔〖〘〚【〈《「『⸢⸤﹝")
_BARS = frozenset("|¦│┃┆┇┊┋╎╏ǀ∣❘❙❚︱︳⎸⎹⏐｜￨")
_SCOPES = "session|workflow|user|platform"
_KINDS = "constraint|preference|lesson|fact|decision"
_HEADER = re.compile(rf"\[ ?(?:{_SCOPES}) ?(?:{_KINDS}) ?\|")


def _reader_char(ch: str) -> str:
    """What one character reads as ('' when invisible), before case folding."""
    if ch in _BRACKETS:
        return "["
    if ch in _BARS:
        return "|"
    if ord(ch) in INVISIBLE or ch in _FILLERS:
        return ""
    category = unicodedata.category(ch)
    if category in ("Cf", "Mn", "Me", "Cc") and not ch.isspace():
        return ""
    if ch.isspace():
        return " "
    return ch


def _lookalike(text: str) -> str:
    return text.translate(CONFUSABLES).translate(_MORE_LOOKALIKES)


@lru_cache(maxsize=4096)
def _reader_of(ch: str) -> str:
    # NFKD splits an accented letter into its base and its (dropped) combining mark, and maps
    # compatibility forms (math bold, fullwidth, circled) onto the plain letter
    if ch in _BRACKETS or ch in _BARS:
        return _reader_char(ch)  # before NFKD, which maps some of them to dashes
    direct = _lookalike(ch)
    if direct != ch:
        return direct  # before NFKD too, which maps e.g. the lunate sigma to a final sigma
    out = []
    for part in unicodedata.normalize("NFKD", ch):
        read = _reader_char(part)
        out.append(_lookalike(read))
    return "".join(out)


_PLAIN = re.compile(r"[ -~]*")


def reader_text(text: str) -> str:
    """``text`` as it reads: look-alikes folded, invisibles dropped, every run of spaces and
    line breaks one space, case-folded. Pure."""
    folded = text if _PLAIN.fullmatch(text) else "".join(_reader_of(ch) for ch in text)
    return re.sub(r" {2,}", " ", folded.casefold())


# Every character a reader takes for "[": the label cannot be there without one. (NFKD maps
# only U+FE47 and U+FF3B onto "[".)
_ANY_BRACKET = re.compile("[" + re.escape("".join(sorted(_BRACKETS | {"\ufe47", "\uff3b"}))) + "]")


def imitates_header(text: str) -> bool:
    """Whether a reader would see recall's item label ``[scope kind |`` somewhere in ``text``.
    Cheap when no character reads as a bracket (one search). Pure."""
    if "[" not in text and (text.isascii() or _ANY_BRACKET.search(text) is None):
        return False
    return _HEADER.search(reader_text(text)) is not None


def defuse_headers(text: str) -> str:
    """``text`` with every bracket a reader takes for ``[`` written as ``(`` when the text
    imitates recall's item label; otherwise unchanged. After it :func:`imitates_header` is
    false, because the label begins with a bracket. Pure."""
    if not imitates_header(text):
        return text
    return "".join("(" if "[" in _reader_of(ch) else ch for ch in text)
