"""Admin web console: approval queue, memory browser, recall playground, status.

Build it with :func:`build_console_app` (a Starlette app) or :func:`console_mount` (a Mount
for another Starlette app, e.g. the MCP HTTP server). Importing this package does no IO and
loads nothing until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "build_console_app": "harness.console.app",
        "console_mount": "harness.console.app",
        "ConsoleBackend": "harness.console.backend",
        "Admin": "harness.console.tokens",
        "AdminTokenFile": "harness.console.tokens",
        "default_token_path": "harness.console.tokens",
    },
)
