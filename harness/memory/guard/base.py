"""Shared values of the guard: a rule, a finding, a text index, and masking.

Speed matters (the guard runs on every write): a rule names ``anchors``, the lower-case words or
stems at which its matches start, so it only runs its pattern where one of them occurs; token
rules only look inside long whitespace-free words. A rule with neither searches the whole text.
:mod:`harness.memory.guard.ruleset` runs many rules in one pass over a text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.memory.guard.normalise import long_words_of
from harness.memory.guard.variants import lowered_source

__all__ = ["Finding", "GuardRule", "TextIndex", "entropy", "is_path", "looks_random", "mask"]

_WORDY = re.compile(r"[A-Z]?[a-z]{4,}")
_KEYISH = re.compile(r"[0-9A-Z]")
_SEPARATORS = re.compile(r"[-_/+.=]")
# in ASCII text exactly the characters str.isupper / islower / isdigit accept
_TWO_UPPER = re.compile(r"[A-Z][^A-Z]*[A-Z]")
_TWO_LOWER = re.compile(r"[a-z][^a-z]*[a-z]")
_TWO_DIGITS = re.compile(r"[0-9][^0-9]*[0-9]")


class TextIndex:
    """Facts about one text that many rules share: lower case, ASCII, long words (lazily).

    Plain attributes, not ``functools.cached_property``: every find reads the first two, and
    a cached property costs a lock on first use (Python 3.11).
    """

    __slots__ = ("_long_words", "ascii", "lowered", "text")

    def __init__(self, text: str):
        self.text = text
        low = text.lower()
        # a few characters change length when lowered; then anchors would point elsewhere
        self.lowered = low if len(low) == len(text) else ""
        self.ascii = text.isascii()
        self._long_words: list[tuple[int, int]] | None = None

    @property
    def long_words(self) -> list[tuple[int, int]]:
        """Spans of whitespace-free runs of 12+ characters that hold a digit or an inner capital.

        Every key shape the token rules know has one; prose words and plain URLs do not.
        """
        if self._long_words is None:
            spans: list[tuple[int, int]] = []
            pos = 0
            text = self.text
            for word in long_words_of(text):
                at = text.find(word, pos)
                pos = at + len(word)
                if _KEYISH.search(word, 1):
                    spans.append((at, pos))
            self._long_words = spans
        return self._long_words


@dataclass(frozen=True)
class GuardRule:
    """One named pattern; ``rule`` is the stable identifier reported on rejection.

    ``accept`` (optional) decides whether a match counts, e.g. that the captured value looks
    random or that an instruction is aimed at the reader; ``secret`` says whether the matched
    text is a credential that must be masked when reported. ``anchors`` are lower-case words
    (matched as whole words) or stems ending in ``*`` where a match starts; with
    ``back_off`` the match may also start up to two words or identifier parts earlier
    (``api_key`` found from ``key``). ``tokens`` limits the search to long words, and
    ``trigger`` (shared by many token rules) to the long words it matches. ``starts``
    (lower case) are the only prefixes a match can begin with: a cheap test before the pattern.
    ``variants`` pair the first two lower-case characters of a start with the source of a smaller
    pattern (same flags) that matches there exactly as ``pattern`` does: only the alternatives
    that can begin so (see :mod:`harness.memory.guard.variants`). Each is compiled on first use.
    ``refuses_lowered`` (optional, for an IGNORECASE pattern) tells from a match over the
    lower-cased text that ``accept`` would refuse it, using only tests that do not depend on case.
    """

    rule: str
    reason: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] | None = None
    secret: bool = True
    anchors: tuple[str, ...] = ()
    back_off: bool = False
    tokens: bool = False
    trigger: re.Pattern[str] | None = None
    starts: tuple[str, ...] = ()
    variants: tuple[tuple[str, str], ...] = ()
    refuses_lowered: Callable[[re.Match[str]], bool] | None = None
    _words: frozenset[str] = field(init=False, repr=False, compare=False)
    _stems: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _unicode: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _variants: dict[str, re.Pattern[str] | str] = field(init=False, repr=False, compare=False)
    _lowered: list[re.Pattern[str]] = field(init=False, repr=False, compare=False)
    _lowered_variants: dict[str, re.Pattern[str] | str] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        words = {a for a in self.anchors if a.isascii() and a.isalpha()}
        stems = tuple(
            a.rstrip("*") for a in self.anchors if a not in words and a.rstrip("*").isascii()
        )
        unicode = tuple(a.rstrip("*") for a in self.anchors if not a.rstrip("*").isascii())
        object.__setattr__(self, "_words", frozenset(words))
        object.__setattr__(self, "_stems", stems)
        object.__setattr__(self, "_unicode", unicode)
        object.__setattr__(self, "_variants", dict(self.variants))
        # the lowered patterns are written and compiled when first asked for (not at import)
        object.__setattr__(self, "_lowered", [])
        object.__setattr__(self, "_lowered_variants", dict(self.variants))

    def pattern_for(self, start: str) -> re.Pattern[str]:
        """The pattern to match where the text (lower-cased) begins with ``start``. Pure.

        A variant when one is known for its first two characters, else ``pattern``.
        """
        found = self._variants.get(start[:2])
        if found is None:
            return self.pattern
        if isinstance(found, str):
            # compiled when first needed: most starts never occur, and compiling all costs time
            found = self._variants[start[:2]] = re.compile(found, self.pattern.flags)
        return found

    def lowered_for(self, start: str) -> re.Pattern[str] | None:
        """:meth:`pattern_for`, lower-cased for the lower-cased text (see ``lowered_source``);
        None for a pattern that does not ignore case or has no anchors. Pure."""
        if not (self.pattern.flags & re.IGNORECASE and self.anchors):
            return None
        flags = self.pattern.flags & ~re.IGNORECASE
        found = self._lowered_variants.get(start[:2])
        if found is None:
            if not self._lowered:
                lowered = re.compile(lowered_source(self.pattern.pattern), flags)
                assert lowered.groupindex == self.pattern.groupindex
                self._lowered.append(lowered)
            return self._lowered[0]
        if isinstance(found, str):
            found = self._lowered_variants[start[:2]] = re.compile(lowered_source(found), flags)
        return found

    def find(self, text: str) -> re.Match[str] | None:
        """The first accepted match anywhere in ``text``, or None. Pure.

        :class:`RuleSet` uses ``anchors`` / ``tokens`` to look in fewer places; alone, a rule
        searches the whole text.
        """
        return self._search(text, 0, len(text))

    def _search(self, text: str, pos: int, endpos: int) -> re.Match[str] | None:
        while (m := self.pattern.search(text, pos, endpos)) is not None:
            if self.accept is None or self.accept(m):
                return m
            # a refused match may hide an accepted one that starts inside it
            pos = m.start() + 1
        return None


@dataclass(frozen=True)
class Finding:
    """Why a field was refused: the rule, where (in the original field), and a masked excerpt."""

    rule: str
    reason: str
    field: str
    position: int
    excerpt: str
    view: str = "text"

    def shown(self) -> str:
        """The masked excerpt, naming the decoding that revealed it; never the secret itself."""
        return self.excerpt if self.view == "text" else f"{self.excerpt} (seen after {self.view})"

    def describe(self) -> str:
        """One line a person can act on; never contains the secret itself."""
        return f"{self.reason}: field {self.field!r} at character {self.position}: {self.shown()}"


def mask(value: str) -> str:
    """Show the shape of a secret, not the secret: a short known prefix, then its length."""
    value = value.strip()
    keep = 0
    prefix = re.match(r"[A-Za-z]{1,10}[_\-.](?:[a-z0-9]{1,8}[_\-.])?", value)
    if prefix and len(value) - prefix.end() >= 12:
        keep = prefix.end()
    return f"{value[:keep]}{'*' * 6}({len(value)} chars)"


def looks_random(value: str, *, min_len: int = 20, classes: int = 3) -> bool:
    """True when ``value`` reads like generated key material, not a word, hash or identifier."""
    if len(value) < min_len:
        return False  # the cheap test first: removing separators only makes it shorter
    core = _SEPARATORS.sub("", value)
    if len(core) < min_len:
        return False
    if core.isascii():  # the usual case: the same three counts, done by the regex engine
        kinds = (
            _TWO_UPPER.search(core) is not None,
            _TWO_LOWER.search(core) is not None,
            _TWO_DIGITS.search(core) is not None,
        )
    else:
        kinds = (
            sum(c.isupper() for c in core) >= 2,
            sum(c.islower() for c in core) >= 2,
            sum(c.isdigit() for c in core) >= 2,
        )
    if sum(kinds) < classes:
        return False
    if sum(len(w) for w in _WORDY.findall(core)) > 0.5 * len(core):
        return False
    return entropy(core) >= (3.0 if len(core) < 24 else 3.5)


def entropy(text: str) -> float:
    """Shannon entropy in bits per character. Pure."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.\-]+)+/?|[A-Za-z]:\\[\w.\\\-]*")


def is_path(value: str) -> bool:
    """Whether ``value`` is a file path made of words ("/var/www/html", "~/.pgpass"), a
    reference rather than a secret. Pure."""
    if _PATH.fullmatch(value) is None:
        return False
    return not any(looks_random(p, min_len=12, classes=2) for p in re.split(r"[/\\]", value))
