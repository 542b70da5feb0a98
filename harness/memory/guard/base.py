"""Shared values of the guard: a rule, a finding, and how a finding is shown without the secret."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Finding", "GuardRule", "entropy", "mask"]


@dataclass(frozen=True)
class GuardRule:
    """One named pattern; ``rule`` is the stable identifier reported on rejection.

    ``accept`` (optional) decides whether a match counts, e.g. that the captured value looks
    random or that an instruction is aimed at the reader; ``secret`` says whether the matched
    text is a credential that must be masked when reported.
    """

    rule: str
    reason: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] | None = None
    secret: bool = True

    def find(self, text: str) -> re.Match[str] | None:
        """The first accepted match in ``text``, or None. Pure."""
        if self.accept is None:
            return self.pattern.search(text)
        pos = 0
        while (m := self.pattern.search(text, pos)) is not None:
            if self.accept(m):
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

    def describe(self) -> str:
        """One line a person can act on; never contains the secret itself."""
        seen = "" if self.view == "text" else f" (after {self.view} decoding)"
        return f"{self.reason}{seen}: field {self.field!r} at character {self.position}: {self.excerpt}"


def mask(value: str) -> str:
    """Show the shape of a secret, not the secret: a short known prefix, then its length."""
    value = value.strip()
    keep = 0
    prefix = re.match(r"[A-Za-z]{1,10}[_\-.](?:[a-z0-9]{1,8}[_\-.])?", value)
    if prefix and len(value) - prefix.end() >= 12:
        keep = prefix.end()
    return f"{value[:keep]}{'*' * 6}({len(value)} chars)"


def entropy(text: str) -> float:
    """Shannon entropy in bits per character. Pure."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0
