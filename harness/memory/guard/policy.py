"""The write guard: a pure, pluggable policy that refuses secrets and prompt injections.

Every text field of a candidate (content, key, context, scope id and source values) is read in
several views (see :mod:`harness.memory.guard.normalise`): NFKC with invisible characters removed
and look-alike letters folded, line breaks joined, and base64 / hex / URL-decoded tokens. Secret
rules (vendor token shapes, labelled values in eight languages, high-entropy tokens) and
injection rules (overrides, role takeovers, fake headers, exfiltration, hidden instructions, each
with a context check) run over those views. A rejection names the rule, the field and the
character position, and shows the secret masked, never in clear. See README "Guard" for what it
still cannot catch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from harness.errors import MemoryRejected
from harness.memory.guard.base import Finding, GuardRule, mask
from harness.memory.guard.injection import INJECTION_RULES
from harness.memory.guard.normalise import clean, views
from harness.memory.guard.secrets import SECRET_RULES
from harness.memory.types import MemoryCandidate

__all__ = ["DEFAULT_RULES", "Guard", "RegexGuard", "candidate_fields", "default_guard"]

DEFAULT_RULES: tuple[GuardRule, ...] = (*SECRET_RULES, *INJECTION_RULES)


class Guard(Protocol):
    """Anything that can refuse a candidate by raising :class:`MemoryRejected`."""

    def check(self, candidate: MemoryCandidate) -> None:
        """Raise ``MemoryRejected`` when the candidate must not be stored; return otherwise."""


def candidate_fields(candidate: MemoryCandidate) -> Iterator[tuple[str, str]]:
    """Every text field a candidate carries, as (dotted field name, value). Pure."""
    yield "content", candidate.content
    for name in ("key", "context", "scope_id"):
        value = getattr(candidate, name)
        if value:
            yield name, value
    for name, value in candidate.source.model_dump(mode="json").items():
        if isinstance(value, str) and value:
            yield f"source.{name}", value


@dataclass(frozen=True)
class RegexGuard:
    """The default guard: every rule over every view of every text field of a candidate."""

    rules: tuple[GuardRule, ...] = DEFAULT_RULES

    def check(self, candidate: MemoryCandidate) -> None:
        """Raise ``MemoryRejected`` for the first finding. Pure; no side effects; idempotent."""
        for name, text in candidate_fields(candidate):
            finding = self.scan(text, field=name)
            if finding is not None:
                raise MemoryRejected(
                    finding.describe(),
                    rule=finding.rule,
                    field=finding.field,
                    position=finding.position,
                )

    def scan(self, text: str, *, field: str = "content") -> Finding | None:
        """The first finding in one text, or None. Pure."""
        for view in views(text):
            joined = view.how == "joined lines"
            for rule in self.rules:
                # joining lines glues sentences together: only token shapes are read there
                if joined and (not rule.secret or rule.rule == "high_entropy_token"):
                    continue
                m = rule.find(view.text)
                if m is not None:
                    return _finding(rule, m.group(), m.start(), view.origin, view.how, field)
        # injections in non-Latin scripts must be read before look-alike folding
        unfolded = clean(text)
        if not unfolded.isascii():
            for rule in self.rules:
                if not rule.secret:
                    m = rule.find(unfolded)
                    if m is not None:
                        return _finding(rule, m.group(), m.start(), None, "text", field)
        return None

    def extended(self, rules: Iterable[GuardRule]) -> RegexGuard:
        """A new guard with extra rules appended."""
        return RegexGuard(self.rules + tuple(rules))


def _finding(
    rule: GuardRule, matched: str, start: int, origin: object, how: str, field: str
) -> Finding:
    position = origin(start) if callable(origin) else start
    excerpt = mask(matched) if rule.secret else repr(matched[:60])
    return Finding(rule.rule, rule.reason, field, int(position), excerpt, how)


def default_guard() -> RegexGuard:
    """The default guard (secrets and injections, all views)."""
    return RegexGuard()
