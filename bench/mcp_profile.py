"""Where the time of one ``recall_memories`` call goes, layer by layer and by profile.

Run: ``python -m bench.mcp_profile [--calls 150] [--memories 5000]``; writes
``bench/results/mcp_profile.json``. Sequential calls (one at a time, so each layer's cost is
not mixed with queueing), each layer on fresh query texts:

- ``embed``: the model embeds one query;
- ``store_recall``: ``MemoryStore.recall`` (embedding, SQL, assembly);
- ``store_recall_no_embed``: the same with the query vector already known (database and
  assembly only);
- ``async_store_recall``: ``AsyncMemoryStore.recall`` on an event loop (what the server
  calls; embedding in a worker thread);
- ``mcp_in_process``: the SDK client calling the tool on the in-process server (adds JSON-RPC
  framing, argument validation, result conversion);
- ``mcp_http``: the SDK client over streamable HTTP to ``harness-memory mcp --http``
  (adds HTTP, SSE, bearer-token check, and the client's own work).

Then cProfile over in-process MCP calls on the event-loop thread (the server runs there
whole, but for embedding in a worker thread), with own time grouped by library.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.common import RESULTS, CachedEmbedder, fresh_store
from bench.soak import DETAILS, TOPICS, free_port, seed, start_server, stop_server
from harness.mcp_server import TokenFile, build_server
from harness.memory import AsyncMemoryStore, Caller
from harness.memory.domain.types import RecallRequest

__all__ = ["main"]

GROUPS = [
    (
        "embedding (fastembed, onnxruntime, tokenizers, numpy)",
        ("fastembed", "onnxruntime", "tokenizers", "numpy"),
    ),
    ("database (sqlalchemy, psycopg, pgvector)", ("sqlalchemy", "psycopg", "pgvector")),
    ("MCP framing and validation (mcp, pydantic, mcp_types)", ("/mcp/", "mcp_types", "pydantic")),
    ("JSON", ("/json/",)),
    (
        "threads and event loop (anyio, asyncio, threading)",
        ("anyio", "asyncio", "threading", "concurrent", "queue.py"),
    ),
    ("harness (ranking, assembly, rendering)", ("/harness/",)),
]


def queries(n: int, seed_value: int) -> list[str]:
    rng = random.Random(seed_value)
    return [
        f"{rng.choice(TOPICS)} {rng.choice(DETAILS)} variant {rng.randrange(89)} q{seed_value}-{i}"
        for i in range(n)
    ]


def timed_ms(fn: Callable[[str], Any], texts: list[str]) -> dict[str, float]:
    samples = []
    for text in texts:
        start = time.perf_counter()
        fn(text)
        samples.append((time.perf_counter() - start) * 1000)
    return {"median_ms": round(statistics.median(samples), 2), "n": len(samples)}


def grouped(stats: pstats.Stats) -> dict[str, float]:
    totals: dict[str, float] = {}
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _, _), (_, _, tottime, _, _) in raw.items():
        group = next((label for label, keys in GROUPS if any(k in filename for k in keys)), "other")
        totals[group] = totals.get(group, 0.0) + tottime
    return {k: round(v, 4) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_profile", description=__doc__)
    parser.add_argument("--calls", type=int, default=150)
    parser.add_argument("--memories", type=int, default=5000)
    args = parser.parse_args(argv)
    embedder = CachedEmbedder.load()
    store = fresh_store(embedder, "harness_profile")
    users = [Caller(f"soak-t{t}", f"user{u}") for t in range(3) for u in range(4)]
    seed(store, embedder, args.memories, users)
    who = users[1]

    def recall(text: str) -> Any:
        return store.recall(
            RecallRequest(tenant=who.tenant, user_id=who.user_id, query=text, budget_chars=3950)
        )

    n = args.calls
    for text in queries(5, 99):
        recall(text)  # warm the pool and the model
    layers: dict[str, Any] = {}
    layers["embed"] = timed_ms(lambda t: embedder.inner.embed([t]), queries(n, 1))
    layers["store_recall"] = timed_ms(recall, queries(n, 2))
    warmed = queries(n, 3)
    embedder.warm(warmed, "profile-warm")
    layers["store_recall_no_embed"] = timed_ms(recall, warmed)

    async def through_async_store(texts: list[str], tail: list[str]) -> tuple[list[float], ...]:
        astore = await AsyncMemoryStore.connect(
            store.url, embedder=embedder, migrate=False, check_model=False
        )
        try:
            request = RecallRequest(tenant=who.tenant, user_id=who.user_id, query="warm")
            await astore.recall(request)
            direct = []
            for text in texts:
                start = time.perf_counter()
                await astore.recall(request.model_copy(update={"query": text}))
                direct.append((time.perf_counter() - start) * 1000)
            via_mcp = []
            async with Client(build_server(astore, identity=who)) as client:
                for text in tail:
                    start = time.perf_counter()
                    await client.call_tool("recall_memories", {"query": text})
                    via_mcp.append((time.perf_counter() - start) * 1000)
            return direct, via_mcp
        finally:
            await astore.close()

    direct, samples = asyncio.run(through_async_store(queries(n, 7), queries(n, 4)))
    layers["async_store_recall"] = {"median_ms": round(statistics.median(direct), 2), "n": n}
    layers["mcp_in_process"] = {"median_ms": round(statistics.median(samples), 2), "n": n}

    token_file = TokenFile(Path(tempfile.mkdtemp(prefix="profile-tokens-")) / "tokens.json")
    token = token_file.add(who)
    port = free_port()
    child = start_server(
        store.url, token_file.path, port, Path(tempfile.mkdtemp(prefix="profile-home-")), None
    )
    try:

        async def over_http(texts: list[str]) -> list[float]:
            out = []
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as h,
                Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=h)) as c,
            ):
                for text in queries(3, 98):
                    await c.call_tool("recall_memories", {"query": text})
                for text in texts:
                    start = time.perf_counter()
                    await c.call_tool("recall_memories", {"query": text})
                    out.append((time.perf_counter() - start) * 1000)
            return out

        samples = asyncio.run(over_http(queries(n, 5)))
    finally:
        stop_server(child)
    layers["mcp_http"] = {"median_ms": round(statistics.median(samples), 2), "n": n}

    loop_profile = cProfile.Profile()

    async def profiled_calls(texts: list[str]) -> None:
        astore = await AsyncMemoryStore.connect(
            store.url, embedder=embedder, migrate=False, check_model=False
        )
        try:
            async with Client(build_server(astore, identity=who)) as client:
                await client.call_tool("recall_memories", {"query": "warm"})
                loop_profile.enable()
                for text in texts:
                    await client.call_tool("recall_memories", {"query": text})
                loop_profile.disable()
        finally:
            await astore.close()

    asyncio.run(profiled_calls(queries(n, 6)))
    loop_stats = pstats.Stats(loop_profile)
    out = {
        "command": f"python -m bench.mcp_profile --calls {args.calls} --memories {args.memories}",
        "layers_median_ms": layers,
        "derived_ms": {
            "embedding": layers["embed"]["median_ms"],
            "database_and_assembly": layers["store_recall_no_embed"]["median_ms"],
            "mcp_in_process_overhead": round(
                layers["mcp_in_process"]["median_ms"] - layers["async_store_recall"]["median_ms"],
                2,
            ),
            "http_overhead": round(
                layers["mcp_http"]["median_ms"] - layers["mcp_in_process"]["median_ms"], 2
            ),
        },
        "profile_calls": n,
        "profile_own_seconds_event_loop_thread": grouped(loop_stats),
    }
    store.close()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "mcp_profile.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    loop_stats.sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
