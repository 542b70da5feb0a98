"""Over-budget platform constraints: warned once per caller and interval, counted in status."""

from __future__ import annotations

import itertools
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.domain.types import RecallRequest
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


def test_store_warns_once_per_caller_and_status_counts(
    store: MemoryStore, tenant: str, caplog: pytest.LogCaptureFixture
) -> None:
    store.write_many(
        [
            MemoryCandidate(
                tenant=tenant,
                scope="platform",
                kind="constraint",
                content=f"Rule {i}: " + "always double-check the figures " * 9,
            )
            for i in range(8)
        ]
    )
    caplog.set_level(logging.WARNING)
    for _ in range(5):
        for user in ("alice", "bob"):
            result = store.recall(RecallRequest(tenant=tenant, user_id=user, query="figures"))
            assert not result.complete
    warnings = [r.getMessage() for r in caplog.records if "recall incomplete" in r.getMessage()]
    assert len(warnings) == 2
    assert any(f"{tenant}/alice" in w for w in warnings)
    assert any(f"{tenant}/bob" in w for w in warnings)
    placed = len(result.items)
    assert 0 < placed < 8
    caplog.clear()
    status = store.status()
    assert status.constraints_over_budget == {tenant: 8 - placed}
    assert not [r for r in caplog.records if "recall incomplete" in r.getMessage()]
