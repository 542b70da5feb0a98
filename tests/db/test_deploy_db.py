"""Deployment as a service: /healthz and /readyz on a real server over loopback (the database
going away and coming back through a TCP relay we cut), settings from the environment and
their start line, one version everywhere, one-line errors for bad serving input.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_deploy.py, tests/system/test_deploy_system.py."""

from __future__ import annotations

import asyncio
import os

from harness.mcp_server.health import Readiness, check_readiness
from harness.memory import AsyncMemoryStore
from harness.memory.store.migrate import head_revision
from tests.support.stores import create_database


async def readiness_of(url: str) -> Readiness:
    store = await AsyncMemoryStore.connect(url, embedder=None, migrate=False, check_model=False)
    try:
        return await check_readiness(store)
    finally:
        await store.close()


def test_schema_behind_head_is_not_ready_with_the_reason(server_url: str) -> None:
    url = create_database(server_url, f"harness_deploy_unmigrated_{os.getpid()}")
    verdict = asyncio.run(readiness_of(url))
    assert not verdict.ready and verdict.schema is None
    assert verdict.reason == f"schema at None, expected {head_revision()}"
    assert verdict.as_json()["status"] == "not ready"
