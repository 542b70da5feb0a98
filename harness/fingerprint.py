"""Content normalisation and fingerprints, shared by the RecallSet and the MemoryStore."""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["fingerprint", "normalize"]

_WHITESPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """NFKC, case-fold, collapse every run of whitespace to one space, trim."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def fingerprint(text: str) -> str:
    """A stable hex digest of :func:`normalize` (text). Pure; no IO. Any ``str`` has one:
    a lone surrogate (valid in a JSON string, not in UTF-8) is hashed as its code point."""
    return hashlib.sha256(normalize(text).encode("utf-8", "surrogatepass")).hexdigest()
