"""RecallSet: the per-run working memo (pure Python, no IO)."""

from __future__ import annotations

from harness.recallset.core import AddResult, Mark, RecallItem, RecallSet
from harness.recallset.tools import TOOL_DEFINITIONS, RecallSetTools

__all__ = ["TOOL_DEFINITIONS", "AddResult", "Mark", "RecallItem", "RecallSet", "RecallSetTools"]
