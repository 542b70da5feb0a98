"""Shared helpers of the console tests: seeding a tenant and signing in over HTTP."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import timedelta

from starlette.testclient import TestClient

from harness.clock import FixedClock
from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.domain.types import Memory

CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')
XSS = "<script>alert(1)</script>"


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    found = CSRF_RE.search(html)
    assert found, "page has no CSRF field"
    return found.group(1)


def sign_in(client: TestClient, token: str, prefix: str = "") -> str:
    """Sign in through the login form; returns the session's CSRF token."""
    page = client.get(f"{prefix}/login")
    assert page.status_code == 200
    response = client.post(
        f"{prefix}/login",
        data={"token": token, "csrf": csrf_of(page.text)},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    home = client.get(f"{prefix}/")
    assert home.status_code == 200, home.text
    return csrf_of(home.text)


@dataclass
class Seeded:
    """What :func:`seed` wrote: two pending platform items, an active one, a keyed history."""

    old_policy: Memory
    pending_keyed: Memory
    pending_plain: Memory
    pending_xss: Memory
    v1: Memory
    v2: Memory


def seed(store: MemoryStore, tenant: str, clock: FixedClock) -> Seeded:
    """A tenant with an approval queue, a supersession history and a script-shaped content.

    The clock steps a second before each write so the order of writes is the order in time.
    """
    real_write = store.write

    def write(cand: MemoryCandidate) -> Memory:
        clock.at += timedelta(seconds=1)
        return real_write(cand)

    old = write(
        MemoryCandidate(
            tenant=tenant,
            scope="platform",
            kind="constraint",
            key="answer.language",
            content="Answer in English.",
            source={"origin": "admin"},
        )
    )
    keyed = write(
        MemoryCandidate(
            tenant=tenant,
            scope="platform",
            kind="constraint",
            key="answer.language",
            content="Answer in the user's language.",
            source={"origin": "verdict", "run_id": "run-7", "verdict_id": "verdict-3"},
        )
    )
    plain = write(
        MemoryCandidate(
            tenant=tenant,
            scope="platform",
            kind="lesson",
            content="Cite the invoice number in refund replies.",
            source={"origin": "completion", "run_id": "run-8"},
        )
    )
    xss = write(
        MemoryCandidate(
            tenant=tenant,
            scope="platform",
            kind="fact",
            content=f"Shown as text: {XSS}",
            source={"origin": "completion", "run_id": "run-9"},
        )
    )
    v1 = write(
        MemoryCandidate(
            tenant=tenant,
            scope="user",
            scope_id="alice",
            kind="preference",
            key="answer.length",
            content="Alice likes detailed answers.",
        )
    )
    v2 = write(
        MemoryCandidate(
            tenant=tenant,
            scope="user",
            scope_id="alice",
            kind="preference",
            key="answer.length",
            content="Alice now wants three-line answers.",
        )
    )
    return Seeded(old, keyed, plain, xss, v1, v2)


def other_tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"
