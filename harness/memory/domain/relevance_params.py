"""Fitted relevance-judge parameters. Written by ``python -m bench.judge_fit``; do not edit."""

from __future__ import annotations

from typing import Any

# fmt: off
PARAMS: dict[str, Any] = {
    "hybrid": {"intercept": -5.48135, "weights": {"sim": 0.960242, "content_sim": 1.09383, "margin": 0.16163, "gap": 0, "idf_coverage": 0, "idf_gap": 0.1962, "max_idf": 0.776608, "coverage": 0.0082739, "vector_rr": 0.489895, "lexical_rr": 0.910149, "sim>0.2": 0.893142, "sim>0.3": 0.683175, "sim>0.4": 0.37345, "sim>0.5": 0.277375, "sim>0.6": 0.258279, "sim>0.7": 0.250437, "content_sim>0.2": 0.861612, "content_sim>0.3": 0.645306, "content_sim>0.4": 0.488972, "content_sim>0.5": 0.457224, "content_sim>0.6": 0.368661, "content_sim>0.7": 0.270644, "coverage>0.25": 0.359296, "coverage>0.5": 0, "coverage>0.75": 0}, "threshold": 0.18},
    "lexical": {"intercept": -4.38728, "weights": {"idf_coverage": 0, "max_idf": 0, "coverage": 0.415888, "lexical_rr": 0.720131, "margin": 0.445449, "coverage>0.25": 1.95581, "coverage>0.5": 0, "coverage>0.75": 0}, "threshold": 0.2},
}
# fmt: on
