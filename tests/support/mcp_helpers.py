"""Shared pieces of the MCP server tests: tool-result text, a seeded tenant, a free port."""

from __future__ import annotations

import socket
from typing import Any

from harness.memory import MemoryCandidate, MemoryStore

#: The ingest key of the ``http_server`` fixture (tests/system/conftest.py).
INGEST_KEY = "ingest-key-0123456789abcdef"


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def seed(store: MemoryStore, tenant: str) -> None:
    store.write_many(
        [
            MemoryCandidate(
                tenant=tenant,
                scope="user",
                scope_id="alice",
                kind="fact",
                content="Alice's staging cluster is called kestrel",
            ),
            MemoryCandidate(
                tenant=tenant,
                scope="user",
                scope_id="bob",
                kind="fact",
                content="Bob's staging cluster is called osprey",
            ),
            MemoryCandidate(
                tenant=tenant,
                scope="user",
                scope_id="alice",
                kind="preference",
                content="Alice wants answers in British English",
            ),
        ]
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
