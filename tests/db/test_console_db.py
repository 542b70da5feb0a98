"""The admin console over HTTP: every route, the security rules, bad input.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_console.py."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import quote

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bench.common import as_tenant
from harness.clock import FixedClock
from harness.console import AdminTokenFile, build_console_app, console_mount
from harness.console.app import BROWSE_PAGE
from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.domain.types import RecallRequest, Status
from harness.memory.store.sql.cleanups import enqueue
from tests.support.console_helpers import XSS, Seeded, csrf_of, other_tenant, seed, sign_in


@pytest.fixture
def seeded(store: MemoryStore, tenant: str, clock: FixedClock) -> Seeded:
    return seed(store, tenant, clock)


@pytest.fixture
def client(store: MemoryStore, tokens: AdminTokenFile) -> Iterator[TestClient]:
    with TestClient(build_console_app(store, tokens)) as c:
        yield c


@pytest.fixture
def csrf(client: TestClient, tokens: AdminTokenFile, tenant: str) -> str:
    return sign_in(client, tokens.add("alice", [tenant]))


def _routes(tenant: str, memory_id: str) -> list[tuple[str, str]]:
    return [
        ("GET", "/"),
        ("GET", "/status"),
        ("GET", f"/t/{tenant}/pending"),
        ("GET", f"/t/{tenant}/retirements"),
        ("GET", f"/t/{tenant}/memories"),
        ("GET", f"/t/{tenant}/memories/{memory_id}"),
        ("GET", f"/t/{tenant}/memories/{memory_id}/forget"),
        ("GET", f"/t/{tenant}/playground?run=1&user_id=alice&query=x"),
        ("POST", f"/t/{tenant}/pending"),
        ("POST", f"/t/{tenant}/retirements"),
        ("POST", f"/t/{tenant}/memories/{memory_id}/forget"),
        ("POST", "/logout"),
    ]


# --- signing in -------------------------------------------------------------------------------


def test_nothing_is_reachable_without_signing_in(
    client: TestClient, store: MemoryStore, seeded: Seeded, tenant: str
) -> None:
    target = str(seeded.pending_plain.id)
    for method, path in _routes(tenant, target):
        if method == "GET":
            r = client.get(path, follow_redirects=False)
            assert r.status_code == 303, path
            assert r.headers["location"] == "/login"
        else:
            r = client.post(
                path, data={"id": target, "action": "approve", "confirm": "yes", "csrf": "x"}
            )
            assert r.status_code == 401, path
            assert seeded.pending_plain.content not in r.text
    assert store.get(seeded.pending_plain.id, tenant=tenant).status is Status.PENDING_APPROVAL  # type: ignore[union-attr]


def test_unknown_token_and_stale_login_form_are_refused(
    client: TestClient, tokens: AdminTokenFile, tenant: str
) -> None:
    tokens.add("alice", [tenant])
    page = client.get("/login")
    bad = client.post("/login", data={"token": "hmc_guess", "csrf": csrf_of(page.text)})
    assert bad.status_code == 401 and "Unknown token" in bad.text
    assert "hm_console" not in {c.name for c in client.cookies.jar}
    client.cookies.clear()
    stale = client.post("/login", data={"token": "hmc_guess", "csrf": "forged"})
    assert stale.status_code == 403


def test_session_cookie_is_httponly_samesite_strict_and_secure_only_over_tls(
    store: MemoryStore, tokens: AdminTokenFile, tenant: str
) -> None:
    token = tokens.add("alice", [tenant])
    for base, secure in (("http://testserver", False), ("https://testserver", True)):
        with TestClient(build_console_app(store, tokens), base_url=base) as c:
            page = c.get("/login")
            r = c.post(
                "/login",
                data={"token": token, "csrf": csrf_of(page.text)},
                follow_redirects=False,
            )
            cookie = next(
                v for k, v in r.headers.multi_items() if k == "set-cookie" and "hm_console=" in v
            )
            attrs = {a.strip().lower() for a in cookie.split(";")}
            assert "httponly" in attrs and "samesite=strict" in attrs
            assert ("secure" in attrs) is secure


def test_sign_out_ends_the_session(client: TestClient, csrf: str, tenant: str) -> None:
    assert client.post("/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    r = client.get(f"/t/{tenant}/pending", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"


def test_removing_a_token_from_the_file_ends_its_sessions(
    client: TestClient, csrf: str, tokens: AdminTokenFile, tenant: str
) -> None:
    assert client.get(f"/t/{tenant}/pending").status_code == 200
    tokens.path.write_text(json.dumps({"admins": []}))
    assert client.get(f"/t/{tenant}/pending", follow_redirects=False).status_code == 303


def test_every_response_carries_a_strict_content_security_policy(
    client: TestClient, csrf: str, tenant: str
) -> None:
    r = client.get(f"/t/{tenant}/pending")
    policy = r.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    nonce = re.search(r"'nonce-([^']+)'", policy)
    assert nonce and f'nonce="{nonce.group(1)}"' in r.text
    assert r.headers["cache-control"] == "no-store"


# --- CSRF ---------------------------------------------------------------------------------------


def test_posts_without_the_session_csrf_token_change_nothing(
    client: TestClient, csrf: str, store: MemoryStore, seeded: Seeded, tenant: str
) -> None:
    target = seeded.pending_plain.id
    for token in (None, "forged", csrf[:-1]):
        data = {"id": str(target), "action": "approve"}
        if token is not None:
            data["csrf"] = token
        r = client.post(f"/t/{tenant}/pending", data=data)
        assert r.status_code == 403 and "CSRF" in r.text
        r = client.post(f"/t/{tenant}/memories/{target}/forget", data={**data, "confirm": "yes"})
        assert r.status_code == 403
    assert store.get(target, tenant=tenant).status is Status.PENDING_APPROVAL  # type: ignore[union-attr]
    assert store.audit(tenant) == []


# --- tenant isolation ---------------------------------------------------------------------------


def test_an_admin_of_one_tenant_gets_404_for_another_tenants_pages_and_ids(
    client: TestClient, csrf: str, store: MemoryStore, clock: FixedClock, tenant: str
) -> None:
    foreign_tenant = other_tenant()
    foreign = seed(store, foreign_tenant, clock)
    fid = str(foreign.pending_plain.id)
    for method, path in _routes(foreign_tenant, fid):
        if path in ("/", "/status", "/logout"):
            continue
        if method == "GET":
            r = client.get(path)
        else:
            r = client.post(
                path, data={"id": fid, "action": "approve", "csrf": csrf, "confirm": "yes"}
            )
        assert r.status_code == 404, path
        assert foreign.pending_plain.content not in r.text
    # Their ids through my own tenant's pages: not found either, nothing decided or deleted.
    for path in (f"/t/{tenant}/memories/{fid}", f"/t/{tenant}/memories/{fid}/forget"):
        assert client.get(path).status_code == 404
    r = client.post(f"/t/{tenant}/pending", data={"id": fid, "action": "approve", "csrf": csrf})
    assert r.status_code == 404
    r = client.post(f"/t/{tenant}/memories/{fid}/forget", data={"csrf": csrf, "confirm": "yes"})
    assert r.status_code == 404
    assert (
        store.get(foreign.pending_plain.id, tenant=foreign_tenant).status is Status.PENDING_APPROVAL
    )  # type: ignore[union-attr]
    # The status page lists only my tenants.
    assert foreign_tenant not in client.get("/status").text


# --- pending queue ------------------------------------------------------------------------------


def test_pending_page_shows_provenance_what_it_supersedes_and_similar_items(
    client: TestClient, csrf: str, seeded: Seeded, tenant: str
) -> None:
    page = client.get(f"/t/{tenant}/pending").text
    item = page.split(f'id="item-{seeded.pending_keyed.id}"')[1].split("</section>")[0]
    assert "Answer in the user&#39;s language." in item
    assert "run-7" in item and "verdict-3" in item and "verdict" in item
    assert "Would supersede" in item and "Answer in English." in item
    assert "Similar active items (1)" in item and "Answer in English." in item
    plain = page.split(f'id="item-{seeded.pending_plain.id}"')[1].split("</section>")[0]
    assert "nothing (no active item with this key)" in plain
    # below the similarity floor: an unrelated active memory is not offered as a look-alike
    assert "Similar active items" not in plain and "no similar active items" in plain


def test_approve_and_reject_land_in_the_audit_with_the_admins_name(
    client: TestClient, csrf: str, store: MemoryStore, seeded: Seeded, tenant: str
) -> None:
    r = client.post(
        f"/t/{tenant}/pending",
        data={"id": str(seeded.pending_keyed.id), "action": "approve", "csrf": csrf},
    )
    assert r.status_code == 200 and "approved 1 memory" in r.text
    r = client.post(
        f"/t/{tenant}/pending",
        data={
            "id": str(seeded.pending_plain.id),
            "action": "reject",
            "reason": "too specific",
            "csrf": csrf,
        },
    )
    assert "rejected 1 memory" in r.text
    assert store.get(seeded.pending_keyed.id, tenant=tenant).status is Status.ACTIVE  # type: ignore[union-attr]
    assert store.get(seeded.old_policy.id, tenant=tenant).status is Status.SUPERSEDED  # type: ignore[union-attr]
    assert store.get(seeded.pending_plain.id, tenant=tenant).status is Status.REJECTED  # type: ignore[union-attr]
    audit = {(a["memory_id"], a["decision"], a["actor"], a["reason"]) for a in store.audit(tenant)}
    assert audit == {
        (seeded.pending_keyed.id, "approved", "alice", None),
        (seeded.pending_plain.id, "rejected", "alice", "too specific"),
    }
    assert str(seeded.pending_plain.id) not in client.get(f"/t/{tenant}/pending").text


def test_bulk_decisions_and_a_bad_selection_changes_nothing(
    client: TestClient, csrf: str, store: MemoryStore, seeded: Seeded, tenant: str
) -> None:
    ids = [str(seeded.pending_plain.id), str(seeded.pending_xss.id)]
    # One id of the selection is already active: refuse the whole batch.
    r = client.post(
        f"/t/{tenant}/pending",
        data={"id": [*ids, str(seeded.v2.id)], "action": "approve", "csrf": csrf},
    )
    assert r.status_code == 409 and "not pending_approval" in r.text
    assert all(store.get(i, tenant=tenant).status is Status.PENDING_APPROVAL for i in ids)  # type: ignore[union-attr]
    r = client.post(
        f"/t/{tenant}/pending",
        data={"id": ids, "action": "reject", "reason": "noise", "csrf": csrf},
    )
    assert "rejected 2 memories" in r.text
    assert all(store.get(i, tenant=tenant).status is Status.REJECTED for i in ids)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        ({"action": "approve"}, 400, "id: select at least one memory"),
        ({"action": "promote", "id": "ID"}, 400, "action: must be approve or reject"),
        ({"action": "reject", "id": "ID"}, 400, "reason: a rejection needs a reason"),
        ({"action": "reject", "id": "ID", "reason": "   "}, 400, "reason: a rejection needs"),
        ({"action": "approve", "id": "not-a-uuid"}, 404, "Not found"),
        ({"action": "approve", "id": "00000000-0000-0000-0000-000000000000"}, 404, "Not found"),
    ],
)
def test_malformed_decisions_say_why_and_change_nothing(
    client: TestClient,
    csrf: str,
    store: MemoryStore,
    seeded: Seeded,
    tenant: str,
    data: dict[str, str],
    status: int,
    message: str,
) -> None:
    form = {k: (str(seeded.pending_plain.id) if v == "ID" else v) for k, v in data.items()}
    r = client.post(f"/t/{tenant}/pending", data={**form, "csrf": csrf})
    assert r.status_code == status
    assert message in html.unescape(r.text) and "Nothing was changed." in r.text
    assert store.get(seeded.pending_plain.id, tenant=tenant).status is Status.PENDING_APPROVAL  # type: ignore[union-attr]
    assert store.audit(tenant) == []


# --- escaping -----------------------------------------------------------------------------------


def test_memory_content_is_escaped_on_every_page(
    client: TestClient, csrf: str, seeded: Seeded, tenant: str
) -> None:
    pages = [
        f"/t/{tenant}/pending",
        f"/t/{tenant}/memories",
        f"/t/{tenant}/memories/{seeded.pending_xss.id}",
        f"/t/{tenant}/memories/{seeded.pending_xss.id}/forget",
    ]
    for path in pages:
        body = client.get(path).text
        assert XSS not in body, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body, path
    # Filter values and error messages echo input: escaped too.
    body = client.get(f"/t/{tenant}/memories", params={"q": XSS}).text
    assert XSS not in body and "&lt;script&gt;" in body
    body = client.get(f"/t/{tenant}/memories", params={"kind": XSS}).text
    assert XSS not in body and "&lt;script&gt;" in body


# --- memory browser -----------------------------------------------------------------------------


def test_browser_paginates_by_keyset_and_filters(
    client: TestClient, csrf: str, store: MemoryStore, clock: FixedClock, tenant: str
) -> None:
    written = []
    for i in range(BROWSE_PAGE * 2 + 7):
        clock.at += timedelta(seconds=1)
        written.append(
            store.write(
                MemoryCandidate(
                    tenant=tenant,
                    scope="workflow" if i % 2 else "user",
                    scope_id=f"s{i % 3}",
                    kind="fact" if i % 5 else "lesson",
                    content=f"fact number {i}",
                )
            )
        )
    seen: list[str] = []
    url = f"/t/{tenant}/memories"
    pages = 0
    while url:
        body = client.get(url).text
        ids = re.findall(rf"/t/{tenant}/memories/([0-9a-f-]{{36}})\"", body)
        assert len(ids) <= BROWSE_PAGE
        seen += ids
        pages += 1
        nxt = re.search(r'id="next" href="([^"]+)"', body)
        url = f"/t/{tenant}/memories" + html.unescape(nxt.group(1)) if nxt else ""
    assert pages == 3
    assert seen == [str(m.id) for m in reversed(written)]  # newest first, each once

    lessons = client.get(url or f"/t/{tenant}/memories", params={"kind": "lesson"}).text
    lesson_ids = set(re.findall(rf"/t/{tenant}/memories/([0-9a-f-]{{36}})\"", lessons))
    assert lesson_ids == {str(m.id) for m in written if m.kind.value == "lesson"}
    narrowed = client.get(
        f"/t/{tenant}/memories",
        params={"scope": "workflow", "scope_id": "s1", "status": "active", "q": "Number 13"},
    ).text
    got = set(re.findall(rf"/t/{tenant}/memories/([0-9a-f-]{{36}})\"", narrowed))
    assert got == {str(written[13].id)}  # words, any case; "number 130" is another word
    none = client.get(f"/t/{tenant}/memories", params={"scope": "user", "q": "Number 13"}).text
    assert 'id="empty"' in none
    # Filters survive paging: the next link of a filtered page keeps them.
    page = client.get(f"/t/{tenant}/memories", params={"scope": "user"}).text
    assert "scope=user" in html.unescape(re.search(r'id="next" href="([^"]+)"', page).group(1))  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"scope": "galaxy"}, "scope: 'galaxy' is not one of"),
        ({"kind": "rumour"}, "kind: 'rumour' is not one of"),
        ({"status": "deleted"}, "status: 'deleted' is not one of"),
        ({"before": "yesterday"}, "before: 'yesterday' is not a page cursor"),
        ({"before": "2026-01-01T00:00:00~nope"}, "is not a page cursor"),
        ({"q": "x" * 201}, "q: at most 200 characters"),
    ],
)
def test_browser_rejects_bad_filters_with_a_clear_message(
    client: TestClient, csrf: str, tenant: str, params: dict[str, str], message: str
) -> None:
    r = client.get(f"/t/{tenant}/memories", params=params)
    assert r.status_code == 400
    assert message in html.unescape(r.text)


# --- item page and forget -----------------------------------------------------------------------


def test_item_page_shows_history_provenance_expiry_and_decisions(
    client: TestClient, csrf: str, store: MemoryStore, seeded: Seeded, tenant: str
) -> None:
    body = client.get(f"/t/{tenant}/memories/{seeded.v1.id}").text
    history = body.split('id="history"')[1].split("</table>")[0]
    assert history.index("Alice likes detailed answers.") < history.index("Alice now wants")
    assert "superseded" in history and "(this)" in history
    assert str(seeded.v2.id)[:8] in history
    client.post(
        f"/t/{tenant}/pending",
        data={
            "id": str(seeded.pending_plain.id),
            "action": "reject",
            "reason": "nope",
            "csrf": csrf,
        },
    )
    body = client.get(f"/t/{tenant}/memories/{seeded.pending_plain.id}").text
    assert "run-8" in body and "completion" in body
    decisions = body.split('id="audit"')[1]
    assert "rejected" in decisions and "alice" in decisions and "nope" in decisions
    assert "never" in body.split("expires")[1][:200]


def test_item_page_marks_an_expired_memory(
    client: TestClient, csrf: str, store: MemoryStore, clock: FixedClock, tenant: str
) -> None:
    m = store.write(
        MemoryCandidate(
            tenant=tenant,
            scope="user",
            scope_id="bob",
            kind="fact",
            content="Bob is on leave this week.",
            expires_at=clock.at + timedelta(days=1),
        )
    )
    assert "expired" not in client.get(f"/t/{tenant}/memories/{m.id}").text.split('id="history"')[0]
    clock.at += timedelta(days=2)
    assert "(expired: never recalled)" in client.get(f"/t/{tenant}/memories/{m.id}").text


def test_forget_needs_confirmation_then_deletes(
    client: TestClient, csrf: str, store: MemoryStore, seeded: Seeded, tenant: str
) -> None:
    target = seeded.v2.id
    confirm_page = client.get(f"/t/{tenant}/memories/{target}/forget")
    assert confirm_page.status_code == 200 and "cannot be undone" in confirm_page.text
    r = client.post(f"/t/{tenant}/memories/{target}/forget", data={"csrf": csrf})
    assert r.status_code == 400 and "confirm" in r.text
    assert store.get(target, tenant=tenant) is not None
    r = client.post(f"/t/{tenant}/memories/{target}/forget", data={"csrf": csrf, "confirm": "yes"})
    assert r.status_code == 200 and f"forgot memory {target}" in r.text
    assert store.get(target, tenant=tenant) is None
    assert client.get(f"/t/{tenant}/memories/{target}").status_code == 404
    # History of the key still reads, without the forgotten version.
    body = client.get(f"/t/{tenant}/memories/{seeded.v1.id}").text
    assert "Alice now wants" not in body


@pytest.mark.parametrize("bad_id", ["nope", "00000000-0000-0000-0000-000000000000", "1' or '1"])
def test_unknown_or_malformed_ids_are_404(
    client: TestClient, csrf: str, tenant: str, bad_id: str
) -> None:
    for path in (f"/t/{tenant}/memories/{bad_id}", f"/t/{tenant}/memories/{bad_id}/forget"):
        r = client.get(path)
        assert r.status_code == 404 and "Not found." in r.text
    r = client.post(f"/t/{tenant}/memories/{bad_id}/forget", data={"csrf": csrf, "confirm": "yes"})
    assert r.status_code == 404


# --- playground ---------------------------------------------------------------------------------


def test_playground_shows_the_block_exactly_as_recall_renders_it_and_the_trace(
    client: TestClient, csrf: str, store: MemoryStore, seeded: Seeded, tenant: str
) -> None:
    params = {
        "run": "1",
        "user_id": "alice",
        "query": "how long should answers be",
        "budget_chars": "2000",
        "max_items": "20",
        "max_item_chars": "500",
    }
    body = client.get(f"/t/{tenant}/playground", params=params).text
    expected = store.recall(
        RecallRequest(tenant=tenant, user_id="alice", query=params["query"], budget_chars=2000)
    )
    block = re.search(r'<pre class="block" id="block">(.*?)</pre>', body, re.S)
    assert block is not None
    shown = html.unescape(block.group(1))
    assert shown == expected.text
    assert "Alice now wants three-line answers." in shown
    trace = body.split('id="trace"')[1].split("</table>")[0]
    for entry in expected.trace:
        assert entry.detail in html.unescape(trace)
    assert len(re.findall(r'<tr><td data-label="decision">(kept|dropped)</td>', trace)) == len(
        expected.trace
    )
    # an item recall includes whatever the query says why, not "relevance 0.000"
    kept = body.split('id="kept"')[1].split("</table>")[0]
    assert "always: preference" in kept and "0.000" not in kept


def test_playground_budget_leaves_items_out_and_says_why(
    client: TestClient, csrf: str, seeded: Seeded, tenant: str
) -> None:
    body = client.get(
        f"/t/{tenant}/playground",
        params={"run": "1", "user_id": "alice", "query": "", "budget_chars": "40"},
    ).text
    omitted = body.split('id="omitted"')[1].split("</table>")[0]
    assert "budget" in omitted or "item_too_long" in omitted


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"user_id": "alice", "budget_chars": "lots"},
            "budget_chars: 'lots' is not a whole number",
        ),
        ({"user_id": "alice", "max_items": "-1"}, "max_items"),
        ({"user_id": ""}, "user_id"),
    ],
)
def test_playground_rejects_bad_input_with_a_clear_message(
    client: TestClient, csrf: str, tenant: str, params: dict[str, str], message: str
) -> None:
    r = client.get(f"/t/{tenant}/playground", params={"run": "1", **params})
    assert r.status_code == 400 and message in html.unescape(r.text)


def test_playground_form_without_run_shows_no_result(
    client: TestClient, csrf: str, tenant: str
) -> None:
    body = client.get(f"/t/{tenant}/playground").text
    assert 'id="recall-form"' in body and 'id="block"' not in body


# --- status -------------------------------------------------------------------------------------


def test_status_shows_counts_embedder_cleanups_and_a_chart(
    client: TestClient, csrf: str, store: MemoryStore, seeded: Seeded, tenant: str
) -> None:
    with as_tenant(store, tenant) as conn:
        conn.execute(
            enqueue(
                {
                    "id": f"task-{tenant}",
                    "tenant": tenant,
                    "target": "session",
                    "target_id": "s-gone",
                    "created_at": store.clock.now(),
                }
            )
        )
    body = client.get("/status").text
    assert "hybrid" in body and "test/hash-embedder" in body
    totals = body.split(f'id="totals-{tenant}"')[1].split("</p>")[0]
    assert "active 2" in totals and "pending 3" in totals and "superseded 1" in totals
    assert 'class="cleanups">1<' in totals
    assert (
        '<td>platform</td><td>constraint</td><td>pending_approval</td><td class="num">1</td>'
        in body
    )
    bars = re.findall(
        r"<rect x=\"[\d.]+\" y=\"[\d.]+\" width=\"[\d.]+\" height=\"[\d.]+\" fill=\"(#[0-9a-f]+)\"><title>([^<]+)</title>",
        body,
    )
    labels = {label for _, label in bars}
    day = seeded.v2.created_at.date().isoformat()
    assert f"{day} api: 2" in labels and f"{day} completion: 2" in labels


def test_home_redirects_to_the_first_tenants_queue(
    client: TestClient, csrf: str, tenant: str
) -> None:
    r = client.get("/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/t/{tenant}/pending"


# --- mounting and the CLI -----------------------------------------------------------------------


def test_console_mounts_under_a_prefix_with_prefixed_links_and_cookie_path(
    store: MemoryStore, tokens: AdminTokenFile, seeded: Seeded, tenant: str
) -> None:
    outer = Starlette(routes=[console_mount(store, tokens, path="/console")])
    with TestClient(outer) as c:
        assert (
            c.get("/console/status", follow_redirects=False).headers["location"] == "/console/login"
        )
        sign_in(c, tokens.add("alice", [tenant]), prefix="/console")
        body = c.get(f"/console/t/{tenant}/pending").text
        assert f'action="/console/t/{tenant}/pending"' in body
        assert f'href="/console/t/{tenant}/memories/{seeded.pending_plain.id}"' in body


def test_tenant_names_are_quoted_in_links_and_redirects(
    store: MemoryStore, tokens: AdminTokenFile, clock: FixedClock
) -> None:
    spaced = f"acme corp {other_tenant()}?#"
    seeded = seed(store, spaced, clock)
    quoted = quote(spaced, safe="")
    with TestClient(build_console_app(store, tokens)) as c:
        csrf = sign_in(c, tokens.add("alice", [spaced]))
        body = c.get(f"/t/{quoted}/pending").text
        assert f'action="/t/{quoted}/pending"' in body
        r = c.post(
            f"/t/{quoted}/pending",
            data={"id": str(seeded.pending_plain.id), "action": "approve", "csrf": csrf},
            follow_redirects=False,
        )
        assert r.status_code == 303 and r.headers["location"] == f"/t/{quoted}/pending"
    assert store.get(seeded.pending_plain.id, tenant=spaced).status is Status.ACTIVE  # type: ignore[union-attr]


def test_a_misleading_lesson_is_retired_and_restored_from_the_console(
    client: TestClient, csrf: str, store: MemoryStore, tenant: str
) -> None:
    def learn(run: str, **verdict: object) -> object:
        placed = verdict.pop("placed", ())
        return store.learn(
            {
                "tenant": tenant,
                "user_id": "alice",
                "run_id": run,
                "task": "Summarise the incident for the ops channel",
                "placed": placed,
                "verdicts": [{"id": f"v-{run}", "accepted": False, **verdict}],
            }
        )

    (lesson,) = learn("r1", feedback="Ops summaries are <b>three</b> lines at most.").written  # type: ignore[attr-defined]
    assert "No lesson is proposed" in client.get(f"/t/{tenant}/retirements").text
    for run in ("r2", "r3"):
        learn(run, feedback="Not for this task.", misled=[str(lesson.id)], placed=[lesson.id])
    page = client.get(f"/t/{tenant}/retirements").text
    assert f"proposal-{lesson.id}" in page and "misled 2" in page
    assert "<b>three</b>" not in page and "&lt;b&gt;three&lt;/b&gt;" in page
    refused = client.post(
        f"/t/{tenant}/retirements", data={"id": str(lesson.id), "action": "retire"}
    )
    assert refused.status_code == 403
    assert store.get(lesson.id, tenant=tenant).status is Status.ACTIVE  # type: ignore[union-attr]
    done = client.post(
        f"/t/{tenant}/retirements",
        data={"id": str(lesson.id), "action": "retire", "reason": "misleads", "csrf": csrf},
    )
    assert done.status_code == 200 and f"retired-{lesson.id}" in done.text
    assert store.get(lesson.id, tenant=tenant).status is Status.RETIRED  # type: ignore[union-attr]
    back = client.post(
        f"/t/{tenant}/retirements", data={"id": str(lesson.id), "action": "restore", "csrf": csrf}
    )
    assert back.status_code == 200
    assert store.get(lesson.id, tenant=tenant).status is Status.ACTIVE  # type: ignore[union-attr]
    events = [(e["event"], e["actor"]) for e in store.lesson_events(lesson.id, tenant=tenant)]
    assert events[-2:] == [("retired", "alice"), ("restored", "alice")]
