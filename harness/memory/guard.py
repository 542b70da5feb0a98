"""The write guard: a pure, pluggable policy that refuses secrets and prompt injections.

The default policy is regular expressions over the candidate's content and context. It can
not catch: secrets in unknown or custom formats, secrets split across fields or encoded
(base64, hex, rot13), injections phrased in other languages or as subtle persuasion, or
harmful content that is neither. It is a tripwire, not a sanitiser; see README "Guard".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from harness.errors import MemoryRejected
from harness.memory.types import MemoryCandidate

__all__ = ["DEFAULT_RULES", "Guard", "GuardRule", "RegexGuard", "default_guard"]


class Guard(Protocol):
    """Anything that can refuse a candidate by raising :class:`MemoryRejected`."""

    def check(self, candidate: MemoryCandidate) -> None:
        """Raise ``MemoryRejected`` when the candidate must not be stored; return otherwise."""


@dataclass(frozen=True)
class GuardRule:
    """One named pattern; ``rule`` is the stable identifier reported on rejection."""

    rule: str
    reason: str
    pattern: re.Pattern[str]


def _r(rule: str, reason: str, pattern: str, flags: int = 0) -> GuardRule:
    return GuardRule(rule, reason, re.compile(pattern, flags))


_I = re.IGNORECASE

DEFAULT_RULES: tuple[GuardRule, ...] = (
    _r(
        "private_key",
        "contains a private key block",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    ),
    _r(
        "aws_access_key",
        "contains an AWS access key id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    ),
    _r(
        "aws_secret",
        "contains an AWS secret access key",
        r"aws_?secret_?access_?key\s*[:=]\s*['\"]?[A-Za-z0-9/+=]{40}",
        _I,
    ),
    _r(
        "github_token",
        "contains a GitHub token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b",
    ),
    _r("gitlab_token", "contains a GitLab token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b"),
    _r(
        "openai_key",
        "contains an OpenAI-style API key",
        r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}\b",
    ),
    _r("slack_token", "contains a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    _r("stripe_key", "contains a Stripe key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    _r("google_api_key", "contains a Google API key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    _r(
        "jwt",
        "contains a JSON Web Token",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    _r(
        "bearer_token",
        "contains a bearer credential",
        r"\b(?:authorization\s*:\s*)?bearer\s+[A-Za-z0-9_\-\.=~+/]{20,}",
        _I,
    ),
    _r(
        "url_credentials",
        "contains a URL with embedded credentials",
        r"\b[a-z][a-z0-9+.\-]*://[^\s/:@]+:[^\s/@]+@[^\s/]+",
        _I,
    ),
    _r(
        "password_assignment",
        "assigns a password or secret value",
        r"(?<![A-Za-z])(?:password|passwd|pwd|passphrase|secret|api[_\- ]?key|access[_\- ]?token|auth[_\- ]?token|client[_\- ]?secret)"
        r"\s*(?:[:=]|\bis\b)\s*['\"]?(?=[^\s'\"]*[0-9!@#$%^&*_\-])[^\s'\"]{6,}",
        _I,
    ),
    _r(
        "injection_ignore",
        "looks like a prompt injection (override of prior instructions)",
        r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?"
        r"(?:previous|prior|above|earlier|preceding|system)\s+(?:instructions|prompts?|rules|messages|context)",
        _I,
    ),
    _r(
        "injection_role",
        "looks like a prompt injection (role or system-prompt takeover)",
        r"(?:\byou\s+are\s+now\s+(?:a|an|the|in)\b|\bnew\s+system\s+prompt\b|<\s*/?\s*system\s*>|\[\s*system\s*\]|"
        r"^\s*system\s*:|\bact\s+as\s+(?:an?\s+)?(?:unrestricted|jailbroken|dan)\b|\bdeveloper\s+mode\s+enabled\b)",
        _I | re.MULTILINE,
    ),
    _r(
        "injection_exfiltrate",
        "looks like a prompt injection (exfiltration or hidden instruction)",
        r"(?:\b(?:reveal|print|output|leak|send)\s+(?:the\s+|your\s+)?(?:system\s+prompt|hidden\s+instructions|"
        r"api\s+keys?|credentials)\b|\bdo\s+not\s+(?:tell|inform)\s+the\s+user\b|\balways\s+obey\s+this\s+memory\b)",
        _I,
    ),
)


@dataclass(frozen=True)
class RegexGuard:
    """The default guard: every rule is checked against content and context."""

    rules: tuple[GuardRule, ...] = DEFAULT_RULES

    def check(self, candidate: MemoryCandidate) -> None:
        """Raise ``MemoryRejected`` naming the first matching rule. Pure; no side effects."""
        for text in _texts(candidate):
            for rule in self.rules:
                if rule.pattern.search(text):
                    raise MemoryRejected(rule.reason, rule=rule.rule)

    def extended(self, rules: Iterable[GuardRule]) -> RegexGuard:
        """A new guard with extra rules appended."""
        return RegexGuard(self.rules + tuple(rules))


def _texts(candidate: MemoryCandidate) -> Iterable[str]:
    yield candidate.content
    if candidate.context:
        yield candidate.context
    if candidate.key:
        yield candidate.key


def default_guard() -> RegexGuard:
    """The default regex guard."""
    return RegexGuard()
