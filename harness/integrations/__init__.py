"""Optional glue between harness-memory and agent runtimes; import the runtime's module directly."""

from __future__ import annotations

__all__: list[str] = []
