"""RecallSet: the per-run working memo (pure Python, no IO).

Importing this package loads no database or model code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.recallset.core import AddResult, Mark, Note, RecallSet
    from harness.recallset.tools import TOOL_DEFINITIONS, RecallSetTools

__all__ = [
    "TOOL_DEFINITIONS",
    "AddResult",
    "Mark",
    "Note",
    "RecallSet",
    "RecallSetTools",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AddResult": "harness.recallset.core",
        "Mark": "harness.recallset.core",
        "Note": "harness.recallset.core",
        "RecallSet": "harness.recallset.core",
        "RecallSetTools": "harness.recallset.tools",
        "TOOL_DEFINITIONS": "harness.recallset.tools",
    },
)
