"""Fitted relevance-judge parameters. Written by ``python -m bench.judge_fit``; do not edit."""

from __future__ import annotations

from typing import Any

# fmt: off
PARAMS: dict[str, Any] = {
    "hybrid": {"intercept": -5.69394, "weights": {"sim": 1.63749, "content_sim": 1.39559, "margin": 0.224774, "gap": 0, "idf_coverage": 0, "idf_gap": 0, "max_idf": 0.125415, "coverage": 0, "vector_rr": 0.186555, "lexical_rr": 1.13477, "sim>0.2": 1.15466, "sim>0.3": 0.393761, "sim>0.4": 0, "sim>0.5": 0, "sim>0.6": 0, "sim>0.7": 0.232321, "content_sim>0.2": 0.913415, "content_sim>0.3": 0.41761, "content_sim>0.4": 0.180879, "content_sim>0.5": 0.169453, "content_sim>0.6": 0.212119, "content_sim>0.7": 0.2766, "coverage>0.25": 0.489899, "coverage>0.5": 0, "coverage>0.75": 0.0990867, "is_lesson": 2.05006, "is_decision": 0, "has_context": -0.065193}, "threshold": 0.15},
    "lexical": {"intercept": -3.75479, "weights": {"idf_coverage": 0, "max_idf": 0, "coverage": 0, "lexical_rr": 1.57795, "margin": 0.227358, "coverage>0.25": 1.80429, "coverage>0.5": 0, "coverage>0.75": 0, "is_lesson": 0.242803, "is_decision": 0}, "threshold": 0.01},
}
# fmt: on
