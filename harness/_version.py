"""The one place the package version is written (pyproject.toml reads it from here)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
