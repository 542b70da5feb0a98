"""Screenshots of every console page in headless Chromium, 1280 and 390 px wide.

    python -m bench.console_shots [--out docs/console] [--widths 1280 390]

Seeds a tenant as the console tests do (an approval queue, a keyed history, a script-shaped
content) plus a few weeks of writes for the status chart, on a fresh database of the
benchmarks' embedded server, with the real embedding model (``HARNESS_EMBED_MODEL_PATH``:
the similarities and relevances are the ones users see). Serves the console on a port the
system picks, signs in, and saves ``<page>-<width>.png`` for the sign-in form, the queue (full
and empty), the browser (full and with no match), an item, its forget form, the playground
and the status page. Uses Debian's ``/usr/bin/chromium`` and ``/usr/bin/chromedriver``.
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa
import uvicorn
from PIL import Image
from selenium import webdriver
from selenium.webdriver import Chrome
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait
from sqlalchemy.engine import make_url

from bench.common import CachedEmbedder, server_url
from harness.clock import FixedClock
from harness.console import AdminTokenFile, build_console_app
from harness.memory import MemoryCandidate, MemoryStore
from tests.support.console_helpers import seed

__all__ = ["main"]

TENANT, QUIET = "acme", "globex"
DATABASE = "console_shots"
HEIGHT = {1280: 900, 390: 844}


def _store(clock: FixedClock) -> MemoryStore:
    base = server_url()
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{DATABASE}"'))
    admin.dispose()
    url = make_url(base).set(database=DATABASE).render_as_string(hide_password=False)
    return MemoryStore.connect(url, embedder=CachedEmbedder.load(), clock=clock, check_model=False)


def _history(store: MemoryStore, clock: FixedClock) -> None:
    """Three weeks of writes from every origin, so the status chart has something to draw."""
    now = clock.at
    origins = ["api", "admin", "verdict", "completion"]
    for day in range(1, 22):
        clock.at = now - timedelta(days=day)
        store.write_many(
            [
                MemoryCandidate(
                    tenant=TENANT,
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


def _lessons(store: MemoryStore) -> None:
    """A lesson proposed for retirement (it misled twice) and one already retired."""

    def learn(run: str, task: str, **verdict: object) -> object:
        placed = verdict.pop("placed", ())
        return store.learn(
            {
                "tenant": TENANT,
                "user_id": "alice",
                "run_id": run,
                "task": task,
                "placed": placed,
                "verdicts": [{"id": f"v-{run}", "accepted": False, **verdict}],
            }
        )

    (misleading,) = learn(  # type: ignore[attr-defined]
        "r-1", "Summarise the outage for the ops channel", feedback="Use a table for every list."
    ).written
    for run, task in (
        ("r-2", "Tweet that we are back up"),
        ("r-3", "Text the on-call a one-liner"),
    ):
        learn(
            run,
            task,
            feedback="No table here.",
            misled=[str(misleading.id)],
            placed=[misleading.id],
        )
    (old,) = learn(  # type: ignore[attr-defined]
        "r-4", "Draft the Q1 board memo", feedback="Quote revenue in thousands of EUR, never USD."
    ).written
    store.retire(old.id, "Ada Admin", "the finance team switched to USD", tenant=TENANT)


@contextmanager
def _served(store: MemoryStore, tokens: AdminTokenFile) -> Iterator[str]:
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(build_console_app(store, tokens), log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def _browser() -> Iterator[Chrome]:
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not download anything
    profile = tempfile.mkdtemp(prefix="console-shots-")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _width(driver: Chrome, width: int) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": HEIGHT[width], "deviceScaleFactor": 1, "mobile": width < 600},
    )


def _shoot(driver: Chrome, out: Path, name: str, width: int) -> Path:
    height = driver.execute_script("return document.documentElement.scrollHeight")
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 3200), "scale": 1},
        },
    )
    path = out / f"{name}-{width}.png"
    # a palette of 256 colours: a page of text and flat colours loses nothing visible, and the
    # files a repository keeps are a quarter of the size
    image = Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.console_shots", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("docs/console"))
    parser.add_argument("--widths", type=int, nargs="+", default=[1280, 390])
    parser.add_argument("--only", nargs="+", default=None, help="shoot these pages only")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    clock = FixedClock(datetime(2026, 3, 2, 9, 30, 12, 345678, tzinfo=UTC))
    store = _store(clock)
    seeded = seed(store, TENANT, clock)
    _history(store, clock)
    _lessons(store)
    tokens = AdminTokenFile(Path(tempfile.mkdtemp(prefix="console-shots-")) / "tokens.json")
    token = tokens.add("Ada Admin", [TENANT, QUIET])
    try:
        with _served(store, tokens) as base, _browser() as driver:
            wait = WebDriverWait(driver, 20)
            pages = [
                ("pending", f"/t/{TENANT}/pending"),
                ("pending-empty", f"/t/{QUIET}/pending"),
                ("memories", f"/t/{TENANT}/memories"),
                ("memories-empty", f"/t/{TENANT}/memories?q=nothing+like+this"),
                ("memory", f"/t/{TENANT}/memories/{seeded.v1.id}"),
                ("forget", f"/t/{TENANT}/memories/{seeded.v2.id}/forget"),
                (
                    "playground",
                    f"/t/{TENANT}/playground?run=1&user_id=alice&workflow_id=wf-report"
                    "&query=How+long+should+my+answers+be%3F",
                ),
                ("status", "/status"),
                ("retirements", f"/t/{TENANT}/retirements"),
            ]
            if args.only:
                pages = [(name, path) for name, path in pages if name in args.only]
            for width in args.widths:
                _width(driver, width)
                driver.delete_all_cookies()
                driver.get(f"{base}/login")
                print(_shoot(driver, args.out, "login", width))
                driver.find_element(By.ID, "token").send_keys(token)
                driver.find_element(By.ID, "sign-in").click()
                wait.until(ec.url_contains("/pending"))
                for name, path in pages:
                    driver.get(base + path)
                    wait.until(ec.presence_of_element_located((By.TAG_NAME, "main")))
                    print(_shoot(driver, args.out, name, width))
    finally:
        store.close()


if __name__ == "__main__":
    main()
