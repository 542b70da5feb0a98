"""Fitted relevance-judge parameters. Written by ``python -m bench.judge_fit``; do not edit."""

from __future__ import annotations

from typing import Any

# fmt: off
PARAMS: dict[str, Any] = {
    "hybrid": {"intercept": -8.12946, "weights": {"sim": 2.11078, "content_sim": 1.79896, "margin": 0.289741, "gap": 0, "idf_coverage": 0, "idf_gap": 0, "max_idf": 0.161665, "coverage": 0, "vector_rr": 0.240475, "lexical_rr": 1.46275, "sim>0.2": 1.48839, "sim>0.3": 0.507572, "sim>0.4": 0, "sim>0.5": 0, "sim>0.6": 0, "sim>0.7": 0.299469, "content_sim>0.2": 1.17742, "content_sim>0.3": 0.538314, "content_sim>0.4": 0.23316, "content_sim>0.5": 0.218431, "content_sim>0.6": 0.273428, "content_sim>0.7": 0.356547, "coverage>0.25": 0.631497, "coverage>0.5": 0, "coverage>0.75": 0.127726, "is_lesson": 2.6426, "is_decision": 0, "has_context": -0.084036}, "threshold": 0.05},
    "lexical": {"intercept": -3.73089, "weights": {"idf_coverage": 0, "max_idf": 0, "coverage": 0, "lexical_rr": 1.56121, "margin": 0.224945, "coverage>0.25": 1.78514, "coverage>0.5": 0, "coverage>0.75": 0, "is_lesson": 0.240226, "is_decision": 0}, "threshold": 0.01},
}
# fmt: on
