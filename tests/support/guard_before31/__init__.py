"""A frozen copy of the guard as it was before issue 31's breadth work (main at 1a3f4bc).

Not product code: ``bench/guard_bench.py`` measures this copy and the product guard in one
process, on the same corpus splits and the same memories, so the before/after rates and the
cost ratio come from one run. Do not edit it to follow later rule changes.
"""

from __future__ import annotations

from tests.support.guard_before31.policy import RegexGuard, default_guard

__all__ = ["RegexGuard", "default_guard"]
