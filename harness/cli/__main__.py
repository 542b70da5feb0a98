"""``python -m harness.cli``: the same command line as ``harness-memory``."""

from __future__ import annotations

from harness.cli.app import app

__all__: list[str] = []

app()
