"""What the relevance judge costs a recall: the same recalls, in one process, with the fitted
judge and with a judge of no weights (which fuses, orders and cuts exactly the same way, but
computes nothing), alternating so machine noise falls on both alike.

    python -m bench.judge_latency            # 1,000 facts of one user, 200 recalls each way
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import replace
from typing import Any

from bench.common import RESULTS, CachedEmbedder, fresh_store, percentiles, reconnect, settle
from bench.synthetic import generate
from harness.memory import MemoryCandidate, RankingConfig, RecallConfig, RecallRequest
from harness.memory.domain.relevance import JudgeModel, JudgeParams

TENANT, USER = "judge-latency", "u"


def run(n_facts: int = 1000, n_queries: int = 100, rounds: int = 2) -> dict[str, Any]:
    emb = CachedEmbedder.load()
    ds = generate(n_facts, n_queries, 1, seed=77, tags=True)
    emb.warm(ds.facts, f"judge-latency-{n_facts}")
    emb.warm_queries([q.text for q in ds.questions], f"judge-latency-q{n_facts}")
    store = fresh_store(emb, "bench_judge_latency")
    try:
        store.write_many(
            [
                MemoryCandidate(tenant=TENANT, scope="user", scope_id=USER, kind="fact", content=f)
                for f in ds.facts
            ]
        )
        settle(store)
        # the store's default ranking (the fitted judge), and the same without its weights:
        # one store each on this database, recalls alternating between them
        fitted = RankingConfig(top_n=store.settings.recall_top_n)
        null = JudgeModel(JudgeParams(0.0, {}, 0.0), JudgeParams(0.0, {}, 0.0))
        stores = {
            "judge": reconnect(store, RecallConfig(ranking=fitted)),
            "no_judge": reconnect(store, RecallConfig(ranking=replace(fitted, judge=null))),
        }
        timings: dict[str, list[float]] = {"judge": [], "no_judge": []}
        try:
            for _ in range(rounds):
                for q in ds.questions:
                    req = RecallRequest(tenant=TENANT, user_id=USER, query=q.text)
                    for name, by_judge in stores.items():
                        start = time.perf_counter()
                        by_judge.recall(req)
                        timings[name].append(time.perf_counter() - start)
        finally:
            for by_judge in stores.values():
                by_judge.close()
        out = {name: percentiles(ts) for name, ts in timings.items()}
        out["median_extra_ms"] = round(
            statistics.median(
                a - b for a, b in zip(timings["judge"], timings["no_judge"], strict=True)
            )
            * 1000,
            3,
        )
        out["memories"] = n_facts
        return out
    finally:
        store.close()


if __name__ == "__main__":
    result = run()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "judge_latency.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
