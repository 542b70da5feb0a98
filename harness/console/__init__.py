"""Admin web console: approval queue, memory browser, recall playground, status.

Build it with :func:`build_console_app` (a Starlette app) or :func:`console_mount` (a Mount
for another Starlette app, e.g. the MCP HTTP server). Importing this package does no IO.
"""

from __future__ import annotations

from harness.console.app import build_console_app, console_mount
from harness.console.backend import ConsoleBackend
from harness.console.tokens import Admin, AdminTokenFile, default_token_path

__all__ = [
    "Admin",
    "AdminTokenFile",
    "ConsoleBackend",
    "build_console_app",
    "console_mount",
    "default_token_path",
]
