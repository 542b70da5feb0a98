"""Shared values of the guard: a rule, a finding, a text index, and masking.

Speed matters (the guard runs on every write): a rule names ``anchors``, the lower-case words or
stems at which its matches start, so it only runs its pattern where one of them occurs; token
rules only look inside long whitespace-free words. A rule with neither searches the whole text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import ahocorasick

__all__ = ["Finding", "GuardRule", "RuleSet", "TextIndex", "entropy", "looks_random", "mask"]

_PART = re.compile(r"[A-Za-z0-9]+")
_WORDY = re.compile(r"[A-Z]?[a-z]{4,}")
_KEYISH = re.compile(r"[0-9A-Z]")


class TextIndex:
    """Lazily computed facts about one text that many rules share: lower case, long words."""

    def __init__(self, text: str):
        self.text = text

    @cached_property
    def lowered(self) -> str:
        low = self.text.lower()
        # a few characters change length when lowered; then anchors would point elsewhere
        return low if len(low) == len(self.text) else ""

    @cached_property
    def long_words(self) -> list[tuple[int, int]]:
        """Spans of whitespace-free runs of 12+ characters that hold a digit or an inner capital.

        Every key shape the token rules know has one; prose words and plain URLs do not.
        """
        spans: list[tuple[int, int]] = []
        pos = 0
        text = self.text
        for word in text.split():
            if len(word) >= 12:
                at = text.find(word, pos)
                pos = at + len(word)
                if _KEYISH.search(word, 1):
                    spans.append((at, pos))
        return spans

    @cached_property
    def ascii(self) -> bool:
        return self.text.isascii()


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
    _words: frozenset[str] = field(init=False, repr=False, compare=False)
    _stems: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _unicode: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        words = {a for a in self.anchors if a.isascii() and a.isalpha()}
        stems = tuple(
            a.rstrip("*") for a in self.anchors if a not in words and a.rstrip("*").isascii()
        )
        unicode = tuple(a.rstrip("*") for a in self.anchors if not a.rstrip("*").isascii())
        object.__setattr__(self, "_words", frozenset(words))
        object.__setattr__(self, "_stems", stems)
        object.__setattr__(self, "_unicode", unicode)

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


def _earlier_starts(text: str, i: int) -> list[int]:
    """Starts of the identifier parts before ``i`` and of the two words before it."""
    j = i
    while j > 0 and i - j < 40 and (text[j - 1].isalnum() or text[j - 1] in "_.-"):
        j -= 1
    starts = [m.start() for m in _PART.finditer(text, j, i)] if j < i else []
    for _ in range(2):
        k = j
        while k > 0 and text[k - 1] in " \t":
            k -= 1
        j = k
        while j > 0 and k - j < 20 and text[j - 1].isalpha():
            j -= 1
        if j == k:
            break
        starts.append(j)
    return starts


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
    core = re.sub(r"[-_/+.=]", "", value)
    if len(core) < min_len:
        return False
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


class RuleSet:
    """Rules compiled for one pass: each anchor is looked up once for all rules that share it.

    The result is the same as asking every rule's :meth:`GuardRule.find` in turn (any accepted
    match), at a fraction of the cost: one Aho-Corasick pass over the lower-cased text finds
    every anchor, and patterns only run where an anchor occurs.
    """

    def __init__(self, rules: tuple[GuardRule, ...]):
        self.rules = rules
        order = {id(rule): n for n, rule in enumerate(rules)}
        words: dict[str, list[int]] = {}
        stems: dict[str, list[int]] = {}
        unicode: dict[str, list[int]] = {}
        for rule in rules:
            n = order[id(rule)]
            for word in rule._words:
                words.setdefault(word, []).append(n)
            for stem in rule._stems:
                stems.setdefault(stem, []).append(n)
            for anchor in rule._unicode:
                unicode.setdefault(anchor, []).append(n)
        # one Aho-Corasick pass over the lower-cased text finds every anchor of every rule
        self._automaton: Any = ahocorasick.Automaton()
        for table, whole in ((words, True), (stems, False), (unicode, False)):
            for anchor, ns in table.items():
                self._automaton.add_word(anchor, (len(anchor), tuple(ns), whole))
        if len(self._automaton):
            self._automaton.make_automaton()
        self._back_off = tuple(rule.back_off for rule in rules)
        self._vendor = tuple(r for r in rules if r.tokens and r.trigger is not None)
        self._generic = tuple(r for r in rules if r.tokens and r.trigger is None)
        self._plain = tuple(r for r in rules if not r.tokens and not r.anchors)

    def find(
        self, text: str, allow: Callable[[GuardRule], bool] | None = None
    ) -> tuple[GuardRule, re.Match[str]] | None:
        """The first accepted (rule, match) in ``text``, or None. Pure.

        Vendor token shapes first, then anchored rules in text order, then generic token rules
        (entropy), then rules without anchors: the most specific rule names the finding.
        """
        index = TextIndex(text)
        if not index.lowered:  # lower() changed the length: no anchors, plain search
            for rule in self.rules:
                m = rule.find(text) if allow is None or allow(rule) else None
                if m is not None:
                    return rule, m
            return None
        return (
            self._tokens_find(text, index, self._vendor, allow)
            or self._anchored_find(text, index, allow)
            or self._tokens_find(text, index, self._generic, allow)
            or self._plain_find(text, allow)
        )

    def _plain_find(
        self, text: str, allow: Callable[[GuardRule], bool] | None
    ) -> tuple[GuardRule, re.Match[str]] | None:
        for rule in self._plain:
            if allow is None or allow(rule):
                m = rule.find(text)
                if m is not None:
                    return rule, m
        return None

    @staticmethod
    def _tokens_find(
        text: str,
        index: TextIndex,
        rules: tuple[GuardRule, ...],
        allow: Callable[[GuardRule], bool] | None,
    ) -> tuple[GuardRule, re.Match[str]] | None:
        if allow is not None:
            rules = tuple(r for r in rules if allow(r))
        if not rules:
            return None
        trigger = rules[0].trigger  # vendor rules share one trigger; generic ones have none
        for start, end in index.long_words:
            if trigger is not None and trigger.search(text, start, end) is None:
                continue
            for rule in rules:
                m = rule._search(text, start, end)
                if m is not None:
                    return rule, m
        return None

    def _anchored_find(
        self, text: str, index: TextIndex, allow: Callable[[GuardRule], bool] | None
    ) -> tuple[GuardRule, re.Match[str]] | None:
        low = index.lowered
        back_off = self._back_off
        candidates: set[tuple[int, int]] = set()
        if not len(self._automaton):
            return None
        size = len(low)
        for end, (length, ns, whole) in self._automaton.iter(low):
            i = end - length + 1
            if whole and (
                (i and low[i - 1].isalpha()) or (end + 1 < size and low[end + 1].isalpha())
            ):
                continue
            earlier: list[int] | None = None
            for n in ns:
                candidates.add((i, n))
                if back_off[n]:
                    if earlier is None:
                        earlier = _earlier_starts(text, i)
                    for e in earlier:
                        candidates.add((e, n))
        rules = self.rules
        for start, n in sorted(candidates):
            rule = rules[n]
            if (allow is not None and not allow(rule)) or (
                rule.starts and not low.startswith(rule.starts, start)
            ):
                continue
            m = rule.pattern.match(text, start)
            if m is not None and (rule.accept is None or rule.accept(m)):
                return rule, m
        return None
