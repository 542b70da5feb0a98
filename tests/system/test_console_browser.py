"""The console in a real headless Chromium (Debian's chromium + chromium-driver, via Selenium).

One browser session walks the four pages: sign in, approve with the keyboard, reject with a
reason, open an item's history, run a playground recall, look at the status page. Screenshots
go to ``tmp_path``, and also to ``$HARNESS_CONSOLE_SCREENSHOTS`` when set (that is how
``docs/console/*.png`` are made). If the browser cannot start, the test fails with the reason.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import uvicorn
from selenium import webdriver
from selenium.common.exceptions import (
    TimeoutException,
    WebDriverException,
)
from selenium.webdriver import Chrome
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from harness.clock import FixedClock
from harness.console import AdminTokenFile, build_console_app
from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.domain.types import Status
from tests.support.console_helpers import seed

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


@pytest.fixture
def served(store: MemoryStore, tmp_path: Path) -> Iterator[tuple[str, AdminTokenFile]]:
    """The console on a free local port, served by uvicorn in a thread."""
    tokens = AdminTokenFile(tmp_path / "console-tokens.json")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(build_console_app(store, tokens), log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            pytest.fail("the console server did not start within 10 s")
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", tokens
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture
def browser() -> Iterator[Chrome]:
    """Headless Chromium; fails (never skips) with the reason when it cannot start."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(
            f"the browser test needs {', '.join(missing)}: "
            "`apt-get install -y chromium chromium-driver` (`make test` does this as root)"
        )
    # Selenium Manager must not try to download a browser or driver.
    os.environ["SE_OFFLINE"] = "true"
    profile = tempfile.mkdtemp(prefix="console-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    try:
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    except WebDriverException as exc:
        shutil.rmtree(profile, ignore_errors=True)
        pytest.fail(f"headless Chromium could not start: {exc.msg or exc}")
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _shoot(driver: Chrome, name: str, tmp_path: Path) -> None:
    """A full-page PNG (beyond the viewport) through the DevTools protocol."""
    targets = [tmp_path]
    extra = os.environ.get("HARNESS_CONSOLE_SCREENSHOTS", "").strip()
    if extra:
        targets.append(Path(extra))
    width, height = driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
    )
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 2400), "scale": 1},
        },
    )
    png = base64.b64decode(shot["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n", f"screenshot {name} is not a PNG"
    for folder in targets:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.png").write_bytes(png)


def _focused_item(driver: Chrome, previous: str | None) -> str:
    """The focused queue item's id (or "empty") once it differs from ``previous``.

    After a decision the page reloads; until the new document is in place, elements found may
    belong to the old one (stale, or "does not belong to the document" under load), so every
    driver error inside the wait counts as "not yet".
    """
    seen = [""]

    def moved_on(d: Chrome) -> bool:
        if d.find_elements(By.ID, "empty"):
            seen[0] = "empty"
        else:
            seen[0] = (
                d.find_element(By.CSS_SELECTOR, "[data-item].current").get_attribute("data-id")
                or ""
            )
        return bool(seen[0]) and seen[0] != previous

    WebDriverWait(driver, 15, ignored_exceptions=(WebDriverException,)).until(moved_on)
    return seen[0]


def _press(driver: Chrome, keys: str) -> None:
    ActionChains(driver).send_keys(keys).perform()


def _flash(driver: Chrome, expected: str) -> str:
    """The flash message once it reads ``expected`` (or the last one seen after 10 s): the
    previous page's flash may still be there, or go stale, while the next page loads."""
    seen = [""]

    def reads_expected(d: Chrome) -> bool:
        seen[0] = d.find_element(By.CSS_SELECTOR, ".flash").text
        return seen[0] == expected

    wait = WebDriverWait(driver, 10, ignored_exceptions=(WebDriverException,))
    with contextlib.suppress(TimeoutException):
        wait.until(reads_expected)
    return seen[0]


def test_admin_reviews_inspects_and_recalls_in_a_real_browser(
    served: tuple[str, AdminTokenFile],
    browser: Chrome,
    store: MemoryStore,
    clock: FixedClock,
    tenant: str,
    tmp_path: Path,
) -> None:
    base, tokens = served
    seeded = seed(store, tenant, clock)
    token = tokens.add("Ada Admin", [tenant])
    wait = WebDriverWait(browser, 10)

    # Nothing without signing in: the queue sends us to the sign-in form.
    browser.get(f"{base}/t/{tenant}/pending")
    assert browser.current_url == f"{base}/login"
    browser.find_element(By.ID, "token").send_keys(token)
    browser.find_element(By.ID, "sign-in").click()
    wait.until(ec.url_to_be(f"{base}/t/{tenant}/pending"))
    assert "signed in as Ada Admin" in browser.find_element(By.TAG_NAME, "header").text

    # The queue, oldest first; the first item has keyboard focus; content shows as text.
    items = browser.find_elements(By.CSS_SELECTOR, "[data-item]")
    assert [i.get_attribute("data-id") for i in items] == [
        str(seeded.pending_keyed.id),
        str(seeded.pending_plain.id),
        str(seeded.pending_xss.id),
    ]
    assert "current" in (items[0].get_attribute("class") or "")
    assert "<script>alert(1)</script>" in items[2].text
    assert "Answer in English." in items[0].text  # what it would supersede, side by side
    _press(browser, "j")
    assert "current" in (items[1].get_attribute("class") or "")
    _press(browser, "k")
    assert "current" in (items[0].get_attribute("class") or "")
    _shoot(browser, "pending", tmp_path)

    # a: approve the focused item, keyboard only.
    _press(browser, "a")
    assert _flash(browser, "approved 1 memory") == "approved 1 memory"
    approved = store.get(seeded.pending_keyed.id, tenant=tenant)
    assert approved is not None and approved.status is Status.ACTIVE
    assert approved.approval is not None and approved.approval.by == "Ada Admin"

    # r: type a reason, Enter rejects.
    _press(browser, "r")
    _press(browser, "too narrow for a platform rule" + Keys.ENTER)
    assert _flash(browser, "rejected 1 memory") == "rejected 1 memory"
    rejected = store.get(seeded.pending_plain.id, tenant=tenant)
    assert rejected is not None and rejected.status is Status.REJECTED
    assert rejected.approval is not None and rejected.approval.reason == (
        "too narrow for a platform rule"
    )
    remaining = browser.find_elements(By.CSS_SELECTOR, "[data-item]")
    assert [i.get_attribute("data-id") for i in remaining] == [str(seeded.pending_xss.id)]

    # The browser, then one item's supersession history.
    browser.find_element(By.LINK_TEXT, "Memories").click()
    wait.until(ec.presence_of_element_located((By.ID, "memories")))
    _shoot(browser, "memories", tmp_path)
    browser.find_element(By.CSS_SELECTOR, f'a[href$="/memories/{seeded.v1.id}"]').click()
    history = wait.until(ec.presence_of_element_located((By.ID, "history")))
    rows = history.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == 2
    assert "Alice likes detailed answers." in rows[0].text and "superseded" in rows[0].text
    assert "Alice now wants three-line answers." in rows[1].text and "active" in rows[1].text
    _shoot(browser, "memory", tmp_path)

    # The playground: the block exactly as the model gets it, and the trace.
    browser.find_element(By.LINK_TEXT, "Playground").click()
    browser.find_element(By.ID, "user_id").send_keys("alice")
    browser.find_element(By.ID, "query").send_keys("How long should my answers be?")
    browser.find_element(By.ID, "run").click()
    block = wait.until(ec.presence_of_element_located((By.ID, "block"))).text
    assert "[platform constraint | verdict |" in block
    assert "Answer in the user's language." in block
    assert "Alice now wants three-line answers." in block
    assert "Answer in English." not in block  # superseded by the approval above
    trace = browser.find_element(By.ID, "trace").text
    assert "kept" in trace and "assembly" in trace
    _shoot(browser, "playground", tmp_path)

    # A few weeks of writes from every origin, so the status chart has something to draw.
    now = clock.at
    origins = ["api", "admin", "verdict", "completion"]
    for day in range(1, 22):
        clock.at = now - timedelta(days=day)
        store.write_many(
            [
                MemoryCandidate(
                    tenant=tenant,
                    scope="workflow",
                    scope_id="wf-report",
                    kind="lesson",
                    content=f"Lesson {day}.{n} of the report workflow.",
                    source={"origin": origins[(day + n) % 4]},
                )
                for n in range(1 + (day * 7) % 5)
            ]
        )
    clock.at = now
    browser.find_element(By.LINK_TEXT, "Status").click()
    totals = wait.until(ec.presence_of_element_located((By.ID, f"totals-{tenant}"))).text
    assert "pending 1" in totals and "rejected 1" in totals
    assert browser.find_elements(By.CSS_SELECTOR, "figure svg rect title")
    _shoot(browser, "status", tmp_path)

    # Twenty more proposals, reviewed with the keyboard alone: a, a, a, r + reason + Enter, ...
    store.write_many(
        [
            MemoryCandidate(
                tenant=tenant,
                scope="platform",
                kind="lesson",
                content=f"Proposed platform lesson number {i}.",
                source={"origin": "completion", "run_id": f"run-{100 + i}"},
            )
            for i in range(20)
        ]
    )
    browser.find_element(By.LINK_TEXT, "Pending").click()
    focused = _focused_item(browser, previous=None)
    for i in range(21):
        if i % 4 == 3:
            _press(browser, "r")
            _press(browser, f"duplicate {i}" + Keys.ENTER)
        else:
            _press(browser, "a")
        focused = _focused_item(browser, previous=focused)
    assert focused == "empty"
    assert browser.find_element(By.ID, "empty").text == "Nothing is waiting for a decision."
    assert store.pending(tenant) == []
    decisions = store.audit(tenant)
    assert len(decisions) == 23 and {a["actor"] for a in decisions} == {"Ada Admin"}
    assert sum(a["decision"] == "rejected" for a in decisions) == 1 + 5
