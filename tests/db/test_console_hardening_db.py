"""The console under attack and misconfiguration (issue 31, points 4 and 5): sign-in throttling
with logged failures, the security headers on routing's own 404/405 pages, and a token file
that cannot be used answering 503 naming it (once in the log) instead of a 500 per request."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from harness.console import AdminTokenFile, build_console_app
from harness.console.signin import SignInPolicy, SignInThrottle
from harness.memory import MemoryStore
from tests.support.console_helpers import csrf_of, sign_in

HEADERS = ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Cache-Control")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def signin_clock() -> Clock:
    return Clock()


@pytest.fixture
def client(store: MemoryStore, tokens: AdminTokenFile, signin_clock: Clock) -> Iterator[TestClient]:
    throttle = SignInThrottle(SignInPolicy(max_failures=10, lockout_s=60.0), signin_clock)
    with TestClient(build_console_app(store, tokens, signin=throttle)) as c:
        yield c


def attempt(client: TestClient, token: str) -> int:
    page = client.get("/login")
    answer = client.post(
        "/login", data={"token": token, "csrf": csrf_of(page.text)}, follow_redirects=False
    )
    return answer.status_code


def test_300_wrong_tokens_lock_the_address_out_and_every_failure_is_logged(
    client: TestClient,
    tokens: AdminTokenFile,
    tenant: str,
    signin_clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="harness.console.signin")
    right = tokens.add("alice", [tenant])
    wrong = [f"hmc_wrong-guess-{n:04d}" for n in range(300)]
    answers = [attempt(client, token) for token in wrong]
    assert answers[:10] == [401] * 10 and Counter(answers[10:]) == {429: 290}
    locked = client.post("/login", data={"token": right, "csrf": "x"}, follow_redirects=False)
    assert locked.status_code == 429 and locked.headers["Retry-After"] == "60"
    assert "Too many failed sign-ins" in locked.text
    assert all(locked.headers[h] for h in HEADERS)

    log = [r.getMessage() for r in caplog.records]
    assert sum("sign-in failed from testclient" in m for m in log) == 10
    assert sum("sign-in locked for testclient" in m for m in log) == 1
    assert sum("sign-in from testclient refused" in m for m in log) == 1  # not 290 lines
    assert not any(t in m for m in log for t in (*wrong, right, "hmc_"))

    signin_clock.now += 61  # the lockout ends; the right token signs in and clears the count
    assert attempt(client, right) == 303
    assert attempt(client, "hmc_one-more-wrong") == 401


def test_routing_404_and_405_pages_carry_the_security_headers(
    client: TestClient, tokens: AdminTokenFile, tenant: str
) -> None:
    sign_in(client, tokens.add("alice", [tenant]))
    for method, path, status in [
        ("GET", "/no/such/page", 404),
        ("GET", "/favicon.ico", 404),
        ("PUT", "/login", 405),
        ("DELETE", f"/t/{tenant}/pending", 405),
        ("POST", "/status", 405),
    ]:
        answer = client.request(method, path)
        assert answer.status_code == status, (method, path)
        for header in HEADERS:
            assert answer.headers.get(header), (method, path, header)
        assert "default-src 'none'" in answer.headers["Content-Security-Policy"]
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert "text/html" in answer.headers["content-type"]
        if status == 405:
            assert "GET" in answer.headers["Allow"] or "POST" in answer.headers["Allow"]


@pytest.mark.parametrize("content", ['{"admins": [', '{"admins": [{"sha256": "x"}]}'])
def test_a_broken_token_file_answers_503_naming_it_and_is_logged_once(
    client: TestClient,
    tokens: AdminTokenFile,
    tenant: str,
    content: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="harness.token_files")
    token = tokens.add("alice", [tenant])
    sign_in(client, token)
    tokens.path.write_text(content)  # an edit gone wrong while sessions are open
    answers = [client.get(f"/t/{tenant}/pending") for _ in range(20)]
    answers += [
        client.post("/login", data={"token": token, "csrf": csrf_of(client.get("/login").text)})
    ]
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert "console-tokens.json" in answer.text and "Traceback" not in answer.text
        assert str(tokens.path.parent) not in answer.text  # the name, not where it lives
        assert answer.headers["Content-Security-Policy"]
    causes = [r.getMessage() for r in caplog.records]
    assert len(causes) == 1 and str(tokens.path) in causes[0]


def test_an_unexpected_failure_is_a_plain_500_page_with_the_security_headers(
    store: MemoryStore, tokens: AdminTokenFile, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.console.backend import ConsoleBackend

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals of the failure")

    monkeypatch.setattr(ConsoleBackend, "status", broken)
    app = build_console_app(store, tokens)
    with TestClient(app, raise_server_exceptions=False) as client:
        sign_in(client, tokens.add("alice", [tenant]))
        answer = client.get("/status")
    assert answer.status_code == 500
    assert "secret internals" not in answer.text and "Traceback" not in answer.text
    for header in HEADERS:
        assert answer.headers.get(header), header
