"""Smaller patterns for known starts: only the alternatives that can begin with given letters.

A rule's pattern runs at many anchor positions; at each, the regex engine tries every top-level
alternative in turn. When the text there starts with, say, ``ig``, an alternative whose literal
head is ``olvid`` cannot match, and leaving it out changes no match: the remaining alternatives
keep their order, so the first match found is the same. :func:`by_first_letters` builds such a
pattern for every two-letter start the heads allow (see ``GuardRule.variants``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

__all__ = [
    "CASE_ODD",
    "by_first_letters",
    "first_letter_guard",
    "guard_lazy_alternations",
    "heads",
    "holds_case_odd",
    "lowered_source",
    "reads_lowered",
    "split_alternatives",
]

_META = "\\[](){}?*+|.^$"
_ZERO_WIDTH = ("\\b", "^")
_CLASS_ESCAPES = ("\\d", "\\s", "\\w")


def _outside_classes(pattern: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """Each character of a regex source from ``start`` that is neither escaped nor inside a
    character class, with its index: where the source's groups and alternatives are read."""
    in_class = False
    i = start
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1  # a "]" first in a class is a member, not its end
        else:
            yield i, ch
        i += 1


def split_alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a regex source (``a|(?:b|c)d`` -> ``a``, ``(?:b|c)d``)."""
    parts: list[str] = []
    depth = 0
    last = 0
    for i, ch in _outside_classes(pattern):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(pattern[last:i])
            last = i + 1
    parts.append(pattern[last:])
    return parts


def _group_end(pattern: str, start: int) -> int:
    """Index just past the group opening at ``start``."""
    depth = 0
    for i, ch in _outside_classes(pattern, start):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced group in {pattern!r}")


def heads(alternative: str) -> set[str]:
    """Lower-case literal texts one of which begins every match of ``alternative``.

    ``""`` (compatible with any start) whenever the beginning is not a plain literal or a
    non-capturing group of them; that only costs speed, never a match.
    """
    while alternative.startswith(_ZERO_WIDTH):
        alternative = alternative[2:] if alternative.startswith("\\b") else alternative[1:]
    if alternative.startswith("(?:"):
        end = _group_end(alternative, 0)
        if alternative[end : end + 1] in ("?", "*", "{"):
            return {""}  # an optional group: the match may begin after it
        found: set[str] = set()
        for sub in split_alternatives(alternative[3 : end - 1]):
            found |= heads(sub)
        return found
    literal = re.match(r"[^" + re.escape(_META) + r"]*", alternative)
    head = literal.group() if literal else ""
    if alternative[len(head) : len(head) + 1] in ("?", "*", "{"):
        head = head[:-1]  # the quantifier makes the last character optional
    return {head.lower()}


def by_first_letters(
    alternatives: Sequence[str], build: Callable[[list[str]], str]
) -> tuple[tuple[str, str], ...]:
    """``(first two letters, pattern of the alternatives that can begin so)`` for each start.

    ``build`` writes a subset of ``alternatives`` (in their order) into the full pattern's source.
    A start whose letters no head begins with gets no entry: the whole pattern runs there.
    """
    found = {alt: heads(alt) for alt in alternatives}
    keys = {h[:2] for hs in found.values() for h in hs if len(h) >= 2}

    def fits(alt: str, key: str) -> bool:
        return any(h.startswith(key) or key.startswith(h) for h in found[alt])

    return tuple(
        (key, build([alt for alt in alternatives if fits(alt, key)])) for key in sorted(keys)
    )


def first_letter_guard(alternation: str) -> str:
    """A lookahead admitting only the characters a match of ``alternation`` can begin with.

    Placed right before the alternation (in a pattern compiled with IGNORECASE) it changes no
    match: it only refuses, with one character test, the positions where every alternative
    would fail. That matters after a lazy or backtracking repeat, where the engine tries the
    alternation at each position, and where, ignoring case, it enters every alternative in
    turn. ``""`` (no guard) when some alternative's first character is not a plain literal.
    """
    body = alternation
    if body.startswith("(?:") and _group_end(body, 0) == len(body):
        body = body[3:-1]
    firsts: set[str] = set()
    classes: set[str] = set()
    for alternative in split_alternatives(body):
        if alternative[:2] in _CLASS_ESCAPES and alternative[2:3] not in ("?", "*", "{"):
            classes.add(alternative[:2])  # "\d" begins with a digit: the class says so
            continue
        for head in heads(alternative):
            if not head:
                return ""
            firsts.add(head[0])
    return "(?=[" + "".join(re.escape(c) for c in sorted(firsts)) + "".join(sorted(classes)) + "])"


def guard_lazy_alternations(pattern: str) -> str:
    """``pattern`` with a :func:`first_letter_guard` before every group a lazy repeat precedes.

    ``[^.!?\\n]{0,30}?(?:a|b)`` tries the group after each character it takes; the guard turns
    most of those tries into one character test. A group that is itself optional is left as it
    is (the match may go on without it). Matches are unchanged (IGNORECASE patterns only).
    """
    out: list[str] = []
    last = 0
    for m in re.finditer(r"\}\?(?=\(\?:)", pattern):
        at = m.end()
        end = _group_end(pattern, at)
        if pattern[end : end + 1] in ("?", "*", "{"):
            continue
        guard = first_letter_guard(pattern[at:end])
        if guard:
            out.append(pattern[last:at] + guard)
            last = at
    out.append(pattern[last:])
    return "".join(out)


# Letters whose lower case is not the lower case of their upper case ("ſ" -> "S" -> "s"),
# and the capital sigma (lower-cased "ς" or "σ" by its place in a word). Ignoring case, the
# regex engine matches them as their upper case's letter; lower-cased, they stay apart.
CASE_ODD = (
    "\u00b5\u0131\u017f\u0345\u03a3\u03c2\u03d0\u03d1\u03d5\u03d6\u03f0\u03f1\u03f5"
    + "".join(map(chr, range(0x1C80, 0x1C89)))
    + "\u1e9b\u1fbe"
)
_HAS_CASE_ODD = re.compile(f"[{CASE_ODD}]")


def holds_case_odd(text: str) -> bool:
    """Whether ``text`` holds a letter of ``CASE_ODD``. Pure."""
    return not text.isascii() and _HAS_CASE_ODD.search(text) is not None


def reads_lowered(text: str) -> bool:
    """Whether a :func:`lowered_source` pattern over ``text.lower()`` matches as the
    case-ignoring pattern over ``text``: the lower-cased text keeps its length and holds no
    letter of ``CASE_ODD``. Pure."""
    return text.isascii() or (len(text.lower()) == len(text) and not holds_case_odd(text))


def lowered_source(pattern: str) -> str:
    """The source of ``pattern`` with its letters in lower case (escapes and ``(?P`` kept).

    Compiled without IGNORECASE and run on the lower-cased text, it matches exactly where
    ``pattern`` with IGNORECASE matches the text itself, with the same spans, whenever
    :func:`reads_lowered` holds for the text: ignoring case, the engine compares letters by
    their lower case, and, but for ``CASE_ODD``, so does ``str.lower``. A pattern holding one
    of those (or "İ", lower-cased to two characters) is refused.
    """
    if any(c in pattern for c in CASE_ODD + "\u0130\u212a") or "\\N" in pattern:
        raise ValueError("pattern holds a letter that lower-casing does not match as case-ignoring")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if pattern.startswith("(?", i):  # "(?P<name>", "(?:": the letter is syntax
            out.append(pattern[i : i + 3])
            i += 3
            continue
        out.append(ch.lower())
        i += 1
    return "".join(out)
