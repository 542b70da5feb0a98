"""The ``harness-memory`` command line (``app``), imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.cli.app import app

__all__ = ["app"]

__getattr__, __dir__ = lazy_exports(__name__, {"app": "harness.cli.app"})
