"""Peers on the same embedded PostgreSQL, embedder and data (optional extras,
``pip install -e '.[peers]'``): LangGraph's PostgresStore and mem0 (pgvector backend,
``infer=False`` so no LLM is called). Figures are ratios to ours.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from bench.common import CachedEmbedder, fresh_store, percentiles, rank_metrics, server_url
from bench.quality import TENANT, USER, evaluate, load_others, load_user
from bench.synthetic import Dataset, generate
from harness.settings import Settings


def _plain_url(database: str) -> str:
    url = make_url(server_url()).set(database=database, drivername="postgresql")
    return url.render_as_string(hide_password=False)


def _fresh_db(name: str) -> str:
    admin = sa.create_engine(server_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return _plain_url(name)


def search_metrics(ds: Dataset, search: Callable[[str], list[int]]) -> dict[str, Any]:
    """Time ``search`` (question -> fact indexes, best first) and score it like ours."""
    results = []
    times = []
    for q in ds.questions:
        t0 = time.perf_counter()
        ranked = search(q.text)
        times.append(time.perf_counter() - t0)
        results.append((q.answer, ranked))
    return {**rank_metrics(results), **percentiles(times)}


def langgraph_run(emb: CachedEmbedder, ds: Dataset, others: list[str]) -> dict[str, Any]:
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import PostgresStore

    url = _fresh_db("bench_peer_langgraph")
    with PostgresStore.from_conn_string(
        url, index={"dims": emb.dim, "embed": emb.embed, "fields": ["text"]}
    ) as store:
        store.setup()
        mine = ("memories", USER)
        start = time.perf_counter()
        for i in range(0, len(ds.facts), 500):
            store.batch(
                [
                    PutOp(mine, str(j), {"text": ds.facts[j]})
                    for j in range(i, min(i + 500, len(ds.facts)))
                ]
            )
        write_rate = len(ds.facts) / (time.perf_counter() - start)
        for i in range(0, len(others), 500):
            store.batch(
                [
                    PutOp(("memories", f"other-{j % 50}"), f"o{j}", {"text": others[j]})
                    for j in range(i, min(i + 500, len(others)))
                ]
            )
        scores = search_metrics(
            ds, lambda text: [int(h.key) for h in store.search(mine, query=text, limit=8)]
        )
    return {**scores, "write_per_s": round(write_rate, 1)}


def mem0_run(emb: CachedEmbedder, ds: Dataset, others: list[str]) -> dict[str, Any]:
    """mem0 with its own fastembed embedder pointed at the local model folder. Its config
    requires an LLM section; the key is a placeholder and no LLM is called (infer=False)."""
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    import fastembed
    import mem0.embeddings.fastembed as mem0_fastembed
    from mem0 import Memory

    folder = Settings.from_env().embed_model_path
    # mem0 builds TextEmbedding(model_name=...) itself; give it the offline model folder.
    mem0_fastembed.TextEmbedding = partial(  # type: ignore[misc]
        fastembed.TextEmbedding, specific_model_path=str(folder)
    )
    url = _fresh_db("bench_peer_mem0")
    memory = Memory.from_config(
        {
            "vector_store": {
                "provider": "pgvector",
                "config": {
                    "connection_string": url,
                    "collection_name": "bench",
                    "embedding_model_dims": emb.dim,
                },
            },
            "embedder": {
                "provider": "fastembed",
                "config": {"model": emb.model_name, "embedding_dims": emb.dim},
            },
            "llm": {"provider": "openai", "config": {"api_key": "not-used-infer-false"}},
        }
    )
    index = {text: n for n, text in enumerate(ds.facts)}
    start = time.perf_counter()
    for i in range(0, len(ds.facts), 100):
        memory.add(
            [{"role": "user", "content": f} for f in ds.facts[i : i + 100]],
            user_id=USER,
            infer=False,
        )
    write_rate = len(ds.facts) / (time.perf_counter() - start)
    for j in range(0, len(others), 100):
        memory.add(
            [{"role": "user", "content": f} for f in others[j : j + 100]],
            user_id=f"other-{(j // 100) % 50}",
            infer=False,
        )
    scores = search_metrics(
        ds,
        lambda text: [
            index.get(hit["memory"], -1)
            for hit in memory.search(text, filters={"user_id": USER}, limit=8)["results"]
        ],
    )
    return {**scores, "write_per_s": round(write_rate, 1)}


def ours_run(emb: CachedEmbedder, ds: Dataset, others: list[str]) -> dict[str, Any]:
    store = fresh_store(emb, "bench_peer_ours")
    try:
        start = time.perf_counter()
        ids = load_user(store, ds)
        write_rate = len(ds.facts) / (time.perf_counter() - start)
        if others:
            load_others(store, others)
        quality = evaluate(store, ds, ids)
        from harness.memory import RecallRequest

        times = []
        for q in ds.questions:
            t0 = time.perf_counter()
            store.recall(RecallRequest(tenant=TENANT, user_id=USER, query=q.text))
            times.append(time.perf_counter() - t0)
        return {**quality, "write_per_s": round(write_rate, 1), **percentiles(times)}
    finally:
        store.close()


def run(n_user: int = 1000, n_others: int = 11_500) -> dict[str, Any]:
    """The user's facts are ``n_user / (n_user + n_others)`` of the table (8 % by default)."""
    emb = CachedEmbedder.load()
    ds = generate(n_user, 100, 10, seed=n_user)
    others = generate(100_000, 1, 1, seed=100_000).facts[:n_others]
    emb.warm(ds.facts, f"facts{n_user}")
    emb.warm(others, f"facts{n_others}-others")
    emb.warm_queries([q.text for q in ds.questions], f"questions{n_user}")
    result: dict[str, Any] = {"user_share": round(n_user / (n_user + n_others), 3)}
    for label, others_now in (("alone", []), ("among_others", others)):
        ours = ours_run(emb, ds, others_now)
        entry: dict[str, Any] = {"ours": ours}
        for name, runner in (("langgraph", langgraph_run), ("mem0", mem0_run)):
            peer = runner(emb, ds, others_now)
            entry[name] = peer
            entry[f"ratios_{name}_over_ours"] = {
                "hit@8": round(peer["hit@8"] / max(ours["hit@8"], 1e-9), 3),
                "write_rate": round(peer["write_per_s"] / max(ours["write_per_s"], 1e-9), 3),
                "recall_p50": round(peer["p50_ms"] / max(ours["p50_ms"], 1e-9), 3),
            }
        result[label] = entry
        summary = ", ".join(
            f"{k} hit@8={v['hit@8']} p50={v['p50_ms']}ms"
            for k, v in entry.items()
            if not k.startswith("ratios")
        )
        print(f"peers {label}: {summary}", flush=True)
    return result


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
