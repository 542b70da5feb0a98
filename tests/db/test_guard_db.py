"""The write guard: corpus rates, regression tables, every field, masking, normalised views.

The corpus (``tests/support/data/guard``, made by its seeded ``generate.py``) holds fake
secrets, injection attempts and ordinary engineering sentences; the rates on it are asserted
against the goals of issue 13. A store-level test shows the secret never reaches the error, the log or the audit.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_guard.py.
"""

from __future__ import annotations

import json
import logging

import pytest

from harness.errors import MemoryRejected
from harness.memory import MemoryStore


def test_store_rejection_keeps_the_secret_out_of_error_log_and_audit(
    store: MemoryStore, tenant: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret_value = "Tr0ub4dor&3-horse"
    caplog.set_level(logging.DEBUG)
    bad = {
        "tenant": tenant,
        "scope": "platform",
        "kind": "fact",
        "content": "The deploy bot logs in as svc-deploy.",
        "context": f"password: {secret_value}",
    }
    with pytest.raises(MemoryRejected) as info:
        store.write_many([{**bad, "content": "fine", "context": None}, bad])
    exc = info.value
    assert (exc.index, exc.field, exc.rule) == (1, "context", "password_assignment")
    assert exc.position == 0 and exc.excerpt is not None
    assert secret_value not in str(exc) and secret_value[:6] not in str(exc)
    assert all(secret_value not in r.getMessage() for r in caplog.records)
    assert secret_value not in json.dumps(store.audit(tenant), default=str)
