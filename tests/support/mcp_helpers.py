"""Shared pieces of the MCP server tests: tool-result text, a seeded tenant, the served port."""

from __future__ import annotations

import os
import re
from pathlib import Path
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


def served_port(start_line: str) -> int:
    """The port an HTTP server started on ``127.0.0.1:0`` got, from its start line
    (``... listening on HOST:PORT (from ...) ...``). Servers in tests always bind port 0:
    a port picked beforehand and freed can be taken by any connection before the server
    binds it (or between a server's stop and the next bind)."""
    found = re.search(r"listening on (?:\[[^\]]*\]|[^\s:]+):(\d+) ", start_line)
    assert found, f"no port in the start line: {start_line!r}"
    return int(found.group(1))


def lexical_env(tmp: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a server subprocess that finds no model (lexical-only,
    at once): the model variable unset, no hub, an empty fastembed cache. (A model folder
    named but missing is an error, not a way to turn vectors off.)"""
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_EMBED_MODEL_PATH"}
    env.update(HF_HUB_OFFLINE="1", FASTEMBED_CACHE_PATH=str(tmp / "empty-fastembed-cache"))
    env.update(extra)
    return env
