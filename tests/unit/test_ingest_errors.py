"""The ingest endpoint's answer to a store failure: a stable code, retryable or not, and the
driver's text only in the log (issue 31, point 4)."""

from __future__ import annotations

import json
import logging

import pytest

from harness.errors import EmbeddingModelMismatch, StoreError, StoreMisconfigured, StoreUnavailable
from harness.mcp_server.ingest import RETRY_AFTER_S, store_failure

CAUSE = "write: database unavailable: canceling statement due to lock timeout"


def test_a_busy_store_is_a_retryable_503_with_retry_after(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="harness.mcp_server.ingest")
    answer = store_failure(StoreUnavailable(CAUSE))
    body = json.loads(bytes(answer.body))
    assert answer.status_code == 503 and answer.headers["Retry-After"] == str(RETRY_AFTER_S)
    assert (body["code"], body["retryable"]) == ("store_busy", True)
    assert "lock timeout" not in answer.body.decode()
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert CAUSE in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    "exc",
    [
        StoreMisconfigured("connect: password authentication failed for user x"),
        EmbeddingModelMismatch("old-model", 384, "new-model", 768),
        StoreError("write: database error: value too long for type character varying(200)"),
    ],
)
def test_a_failure_a_retry_cannot_mend_is_a_503_without_retry_after(
    exc: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="harness.mcp_server.ingest")
    answer = store_failure(exc)  # type: ignore[arg-type]
    body = json.loads(bytes(answer.body))
    assert answer.status_code == 503 and "retry-after" not in answer.headers
    assert (body["code"], body["retryable"]) == ("store_failed", False)
    assert str(exc) not in body["error"] and "password" not in answer.body.decode()
    assert [r.levelname for r in caplog.records] == ["ERROR"]
    assert str(exc) in caplog.records[0].getMessage()
