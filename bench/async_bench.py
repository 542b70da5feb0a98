"""Recall throughput and p50/p99 at 1, 8 and 32 concurrent callers: the asyncio facade
(``AsyncMemoryStore``, tasks on one event loop) against the sync facade on threads
(``MemoryStore`` + a thread per caller), same database, same 10k memories, in one run.

    .venv/bin/python -m bench.async_bench [--n 10000] [--seconds 8] [--rounds 4]

Writes bench/results/async_bench.json. Query vectors come from the store's query-vector cache
(warmed before timing, for both facades), so the figures measure the store's own work:
round trips, the judge and assembly. Both facades use the same pool settings.

On a shared machine one facade measured after the other sees different neighbours: each
level runs ``rounds`` short rounds per facade, alternating which goes first, and reports the
median round's throughput with latency percentiles over every round. Each round also records
CPU per recall on both sides of the wire: this process (``time.process_time``) and the
PostgreSQL server (its processes' CPU time, embedded server only), which says whether the
client or the server is the bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from bench.common import (
    RESULTS,
    WORK,
    CachedEmbedder,
    fresh_store,
    percentiles,
    server_url,
    settle,
)
from bench.synthetic import generate
from harness.memory import AsyncMemoryStore, MemoryCandidate, MemoryStore, RecallRequest
from harness.settings import Settings

TENANT, USER = "bench", "u"
CONCURRENCY = (1, 8, 32)


def _requests(questions: list[str]) -> list[RecallRequest]:
    return [RecallRequest(tenant=TENANT, user_id=USER, query=q) for q in questions]


def runqueue_wait_s() -> float:
    """Seconds the calling thread has spent runnable but waiting for a CPU (Linux
    ``schedstat``; 0.0 elsewhere)."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


#: What a round returns: latencies, elapsed seconds, and the callers' total runqueue wait.
Timed = tuple[list[float], float, float]


def sync_on_threads(
    store: MemoryStore, reqs: list[RecallRequest], callers: int, seconds: float
) -> Timed:
    """``callers`` threads, each recalling in a loop for ``seconds``."""
    latencies: list[float] = []
    waited = [0.0]
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def caller(k: int) -> None:
        mine: list[float] = []
        wait0 = runqueue_wait_s()
        i = k
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            store.recall(reqs[i % len(reqs)])
            mine.append(time.perf_counter() - t0)
            i += callers
        with lock:
            latencies.extend(mine)
            waited[0] += runqueue_wait_s() - wait0

    started = time.perf_counter()
    with ThreadPoolExecutor(callers) as pool:
        list(pool.map(caller, range(callers)))
    return latencies, time.perf_counter() - started, waited[0]


async def async_tasks(
    store: AsyncMemoryStore, reqs: list[RecallRequest], callers: int, seconds: float
) -> Timed:
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

    wait0 = runqueue_wait_s()  # the loop's thread: every task's Python runs on it
    started = time.perf_counter()
    await asyncio.gather(*(caller(k) for k in range(callers)))
    return latencies, time.perf_counter() - started, runqueue_wait_s() - wait0


def server_cpu_s() -> float | None:
    """CPU seconds the embedded PostgreSQL's processes have used (None: not ours to see)."""
    pid_file = WORK / "home" / "pgdata" / "postmaster.pid"
    if os.environ.get("HARNESS_BENCH_DATABASE_URL") or not pid_file.exists():
        return None
    try:
        postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
        own = postmaster.cpu_times()
        # backends that exited (pool overflow closes connections) count via the reaped times
        total: float = own.user + own.system + own.children_user + own.children_system
        for proc in postmaster.children(recursive=True):
            times = proc.cpu_times()
            total += times.user + times.system
        return total
    except (psutil.Error, ValueError):
        return None


Round = Callable[[], Awaitable[Timed]]


