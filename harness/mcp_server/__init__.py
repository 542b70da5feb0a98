"""harness-memory over the Model Context Protocol (official ``mcp`` SDK)."""

from __future__ import annotations

from harness.mcp_server.identity import Identity, TokenFile, TokenFileVerifier, hash_token
from harness.mcp_server.server import BUSY, STOPPING, UNAVAILABLE, McpLimits, build_server
from harness.mcp_server.sessions import MemoLimits

__all__ = [
    "BUSY",
    "STOPPING",
    "UNAVAILABLE",
    "Identity",
    "McpLimits",
    "MemoLimits",
    "TokenFile",
    "TokenFileVerifier",
    "build_server",
    "hash_token",
]
