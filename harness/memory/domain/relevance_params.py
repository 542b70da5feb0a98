"""Fitted relevance-judge parameters. Written by ``python -m bench.judge_fit``; do not edit."""

from __future__ import annotations

from typing import Any

# fmt: off
PARAMS: dict[str, Any] = {
    "hybrid": {"intercept": -5.4801, "weights": {"sim": 0.966108, "content_sim": 1.09863, "context_sim": 0, "margin": 0.160508, "gap": 0, "idf_coverage": 0, "idf_gap": 0.196222, "max_idf": 0.776712, "coverage": 0, "vector_rr": 0.488226, "lexical_rr": 0.909939, "sim>0.2": 0.895468, "sim>0.3": 0.683041, "sim>0.4": 0.371449, "sim>0.5": 0.27682, "sim>0.6": 0.259995, "sim>0.7": 0.253512, "content_sim>0.2": 0.861371, "content_sim>0.3": 0.643457, "content_sim>0.4": 0.488046, "content_sim>0.5": 0.459335, "content_sim>0.6": 0.372054, "content_sim>0.7": 0.274051, "context_sim>0.2": 0, "context_sim>0.3": 0, "context_sim>0.4": 0, "context_sim>0.5": 0, "context_sim>0.6": 0, "context_sim>0.7": 0, "coverage>0.25": 0.360181, "coverage>0.5": 0, "coverage>0.75": 0}, "threshold": 0.17},
    "lexical": {"intercept": -3.75479, "weights": {"idf_coverage": 0, "max_idf": 0, "coverage": 0, "lexical_rr": 1.57795, "margin": 0.227358, "coverage>0.25": 1.80429, "coverage>0.5": 0, "coverage>0.75": 0}, "threshold": 0.01},
}
# fmt: on
