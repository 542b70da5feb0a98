"""The one place the package version is written (pyproject.toml reads it from here)."""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "__version__"]

__version__ = "0.1.0"

#: The distribution's name on PyPI and in ``pip install`` lines (``harness-memory`` on PyPI is
#: an unrelated project); the import package stays ``harness`` and the command
#: ``harness-memory``.
DISTRIBUTION = "harness-memory-pg"
