"""Recall latency at scale (exact scan vs HNSW), write throughput, peak RSS, paste-everything."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from bench.common import (
    CachedEmbedder,
    as_tenant,
    fresh_store,
    peak_rss_mb,
    percentiles,
    rank_metrics,
    reconnect,
    relevance_plan,
    settle,
    timed,
)
from bench.synthetic import Dataset, generate
from harness.memory import MemoryCandidate, MemoryStore, RecallConfig, RecallRequest
from harness.memory.domain.recall import render_item
from harness.memory.store import sql as memory_sql
from harness.memory.store.rows import memory_from_row

TENANT, USER, WORKFLOW = "bench", "u", "wf"
ALWAYS = [
    ("platform", None, "constraint", "Never include customer e-mail addresses."),
    ("platform", None, "constraint", "Quote every figure with its unit."),
    ("user", USER, "preference", "Answers in British English."),
    ("user", USER, "preference", "Prefers tables over long prose."),
    ("workflow", WORKFLOW, "lesson", "Reports start with a three-line TL;DR."),
    ("workflow", WORKFLOW, "lesson", "List every incident id in a table."),
]


def load(store: MemoryStore, emb: CachedEmbedder, ds: Dataset, batch: int = 2000) -> list[Any]:
    store.write_many(
        [
            MemoryCandidate(
                tenant=TENANT, scope=s, scope_id=sid, kind=k, content=c, source={"origin": "admin"}
            )  # type: ignore[arg-type]
            for s, sid, k, c in ALWAYS
        ]
    )
    ids: list[Any] = []
    for i in range(0, len(ds.facts), batch):
        ids += [
            m.id
            for m in store.write_many(
                [
                    MemoryCandidate(
                        tenant=TENANT, scope="user", scope_id=USER, kind="fact", content=f
                    )
                    for f in ds.facts[i : i + batch]
                ]
            )
        ]
    settle(store)
    return ids


def recall_pass(store: MemoryStore, ds: Dataset, ids: list[Any]) -> dict[str, Any]:
    times: list[float] = []
    results = []
    for q in ds.questions:
        req = RecallRequest(
            tenant=TENANT,
            user_id=USER,
            workflow_id=WORKFLOW,
            query=q.text,
            budget_chars=4000,
            max_items=30,
        )
        dt, r = timed(lambda req=req: store.recall(req))
        times.append(dt)
        got = [i.memory.id for i in r.items if i.memory.kind.value == "fact"]
        results.append((ids[q.answer], got))  # type: ignore[index]
    return {**percentiles(times), **rank_metrics(results)}


def paste_everything(store: MemoryStore, ds: Dataset) -> dict[str, int]:
    """Characters the whole readable set would cost, against the budgeted recall block."""
    params = memory_sql.readable_params(TENANT, USER, WORKFLOW, None, store.clock.now())
    readable = memory_sql.readable_filter(has_workflow=True, has_session=False)
    with as_tenant(store, TENANT) as conn:
        rows = conn.execute(sa.select(*memory_sql.MEMORY_COLUMNS).where(readable), params)
        total = sum(len(render_item(memory_from_row(r))) + 1 for r in rows.mappings())
    r = store.recall(
        RecallRequest(
            tenant=TENANT,
            user_id=USER,
            workflow_id=WORKFLOW,
            query=ds.questions[0].text,
            budget_chars=2000,
            max_items=20,
        )
    )
    return {
        "readable_set_chars": total,
        "recall_block_chars": len(r.text),
        "ratio": round(total / max(len(r.text), 1), 1),
    }


def explain(store: MemoryStore, ds: Dataset, exact: bool) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the relevance query exactly as recall sends it."""
    lines = relevance_plan(
        store, ds.questions[0].text, tenant=TENANT, user=USER, workflow=WORKFLOW, exact=exact
    )
    return "\n".join(line if len(line) < 220 else line[:200] + " …" for line in lines)


