"""Over-budget platform constraints: warned once per caller and interval, counted in status.

Here the tests that need no database, model or other process; the others are in
tests/db/test_constraint_warning_db.py."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from harness.memory.store.throttle import OncePerInterval


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@given(
    hits=st.lists(
        st.tuples(st.sampled_from("abc"), st.floats(min_value=0, max_value=50)), max_size=80
    )
)
def test_reports_at_most_once_per_interval_and_lose_no_count(
    hits: list[tuple[str, float]],
) -> None:
    clock = Clock()
    throttle = OncePerInterval(10.0, clock=clock)
    reported: dict[str, list[tuple[float, int]]] = {}
    seen: dict[str, int] = {}
    for key, step in hits:
        clock.now += step
        seen[key] = seen.get(key, 0) + 1
        n = throttle.hit(key)
        if n is not None:
            reported.setdefault(key, []).append((clock.now, n))
    for key, times in reported.items():
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(times)]
        assert all(g >= 10.0 for g in gaps)
        assert sum(n for _, n in times) <= seen[key]
    for key in seen:  # the first occurrence of a key is always reported
        assert key in reported and reported[key][0][1] == 1


def test_held_back_occurrences_are_reported_with_the_next_warning() -> None:
    clock = Clock()
    throttle = OncePerInterval(60.0, clock=clock)
    assert throttle.hit("k") == 1
    assert [throttle.hit("k") for _ in range(4)] == [None] * 4
    clock.now = 61
    assert throttle.hit("k") == 5
    throttle.mute("m")
    assert throttle.hit("m") is None
