"""The console's sign-in throttle: too many failures from one address lock it out, the lockout
doubles, a success clears the address, and the log never carries a token (issue 31, point 5)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.console.signin import SignInPolicy, SignInThrottle

POLICY = SignInPolicy(max_failures=3, window_s=10.0, lockout_s=5.0, max_lockout_s=20.0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["fail", "fail", "fail", "succeed", "wait"]),
        st.sampled_from(["10.0.0.1", "10.0.0.2"]),
        st.sampled_from([0.0, 0.5, 3.0, 6.0, 11.0]),
    ),
    max_size=60,
)


@settings(max_examples=300)
@given(STEPS)
def test_the_throttle_locks_out_exactly_as_the_policy_says(
    steps: list[tuple[str, str, float]],
) -> None:
    """A model of the rule: an address is locked for lockout_s * 2**n after its (n+1)-th run
    of max_failures failures within window_s (capped); a success or the end of the lockout
    lets it in; another address is never affected."""
    clock = Clock()
    throttle = SignInThrottle(POLICY, clock)
    failures: dict[str, list[float]] = {}
    locked_until: dict[str, float] = {}
    lockouts: dict[str, int] = {}
    for what, address, wait in steps:
        clock.now += wait
        locked = locked_until.get(address, 0.0) > clock.now
        retry = throttle.retry_after(address)
        assert (retry is not None) == locked
        if locked:
            assert retry is not None and 1 <= retry <= POLICY.max_lockout_s
            continue  # the console answers 429 and looks at no token
        if what == "succeed":
            throttle.succeeded(address)
            failures.pop(address, None)
            lockouts.pop(address, None)
        elif what == "fail":
            throttle.failed(address)
            recent = [t for t in failures.get(address, []) if clock.now - t < POLICY.window_s]
            failures[address] = [*recent, clock.now]
            if len(failures[address]) >= POLICY.max_failures:
                n = lockouts.get(address, 0)
                span = min(POLICY.max_lockout_s, POLICY.lockout_s * 2**n)
                locked_until[address] = clock.now + span
                lockouts[address] = n + 1
                failures[address] = []


def test_failures_are_logged_without_the_token_and_refusals_once_per_lockout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="harness.console.signin")
    clock = Clock()
    throttle = SignInThrottle(POLICY, clock)
    for _ in range(3):
        throttle.failed("192.0.2.7")
    for _ in range(100):
        assert throttle.retry_after("192.0.2.7") == 5
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3 + 1 + 1  # each failure, the lockout, one line for its refusals
    assert all("192.0.2.7" in m for m in messages)
    assert "3 of 3" in messages[2] and "locked" in messages[3] and "refused" in messages[4]
    assert throttle.retry_after("192.0.2.8") is None  # other addresses sign in as before
    clock.now = 5.0
    assert throttle.retry_after("192.0.2.7") is None


def test_remembered_addresses_are_bounded() -> None:
    throttle = SignInThrottle(SignInPolicy(max_failures=2, max_addresses=100), Clock())
    for n in range(1000):
        throttle.failed(f"10.1.{n // 256}.{n % 256}")
        throttle.failed(f"10.1.{n // 256}.{n % 256}")
    assert throttle.retry_after("10.1.3.231") is not None  # the last one is remembered
    assert throttle.retry_after("10.1.0.0") is None  # the oldest were forgotten
