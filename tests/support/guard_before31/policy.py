"""The write guard: a pure, pluggable policy that refuses secrets and prompt injections.

Every text field of a candidate (content, key, context, scope id and source values) is read in
several views (see :mod:`tests.support.guard_before31.normalise`): NFKC with invisible characters removed
and look-alike letters folded, line breaks joined, and base64 / hex / URL-decoded tokens. Secret
rules (vendor token shapes, labelled values in eight languages, high-entropy tokens) and
injection rules (overrides, role takeovers, fake headers, exfiltration, hidden instructions, each
with a context check) run over those views. A rejection names the rule, the field and the
character position, and shows the secret masked, never in clear. See docs/concepts.md, "Guard", for what it
still cannot catch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from harness.errors import MemoryRejected
from harness.memory.domain.types import MemoryCandidate
from tests.support.guard_before31.base import Finding, GuardRule, mask
from tests.support.guard_before31.injection import INJECTION_RULES
from tests.support.guard_before31.normalise import clean, views
from tests.support.guard_before31.ruleset import RuleSet
from tests.support.guard_before31.secrets import SECRET_RULES

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
    source = candidate.source
    for name in type(source).model_fields:
        value = getattr(source, name)
        # "api", "run-1": nothing to hide in a short value (and enums are not free text)
        if type(value) is str and len(value) >= 8:
            yield f"source.{name}", value


@dataclass(frozen=True)
class RegexGuard:
    """The default guard: every rule over every view of every text field of a candidate."""

    rules: tuple[GuardRule, ...] = DEFAULT_RULES
    _compiled: RuleSet = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", RuleSet(self.rules))

    def check(self, candidate: MemoryCandidate) -> None:
        """Raise ``MemoryRejected`` for the first finding. Pure; no side effects; idempotent."""
        for name, text in candidate_fields(candidate):
            finding = self.scan(text, field=name)
            if finding is not None:
                raise MemoryRejected(
                    finding.reason,
                    rule=finding.rule,
                    field=finding.field,
                    position=finding.position,
                    excerpt=finding.shown(),
                )

    def scan(self, text: str, *, field: str = "content") -> Finding | None:
        """The first finding in one text, or None. Pure."""
        if len(text) < 6:
            return None  # too short to hold a credential or an instruction
        unfolded = clean(text)
        folded = ""
        for view in views(text, unfolded):
            allow = _token_shapes_only if view.how == "joined lines" else None
            hit = self._compiled.find(view.text, allow)
            if hit is not None:
                rule, m = hit
                return _finding(rule, m.group(), view.origin(m.start()), view.how, field)
            if view.how == "text":
                folded = view.text
        # injections and labels in non-Latin scripts ("пароль:") must be read before look-alike
        # folding turns their letters Latin; when folding changed nothing, every rule has
        # already read this very text and found nothing
        if not unfolded.isascii() and unfolded != folded:
            hit = self._compiled.find(unfolded, _read_before_folding)
            if hit is not None:
                rule, m = hit
                return _finding(rule, m.group(), m.start(), "text", field)
        return None

    def extended(self, rules: Iterable[GuardRule]) -> RegexGuard:
        """A new guard with extra rules appended."""
        return RegexGuard(self.rules + tuple(rules))


def _token_shapes_only(rule: GuardRule) -> bool:
    # joining lines glues sentences together: only secret shapes are read there
    return rule.secret and rule.rule != "high_entropy_token"


def _read_before_folding(rule: GuardRule) -> bool:
    # token shapes are Latin by construction: the folded pass has read them already; every
    # other rule (injections, labels such as "пароль:") must read the letters as written
    return not rule.tokens


def _finding(rule: GuardRule, matched: str, position: int, how: str, field: str) -> Finding:
    excerpt = mask(matched) if rule.secret else repr(matched[:60])
    return Finding(rule.rule, rule.reason, field, position, excerpt, how)


def default_guard() -> RegexGuard:
    """The default guard (secrets and injections, all views)."""
    return RegexGuard()
