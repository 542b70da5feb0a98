"""harness-memory over the Model Context Protocol (official ``mcp`` SDK). Names import on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.mcp_server.identity import TokenFile, TokenFileVerifier, hash_token
    from harness.mcp_server.memos import MemoLimits
    from harness.mcp_server.server import BUSY, STOPPING, UNAVAILABLE, McpLimits, build_server

__all__ = [
    "BUSY",
    "STOPPING",
    "UNAVAILABLE",
    "McpLimits",
    "MemoLimits",
    "TokenFile",
    "TokenFileVerifier",
    "build_server",
    "hash_token",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "TokenFile": "harness.mcp_server.identity",
        "TokenFileVerifier": "harness.mcp_server.identity",
        "hash_token": "harness.mcp_server.identity",
        "BUSY": "harness.mcp_server.server",
        "McpLimits": "harness.mcp_server.server",
        "STOPPING": "harness.mcp_server.server",
        "UNAVAILABLE": "harness.mcp_server.server",
        "build_server": "harness.mcp_server.server",
        "MemoLimits": "harness.mcp_server.memos",
    },
)
