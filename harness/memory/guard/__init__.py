"""The write guard: refuses secrets and prompt injections before a candidate is stored.

``from harness.memory.guard import Guard, RegexGuard, default_guard, DEFAULT_RULES, GuardRule``
is the public surface; the package splits the work into normalisation (views of a text), secret
rules, injection rules and the policy that runs them over every field of a candidate.
"""

from __future__ import annotations

from harness.memory.guard.base import Finding, GuardRule, mask
from harness.memory.guard.policy import (
    DEFAULT_RULES,
    Guard,
    RegexGuard,
    candidate_fields,
    default_guard,
)

__all__ = [
    "DEFAULT_RULES",
    "Finding",
    "Guard",
    "GuardRule",
    "RegexGuard",
    "candidate_fields",
    "default_guard",
    "mask",
]
