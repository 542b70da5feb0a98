"""The pool-size memo: recall's strategy probe is one round trip per caller and interval.

Here the tests that need no database, model or other process; the others are in
tests/db/test_pool_sizes_db.py."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.memory.store.pool_sizes import PoolSizes


class Ticker:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_answer_lives_for_the_ttl_then_is_asked_again() -> None:
    clock = Ticker()
    sizes = PoolSizes(ttl_s=10.0, clock=clock)
    assert sizes.get("a") is None
    sizes.put("a", True)
    clock.now = 9.9
    assert sizes.get("a") is True
    clock.now = 10.0
    assert sizes.get("a") is None


def test_ttl_zero_remembers_nothing() -> None:
    sizes = PoolSizes(ttl_s=0.0)
    sizes.put("a", False)
    assert sizes.get("a") is None


@given(st.lists(st.tuples(st.integers(0, 20), st.booleans()), max_size=60))
def test_bounded_and_the_latest_answer_wins(puts: list[tuple[int, bool]]) -> None:
    sizes = PoolSizes(ttl_s=100.0, size=5, clock=Ticker())
    latest: dict[int, bool] = {}
    for caller, large in puts:
        sizes.put(caller, large)
        latest[caller] = large
    recent = list(dict.fromkeys(reversed([c for c, _ in puts])))[:5]
    for caller in latest:
        assert sizes.get(caller) == (latest[caller] if caller in recent else None)
