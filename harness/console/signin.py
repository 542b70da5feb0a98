"""Sign-in throttling of the console: failed sign-ins are logged and counted per client address;
too many lock that address out for a while.

A token has 256 random bits, so guessing one is hopeless; the lockout keeps a client that tries
from costing a token-file lookup per attempt and makes it visible in the log. Each failure is
logged with the client's address and the count (never the token, nor any part or hash of it);
a lockout is logged when it starts, and the attempts it refuses once per lockout. While an
address is locked out, even a right token is refused (429 with ``Retry-After``): lockout must
not become an oracle. A successful sign-in clears its address's failures.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["SignInPolicy", "SignInThrottle"]

log = logging.getLogger("harness.console.signin")


@dataclass(frozen=True)
class SignInPolicy:
    """``max_failures`` failed sign-ins from one address within ``window_s`` lock it out for
    ``lockout_s``; a lockout that ends and fails again doubles, up to ``max_lockout_s``. At most
    ``max_addresses`` addresses are remembered (the least recently failing forgotten first)."""

    max_failures: int = 10
    window_s: float = 300.0
    lockout_s: float = 60.0
    max_lockout_s: float = 3600.0
    max_addresses: int = 10_000


@dataclass
class _Address:
    failures: list[float] = field(default_factory=list)
    locked_until: float = 0.0
    lockouts: int = 0
    refusals_logged: bool = False


class SignInThrottle:
    """Per-address failure counts and lockouts, in this process's memory. Thread-safe."""

    def __init__(
        self, policy: SignInPolicy | None = None, clock: Callable[[], float] = time.monotonic
    ):
        self.policy = policy or SignInPolicy()
        self._clock = clock
        self._addresses: OrderedDict[str, _Address] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until ``address`` may try again, or None when it may now. A refusal
        is logged once per lockout."""
        now = self._clock()
        with self._lock:
            entry = self._addresses.get(address)
            if entry is None or entry.locked_until <= now:
                return None
            if not entry.refusals_logged:
                entry.refusals_logged = True
                log.warning(
                    "console sign-in from %s refused: locked out for %.0f s more "
                    "(further refusals of this lockout are not logged)",
                    address,
                    entry.locked_until - now,
                )
            return max(1, math.ceil(entry.locked_until - now))

    def failed(self, address: str) -> None:
        """Count and log a failed sign-in of ``address``; lock it out past the limit."""
        p = self.policy
        now = self._clock()
        with self._lock:
            entry = self._addresses.pop(address, None) or _Address()
            self._addresses[address] = entry  # most recent last
            while len(self._addresses) > p.max_addresses:
                self._addresses.popitem(last=False)
            entry.failures = [t for t in entry.failures if now - t < p.window_s] + [now]
            count = len(entry.failures)
            log.warning(
                "console sign-in failed from %s: unknown token (%d of %d within %.0f s)",
                address,
                count,
                p.max_failures,
                p.window_s,
            )
            if count >= p.max_failures:
                lockout = min(p.max_lockout_s, p.lockout_s * 2**entry.lockouts)
                entry.lockouts += 1
                entry.locked_until = now + lockout
                entry.failures = []
                entry.refusals_logged = False
                log.warning(
                    "console sign-in locked for %s: %d failures within %.0f s; "
                    "every sign-in from it is refused for %.0f s",
                    address,
                    count,
                    p.window_s,
                    lockout,
                )

    def succeeded(self, address: str) -> None:
        """Forget ``address``'s failures and lockout history (a right token signed in)."""
        with self._lock:
            self._addresses.pop(address, None)
