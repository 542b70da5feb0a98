"""Maps product objects and events (workflows, sessions, admins) onto harness-memory."""

from __future__ import annotations

from product_adapter.adapter import ProductAdapter
from product_adapter.spool import CleanupSpool

__all__ = ["CleanupSpool", "ProductAdapter"]
