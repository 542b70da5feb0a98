"""Recall throughput and p50/p99 at 1, 8 and 32 concurrent callers: the asyncio facade
(``AsyncMemoryStore``, tasks on one event loop) against the sync facade on threads
(``MemoryStore`` + a thread per caller), same database, same 10k memories, in one run.

    .venv/bin/python -m bench.async_bench [--n 10000] [--seconds 8]

Writes bench/results/async_bench.json. Query vectors come from the store's query-vector cache
(warmed before timing, for both facades), so the figures measure the store's own work:
round trips, the judge and assembly. Both facades use the same pool settings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.common import RESULTS, CachedEmbedder, fresh_store, percentiles, settle
from bench.synthetic import generate
from harness.memory import AsyncMemoryStore, MemoryCandidate, MemoryStore, RecallRequest
from harness.settings import Settings

TENANT, USER = "bench", "u"
CONCURRENCY = (1, 8, 32)


def _requests(questions: list[str]) -> list[RecallRequest]:
    return [RecallRequest(tenant=TENANT, user_id=USER, query=q) for q in questions]


def sync_on_threads(
    store: MemoryStore, reqs: list[RecallRequest], callers: int, seconds: float
) -> dict[str, Any]:
    """``callers`` threads, each recalling in a loop for ``seconds``."""
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def caller(k: int) -> None:
        mine: list[float] = []
        i = k
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            store.recall(reqs[i % len(reqs)])
            mine.append(time.perf_counter() - t0)
            i += callers
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    with ThreadPoolExecutor(callers) as pool:
        list(pool.map(caller, range(callers)))
    elapsed = time.perf_counter() - started
    return {"recalls_per_s": round(len(latencies) / elapsed, 1), **percentiles(latencies)}


async def async_tasks(
    store: AsyncMemoryStore, reqs: list[RecallRequest], callers: int, seconds: float
) -> dict[str, Any]:
    """``callers`` tasks on one event loop, each recalling in a loop for ``seconds``."""
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def caller(k: int) -> None:
        i = k
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            await store.recall(reqs[i % len(reqs)])
            latencies.append(time.perf_counter() - t0)
            i += callers

    started = time.perf_counter()
    await asyncio.gather(*(caller(k) for k in range(callers)))
    elapsed = time.perf_counter() - started
    return {"recalls_per_s": round(len(latencies) / elapsed, 1), **percentiles(latencies)}


def run(n: int, seconds: float) -> dict[str, Any]:
    ds = generate(n, 200, 80, seed=n + 1, tags=True)  # the judge bench's 10k set (cached vectors)
    emb = CachedEmbedder.load()
    emb.warm(ds.facts, f"judge-facts{n}")
    questions = [q.text for q in ds.questions]
    emb.warm(questions, f"async-bench-q{n}")
    seeder = fresh_store(emb, f"bench_async_{n}")
    url = seeder.url
    try:
        for i in range(0, n, 1000):
            seeder.write_many(
                [
                    MemoryCandidate(
                        tenant=TENANT, scope="user", scope_id=USER, kind="fact", content=f
                    )
                    for f in ds.facts[i : i + 1000]
                ]
            )
        settle(seeder)
    finally:
        seeder.close()
    # Same pool for both: up to 32 connections (16 + 16 overflow).
    settings = Settings.from_env(pool_size=16, statement_timeout_ms=600_000)
    options: dict[str, Any] = {
        "embedder": emb,
        "settings": settings,
        "migrate": False,
        "check_model": False,
    }
    reqs = _requests(questions)
    sync_store = MemoryStore.connect(url, **options)
    out: dict[str, Any] = {
        "memories": n,
        "queries": len(reqs),
        "seconds_per_point": seconds,
        "points": {},
    }

    async def main() -> None:
        async_store = await AsyncMemoryStore.connect(url, **options)
        try:
            # warm both: query-vector caches, pools, plan caches
            for r in reqs:
                sync_store.recall(r)
                await async_store.recall(r)
            for callers in CONCURRENCY:
                # sync first then async at each level; the loop is idle while threads run
                sync = await asyncio.to_thread(sync_on_threads, sync_store, reqs, callers, seconds)
                aio = await async_tasks(async_store, reqs, callers, seconds)
                out["points"][str(callers)] = {
                    "sync_threads": sync,
                    "async": aio,
                    "throughput_ratio": round(aio["recalls_per_s"] / sync["recalls_per_s"], 2),
                }
                print(callers, json.dumps(out["points"][str(callers)]), flush=True)
        finally:
            await async_store.close()

    try:
        asyncio.run(main())
    finally:
        sync_store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    result = run(args.n, args.seconds)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "async_bench.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
