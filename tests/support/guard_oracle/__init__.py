"""A frozen copy of the guard as it was before the speed work (main at 4bd27e8), as a test oracle.

Not product code: ``tests/unit/test_guard_equivalence.py`` checks that the product guard gives
the same verdict, rule, field and position as this copy on generated text, and
``bench/guard_bench.py --baseline`` times both in one process. Do not edit it to follow later rule changes; when the
rules change on purpose, delete the copy and the equivalence test together.
"""

from __future__ import annotations

from tests.support.guard_oracle.base import Finding, GuardRule, mask
from tests.support.guard_oracle.policy import (
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
