"""product_adapter: best-effort lifecycle cleanup with real faults, reconcile, approvals.

Here the tests that need no database, model or other process; the others are in
tests/db/test_adapter_db.py, tests/system/test_adapter_system.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import InvalidInput
from product_adapter import Backoff


@given(
    first_s=st.integers(min_value=1, max_value=3600),
    extra_s=st.integers(min_value=0, max_value=86_400),
    failures=st.integers(min_value=1, max_value=200),
)
def test_backoff_doubles_from_first_and_never_passes_the_cap(
    first_s: int, extra_s: int, failures: int
) -> None:
    backoff = Backoff(first=timedelta(seconds=first_s), cap=timedelta(seconds=first_s + extra_s))
    wait = backoff.after(failures)
    assert backoff.first <= wait <= backoff.cap
    assert backoff.after(1) == backoff.first
    assert backoff.after(failures + 1) == min(2 * wait, backoff.cap)


def test_backoff_refuses_a_zero_or_inverted_window() -> None:
    with pytest.raises(InvalidInput, match="backoff"):
        Backoff(first=timedelta(0))
    with pytest.raises(InvalidInput, match="backoff"):
        Backoff(first=timedelta(minutes=5), cap=timedelta(minutes=1))
