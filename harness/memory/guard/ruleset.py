"""Many guard rules run in one pass over a text: anchors found once, patterns only where they occur.

:class:`RuleSet` finds what asking every rule's :meth:`GuardRule.find` in turn would find: one
Aho-Corasick pass over the lower-cased text finds every anchor of every rule, a back-off walk
finds the starts a rule may begin at before its anchor, and each candidate start is tried first
with the rule's lower-cased pattern (see ``variants.lowered_source``), then in full.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import ahocorasick

from harness.memory.guard.base import GuardRule, TextIndex
from harness.memory.guard.normalise import unusual
from harness.memory.guard.variants import holds_case_odd

__all__ = ["RuleSet"]

_PART = re.compile(r"[A-Za-z0-9]+")


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


# _earlier_starts read by one match over the reversed text: the identifier run ("\w" is
# str.isalnum or "_"), then two (spaces, letters) pairs. "[^\W\d_]" is every letter, but also
# a few number signs ("²", "½") that str.isalpha refuses: a non-ASCII word is checked.
_WALK_BACK = re.compile(r"[\w.\-]{0,40}([ \t]*)([^\W\d_]{0,20})([ \t]*)([^\W\d_]{0,20})")


def _earlier_starts_reversed(text: str, reverse: str, i: int) -> list[int]:
    """:func:`_earlier_starts`, read from ``reverse`` (``text[::-1]``) by one match. Pure."""
    n = len(text)
    m = _WALK_BACK.match(reverse, n - i)
    assert m is not None  # every part may be empty
    j = n - m.start(1)
    starts = [p.start() for p in _PART.finditer(text, j, i)] if j < i else []
    a, b = m.span(2)
    if a == b:
        return starts
    c, d = m.span(4)
    if not reverse.isascii():
        first, second = reverse[a:b], reverse[c:d]
        if not (first.isascii() or first.isalpha()) or not (
            second.isascii() or second.isalpha() or not second
        ):
            return _earlier_starts(text, i)
    starts.append(n - b)
    if c != d:
        starts.append(n - d)
    return starts


_Starts = dict[str, tuple[str, ...]]


def _by_first(starts: tuple[str, ...]) -> _Starts:
    """``starts`` grouped by first character: ``low.startswith(d.get(low[i], ()), i)`` is
    ``low.startswith(starts, i)`` while trying a handful of prefixes instead of all."""
    grouped: dict[str, list[str]] = {}
    for prefix in starts:
        grouped.setdefault(prefix[:1], []).append(prefix)
    return {first: tuple(group) for first, group in grouped.items()}


# Characters of ordinary (English, engineering) text, most frequent first. The automaton tries
# the children of a state one after the other in the order they were added, and every character
# that begins no anchor would try all of them; so the first characters are added in this order,
# and frequent characters that begin no anchor get a filler word that never occurs.
_FREQUENT = " etaoinsrhdlcumfpgwybvk.,0123456789-_/:x'\"()=jqz`[]{}<>;!?@#$%&*+|~\\\n\t"
_FILLER = "\x00\uffff\x00"  # appended to a frequent character: a word no text holds in practice
_Entry = tuple[int, bool, tuple[Any, ...], tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]
_NOTHING: _Entry = (0, False, (), (), (), ())


def _automaton(entries: dict[str, _Entry]) -> Any:
    """An Aho-Corasick automaton over ``entries`` (anchor -> value), added in a fast order.

    A filler word's value asks for nothing (no rule, no back-off), so even a text that held one
    would find no more than without it.
    """
    automaton = ahocorasick.Automaton()
    if not entries:
        return automaton
    by_first: dict[str, list[str]] = {}
    for anchor in entries:
        by_first.setdefault(anchor[0], []).append(anchor)
    for first in _FREQUENT:
        for anchor in by_first.pop(first, [first + _FILLER]):
            automaton.add_word(anchor, entries.get(anchor, _NOTHING))
    for group in by_first.values():
        for anchor in group:
            automaton.add_word(anchor, entries[anchor])
    automaton.make_automaton()
    return automaton


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
        # one Aho-Corasick pass over the lower-cased text finds every anchor of every rule;
        # each anchor carries the rules that may match at it and those that back off from it
        entries: dict[str, _Entry] = {}
        for table, whole in ((words, True), (stems, False), (unicode, False)):
            for anchor, ns in table.items():
                here: list[tuple[int, _Starts | None]] = []
                back: list[tuple[int, _Starts | None]] = []
                for n in ns:
                    starts = rules[n].starts
                    # "" would admit every start: then there is nothing to test
                    by_first = _by_first(starts) if starts and "" not in starts else None
                    if by_first is None or anchor.startswith(starts):
                        here.append((n, None))  # every start at this anchor passes
                    elif any(s.startswith(anchor) for s in starts):
                        here.append((n, by_first))  # passes when the text goes on right
                    # else no start can begin with this anchor: no candidate at it
                    if rules[n].back_off:
                        back.append((n, by_first))
                if anchor in entries:
                    # a stem spelled as another rule's whole word ("token"): one automaton
                    # value holds both, the word's rules asked only where it is a whole word
                    # (before issue 31 the stem's entry replaced the word's)
                    _, _, word_here, word_back, _, _ = entries[anchor]
                    entries[anchor] = (len(anchor), False, tuple(here), tuple(back),
                                       word_here, word_back)  # fmt: skip
                    continue
                entries[anchor] = (len(anchor), whole, tuple(here), tuple(back), (), ())
        self._automaton: Any = _automaton(entries)
        self._anchored = bool(entries)
        self._vendor = tuple(r for r in rules if r.tokens and r.trigger is not None)
        self._generic = tuple(r for r in rules if r.tokens and r.trigger is None)
        self._plain = tuple(r for r in rules if not r.tokens and not r.anchors)
        # what the anchored pass needs of each rule, read once here rather than per candidate
        self._matchers = tuple(
            (r.pattern, r._variants or None, r.accept, r.lowered_for(""),
             r._lowered_variants or None, r.refuses_lowered)
            for r in rules
        )  # fmt: skip
        self._first_tests = tuple(m[3:] for m in self._matchers)

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
                # most long words hold no match: one search, no call to ``_search``
                m = rule.pattern.search(text, start, end)
                if m is None:
                    continue
                if rule.accept is not None and not rule.accept(m):
                    m = rule._search(text, m.start() + 1, end)
                if m is not None:
                    return rule, m
        return None

    def _anchored_find(
        self, text: str, index: TextIndex, allow: Callable[[GuardRule], bool] | None
    ) -> tuple[GuardRule, re.Match[str]] | None:
        if not self._anchored:
            return None
        low = index.lowered
        size = len(low)
        allowed = self._allowed(allow)
        candidates: set[tuple[int, int]] = set()
        add = candidates.add
        # back-off walks read the reversed text with one match each
        reverse = text[::-1]
        for end, (length, whole, here, back, word_here, word_back) in self._automaton.iter(low):
            i = end - length + 1
            if whole or word_here or word_back:
                inside = (i and low[i - 1].isalpha()) or (end + 1 < size and low[end + 1].isalpha())
                if inside:
                    if whole:
                        continue
                elif word_here or word_back:
                    here, back = here + word_here, back + word_back
            if allowed is not None:  # only some rules read this view: the others ask nothing
                here = tuple(entry for entry in here if entry[0] in allowed)
                back = tuple(entry for entry in back if entry[0] in allowed)
            for n, starts in here:
                # a start the rule's own prefixes exclude can never match: drop it here
                if starts is None or low.startswith(starts.get(low[i], ()), i):
                    add((i, n))
            if back:
                earlier = _earlier_starts_reversed(text, reverse, i)
                if earlier:
                    for n, starts in back:
                        for e in earlier:
                            if starts is None or low.startswith(starts.get(low[e], ()), e):
                                add((e, n))
        matchers = self._matchers
        # the lower-cased pattern over the lower-cased text is a cheaper first test (same
        # matches; see ``lowered_source``): most candidates fail it, and then need no more
        # (``find`` only comes here when lower-casing kept the length)
        if not unusual(text) or not holds_case_odd(text):
            candidates = self._first_test(low, candidates)
        for start, n in sorted(candidates):
            pattern, variants, accept = matchers[n][:3]
            if variants is not None:
                found = variants.get(low[start : start + 2], pattern)
                if isinstance(found, str):
                    found = self.rules[n].pattern_for(low[start:])
                pattern = found
            m = pattern.match(text, start)
            if m is not None and (accept is None or accept(m)):
                return self.rules[n], m
        return None

    def _first_test(self, low: str, candidates: set[tuple[int, int]]) -> set[tuple[int, int]]:
        """The candidates that pass the lower-cased pattern over the lower-cased text (and are
        not refused from that match): the cheaper first test (same matches; see
        ``lowered_source``), which ``find`` only asks for when ``reads_lowered`` holds. It
        only drops candidates, so their order does not matter here."""
        kept = set()
        first_tests = self._first_tests
        for candidate in candidates:
            start, n = candidate
            lowered, narrowed, refuses = first_tests[n]
            if lowered is not None:
                if narrowed is not None:
                    found = narrowed.get(low[start : start + 2], lowered)
                    if isinstance(found, str):
                        found = self.rules[n].lowered_for(low[start:]) or lowered
                    lowered = found
                first = lowered.match(low, start)
                if first is None or (refuses is not None and refuses(first)):
                    continue
            kept.add(candidate)
        return kept

    def _allowed(self, allow: Callable[[GuardRule], bool] | None) -> frozenset[int] | None:
        if allow is None:
            return None
        return frozenset(n for n, rule in enumerate(self.rules) if allow(rule))
