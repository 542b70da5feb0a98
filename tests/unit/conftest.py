"""Unit tests: no database, no model, no other process; the whole folder runs in seconds.

A unit test that asks for a database or model fixture (directly or through another fixture)
fails before any of them is set up: move it to tests/db (or tests/system) instead."""

from __future__ import annotations

import pytest

from tests.support.kinds import DB_FIXTURES, MODEL_FIXTURES


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    wanted = set(getattr(item, "fixturenames", ()))
    refused = sorted(wanted & (DB_FIXTURES | MODEL_FIXTURES))
    if refused:
        pytest.fail(
            f"{item.nodeid} is a unit test but uses {', '.join(refused)}: tests/unit has no "
            "database and no model; move the test to tests/db (or tests/system)",
            pytrace=False,
        )
