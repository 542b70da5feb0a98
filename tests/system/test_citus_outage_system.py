"""A Citus worker going away (issue 32, bad input): recall degrades to the empty context with a
warning like any outage, and the recall after the worker returns works.

A real fault: the worker holding the tenant's shard is stopped (``immediate``) while recalls
run, then started again. Collected only by ``make test-citus`` (marker ``cluster``).
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from harness.clock import FixedClock
from harness.memory import MemoryCandidate, RecallRequest, RecallResult
from tests.support.citus import shard_worker, start_worker, stop_worker
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import make_store

pytestmark = pytest.mark.cluster


def test_a_worker_gone_mid_recall_degrades_and_recall_works_once_it_returns(
    db_url: str, clock: FixedClock, tenant: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(db_url, HashEmbedder(), clock)
    try:
        store.write(
            MemoryCandidate(
                tenant=tenant, scope="user", scope_id="alice", kind="fact", content="tea"
            )
        )
        request = RecallRequest(tenant=tenant, user_id="alice", query="tea")
        assert "tea" in store.recall(request).text
        worker = shard_worker(db_url, "memories", tenant)
        results: list[RecallResult] = []
        errors: list[BaseException] = []
        done = threading.Event()

        def recall_in_a_loop() -> None:
            while not done.is_set():
                try:
                    results.append(store.recall(request))
                except BaseException as exc:  # recall must never raise for an outage
                    errors.append(exc)
                    return

        with caplog.at_level(logging.WARNING, logger="harness"):
            caller = threading.Thread(target=recall_in_a_loop)
            caller.start()
            try:
                deadline = time.monotonic() + 30  # bounds a hang only
                while not results and time.monotonic() < deadline:
                    time.sleep(0.01)
                stop_worker(worker)  # mid-loop: recalls in flight meet the outage
                while not any(r.degraded for r in results) and time.monotonic() < deadline:
                    time.sleep(0.05)
            finally:
                done.set()
                caller.join(60)
                down = store.recall(request)
                start_worker(worker)
        assert not errors, errors
        assert down.degraded and not down.items and "tea" not in down.text
        assert any(r.degraded for r in results)
        for r in results:  # each answer is the right one or the empty context, never wrong
            assert (r.degraded and not r.items) or ("tea" in r.text and not r.degraded)
        assert any("recall" in rec.getMessage().lower() for rec in caplog.records)
        back = store.recall(request)  # the first recall after the worker returns
        assert not back.degraded and "tea" in back.text
    finally:
        store.close()
