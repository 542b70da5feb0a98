"""RecallSet micro-benchmark: 100k adds (30 % duplicates), 10k marks, 10k reads.

Run: ``python -m bench.recallset_bench`` (writes bench/results/recallset.json). Each figure
is the median of several repetitions; the 10k-add run is the in-process baseline that shows
per-operation cost does not grow with size (O(1) on average).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from harness.recallset import Mark, RecallSet

RESULTS = Path(__file__).parent / "results"


def workload(n_adds: int, cap: int, seed: int = 1) -> dict[str, float]:
    rnd = random.Random(seed)
    unique = int(n_adds * 0.7)
    texts = [f"observation {i}: tool output {rnd.random():.6f}" for i in range(unique)]
    stream = texts + [rnd.choice(texts).upper() for _ in range(n_adds - unique)]
    rnd.shuffle(stream)
    marks = list(Mark)
    rs = RecallSet(max_items=cap)
    t0 = time.perf_counter()
    for text in stream:
        rs.add(text, mark=rnd.choice(marks), priority=rnd.randint(0, 3))
    t_add = time.perf_counter() - t0
    ids = [it.id for it in rs.items()]
    picks = [rnd.choice(ids) for _ in range(10_000)]
    t0 = time.perf_counter()
    for item_id in picks:
        rs.mark(item_id, rnd.choice(marks))
    t_mark = time.perf_counter() - t0
    t0 = time.perf_counter()
    for item_id in picks:
        rs.read(item_id)
    t_read = time.perf_counter() - t0
    t0 = time.perf_counter()
    rs.overview()
    t_overview = time.perf_counter() - t0
    return {
        "add_us": t_add / n_adds * 1e6,
        "mark_us": t_mark / 10_000 * 1e6,
        "read_us": t_read / 10_000 * 1e6,
        "overview_ms": t_overview * 1e3,
        "live_items": len(rs),
    }


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "recallset.json")
    args = parser.parse_args(argv)
    cases = {
        "baseline_10k_adds_uncapped": (10_000, 10_000),
        "100k_adds_uncapped": (100_000, 100_000),
        "100k_adds_cap_1000": (100_000, 1_000),
    }
    result: dict[str, Any] = {"repeat": args.repeat}
    for name, (n, cap) in cases.items():
        result[name] = median_of([workload(n, cap, seed=s) for s in range(args.repeat)])
    base = result["baseline_10k_adds_uncapped"]["add_us"]
    result["add_cost_ratio_100k_vs_10k"] = result["100k_adds_uncapped"]["add_us"] / base
    result["add_cost_ratio_capped_vs_10k"] = result["100k_adds_cap_1000"]["add_us"] / base
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