def write_throughput(emb: CachedEmbedder, n: int) -> dict[str, float]:
    ds = generate(n, 1, 1, seed=99)
    out: dict[str, float] = {}
    for label, embedder in (("with_embeddings", emb.inner), ("without_embeddings", None)):
        store = fresh_store(embedder, "bench_write")
        try:
            start = time.perf_counter()
            for i in range(0, n, 500):
                store.write_many(
                    [
                        MemoryCandidate(
                            tenant=TENANT, scope="user", scope_id=USER, kind="fact", content=f
                        )
                        for f in ds.facts[i : i + 500]
                    ]
                )
            out[f"{label}_per_s"] = round(n / (time.perf_counter() - start), 1)
        finally:
            store.close()
    return out


def spread(emb: CachedEmbedder, total: int, users: int, n_questions: int) -> dict[str, Any]:
    """``total`` memories in one tenant spread over ``users`` users; one user's recall."""
    ds = generate(total, n_questions, 1, seed=total)
    emb.warm(ds.facts, f"facts{total}")
    store = fresh_store(emb, "bench_lat_spread")
    try:
        for i in range(0, total, 2000):
            store.write_many(
                [
                    MemoryCandidate(
                        tenant=TENANT,
                        scope="user",
                        scope_id=f"user-{j % users}",
                        kind="fact",
                        content=ds.facts[j],
                    )
                    for j in range(i, min(i + 2000, total))
                ]
            )
        settle(store)
        emb.warm_queries([q.text for q in ds.questions], f"questions-spread{total}")
        times = []
        for q in ds.questions:
            req = RecallRequest(tenant=TENANT, user_id="user-7", query=q.text)
            dt, _ = timed(lambda req=req: store.recall(req))
            times.append(dt)
        emb.memo = {k: v for k, v in emb.memo.items() if k not in {q.text for q in ds.questions}}
        with_embedding = []
        for q in ds.questions:
            req = RecallRequest(tenant=TENANT, user_id="user-7", query=q.text + " ")
            dt, _ = timed(lambda req=req: store.recall(req))
            with_embedding.append(dt)
        return {
            "memories": total,
            "users": users,
            "per_user": total // users,
            "without_query_embedding": percentiles(times),
            "with_query_embedding": percentiles(with_embedding),
        }
    finally:
        store.close()


def run(sizes: list[int], n_questions: int = 100, write_n: int = 5000) -> dict[str, Any]:
    emb = CachedEmbedder.load()
    result: dict[str, Any] = {"sizes": {}}
    for n in sizes:
        ds = generate(n, n_questions, 10, seed=n)
        emb.warm(ds.facts, f"facts{n}")
        store = fresh_store(emb, f"bench_lat_{n}")
        try:
            ids = load(store, emb, ds)
            entry: dict[str, Any] = {}
            for strategy, exact in (("exact", True), ("hnsw", False)):
                # one store per strategy, on this database and embedder (its own query cache)
                with reconnect(store, RecallConfig(strategy=strategy)) as by_strategy:
                    entry[f"{strategy}_with_query_embedding"] = recall_pass(by_strategy, ds, ids)
                    emb.warm_queries([q.text for q in ds.questions], f"questions{n}")
                    entry[f"{strategy}_without_query_embedding"] = recall_pass(by_strategy, ds, ids)
                    entry[f"explain_{strategy}"] = explain(by_strategy, ds, exact)
                # the next strategy's first pass embeds its queries again
                emb.query_memo = {
                    k: v
                    for k, v in emb.query_memo.items()
                    if k not in {q.text for q in ds.questions}
                }
            entry["paste_everything"] = paste_everything(store, ds)
            result["sizes"][str(n)] = entry
        finally:
            store.close()
        print(
            f"latency n={n}: "
            + ", ".join(
                f"{k}={v['p50_ms']}ms/hit8={v['hit@8']}"
                for k, v in entry.items()
                if isinstance(v, dict) and "p50_ms" in v
            ),
            flush=True,
        )
    if max(sizes) >= 100_000:
        result["spread"] = spread(emb, 100_000, 50, n_questions)
        print(f"latency spread: {result['spread']}", flush=True)
    result["write_many"] = write_throughput(emb, write_n)
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return result
