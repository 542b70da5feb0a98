"""Maps product objects and events (workflows, sessions, admins) onto harness-memory."""

from __future__ import annotations

from product_adapter.adapter import Backoff, ProductAdapter
from product_adapter.spool import CleanupSpool

__all__ = ["Backoff", "CleanupSpool", "ProductAdapter"]
