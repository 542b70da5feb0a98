"""Alembic environment and versions of harness-memory (shipped in the wheel as
``harness/_migrations``; see ``harness.memory.store.migrate.MIGRATIONS_DIR``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["MIGRATIONS_DIR"]

MIGRATIONS_DIR = Path(__file__).resolve().parent
