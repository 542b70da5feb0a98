"""The readable-set filter (SPEC section 5 step 1) as a statement, against an oracle.

A grid of rows (two tenants x every scope x scope ids that name each other's scopes x every
status x expiry around ``now``) is inserted once; the filter of every shape (with and without
workflow and session) must select exactly the rows the rule admits. The rows live in a
temporary table of the columns the filter reads, so the filter alone decides (no row-level
security, no other statement). Fast enough to be the test selection of the filter's mutation
run (docs/mutation.md).

Here the tests that need no database, model or other process; the others are in
tests/db/test_readable_filter_db.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

from harness.memory.store.sql.retrieval import readable_params

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_params_name_only_the_scopes_given() -> None:
    assert readable_params("t", "u", None, None, NOW) == {
        "r_tenant": "t",
        "r_user": "u",
        "r_now": NOW,
    }
    assert readable_params("t", "u", "wf", "s", NOW) == {
        "r_tenant": "t",
        "r_user": "u",
        "r_now": NOW,
        "r_workflow": "wf",
        "r_session": "s",
    }
    assert readable_params("t", "u", "", "", NOW) == readable_params("t", "u", None, None, NOW)