async def measured(round_: Round) -> dict[str, Any]:
    """One round with its CPU per recall: this process's, and the server's."""
    client0, server0 = time.process_time(), server_cpu_s()
    latencies, elapsed, waited = await round_()
    client, server = time.process_time() - client0, server_cpu_s()
    n = max(len(latencies), 1)
    return {
        "latencies": latencies,
        "recalls_per_s": len(latencies) / elapsed,
        "client_cpu_ms_per_recall": 1000 * client / n,
        "client_runqueue_wait_ms_per_recall": 1000 * waited / n,
        "server_cpu_ms_per_recall": (
            1000 * (server - server0) / n if server is not None and server0 is not None else None
        ),
    }


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Median round's throughput and CPU; latency percentiles over every round."""
    server = [r["server_cpu_ms_per_recall"] for r in rounds]
    return {
        "recalls_per_s": round(statistics.median(r["recalls_per_s"] for r in rounds), 1),
        "rounds_recalls_per_s": [round(r["recalls_per_s"], 1) for r in rounds],
        **percentiles([x for r in rounds for x in r["latencies"]]),
        "client_cpu_ms_per_recall": round(
            statistics.median(r["client_cpu_ms_per_recall"] for r in rounds), 2
        ),
        "client_runqueue_wait_ms_per_recall": round(
            statistics.median(r["client_runqueue_wait_ms_per_recall"] for r in rounds), 2
        ),
        "server_cpu_ms_per_recall": (
            round(statistics.median(server), 2) if None not in server else None
        ),
    }


def _seeded(url: str, n: int) -> bool:
    """True when ``url``'s database already holds the ``n`` benchmark memories."""
    engine = sa.create_engine(url, poolclass=sa.NullPool)
    try:
        with engine.connect() as conn:
            return bool(conn.execute(sa.text("SELECT count(*) FROM memories")).scalar() == n)
    except sa.exc.DBAPIError:
        return False
    finally:
        engine.dispose()


def _seed(seeder: MemoryStore, facts: list[str], n: int) -> str:
    try:
        for i in range(0, n, 1000):
            seeder.write_many(
                [
                    MemoryCandidate(
                        tenant=TENANT, scope="user", scope_id=USER, kind="fact", content=f
                    )
                    for f in facts[i : i + 1000]
                ]
            )
        settle(seeder)
        return seeder.url
    finally:
        seeder.close()


def run(n: int, seconds: float, rounds: int = 4, reuse: bool = False) -> dict[str, Any]:
    ds = generate(n, 200, 80, seed=n + 1, tags=True)  # the judge bench's 10k set (cached vectors)
    emb = CachedEmbedder.load()
    emb.warm(ds.facts, f"judge-facts{n}")
    questions = [q.text for q in ds.questions]
    emb.warm_queries(questions, f"async-bench-q{n}")
    name = f"bench_async_{n}"
    url = make_url(server_url()).set(database=name).render_as_string(hide_password=False)
    if not (reuse and _seeded(url, n)):
        url = _seed(fresh_store(emb, name), ds.facts, n)
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
        "rounds": rounds,
        "load_average_at_start": os.getloadavg(),
        "cpus": os.cpu_count(),
        "points": {},
    }

    async def main() -> None:
        async_store = await AsyncMemoryStore.connect(url, **options)
        try:
            # warm both: query-vector caches, pools, plan caches
            for r in reqs:
                sync_store.recall(r)
                await async_store.recall(r)
            per_round = seconds / rounds
            for callers in CONCURRENCY:
                runs: dict[str, list[dict[str, Any]]] = {"sync_threads": [], "async": []}

                def sync_round(c: int = callers) -> Awaitable[Timed]:
                    # the loop is idle while the threads run
                    return asyncio.to_thread(sync_on_threads, sync_store, reqs, c, per_round)

                def async_round(c: int = callers) -> Awaitable[Timed]:
                    return async_tasks(async_store, reqs, c, per_round)

                for k in range(rounds):  # alternate who goes first: neighbours change
                    order = [("sync_threads", sync_round), ("async", async_round)]
                    for name, round_ in order if k % 2 == 0 else order[::-1]:
                        runs[name].append(await measured(round_))
                sync, aio = summary(runs["sync_threads"]), summary(runs["async"])
                out["points"][str(callers)] = {
                    "sync_threads": sync,
                    "async": aio,
                    "throughput_ratio": round(aio["recalls_per_s"] / sync["recalls_per_s"], 2),
                    "p50_ratio": round(aio["p50_ms"] / sync["p50_ms"], 2),
                    "p99_ratio": round(aio["p99_ms"] / sync["p99_ms"], 2),
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
    parser.add_argument("--seconds", type=float, default=8.0, help="per facade and level")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--reuse", action="store_true", help="keep the database of an earlier run (same --n)"
    )
    args = parser.parse_args()
    result = run(args.n, args.seconds, args.rounds, args.reuse)
    result["load_average_at_end"] = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "async_bench.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
