"""Recall quality on generated histories: ours (hybrid) against vector-only and full-text-only,
and filtered correctness with many other users' memories in the same tenant."""

from __future__ import annotations

from typing import Any

from bench.common import CachedEmbedder, fresh_store, rank_metrics, reconnect, settle
from bench.synthetic import Dataset, generate
from harness.memory import MemoryCandidate, MemoryStore, RankingConfig, RecallConfig, RecallRequest
from harness.memory.domain.types import Kind

TENANT, USER = "quality", "u"
MODES = ("hybrid", "vector", "lexical")


def load_user(store: MemoryStore, ds: Dataset, user: str = USER) -> list[Any]:
    ids: list[Any] = []
    for i in range(0, len(ds.facts), 2000):
        ids += [
            m.id
            for m in store.write_many(
                [
                    MemoryCandidate(
                        tenant=TENANT, scope="user", scope_id=user, kind="fact", content=f
                    )
                    for f in ds.facts[i : i + 2000]
                ]
            )
        ]
    return ids


def load_others(store: MemoryStore, facts: list[str], users: int = 50) -> None:
    batch: list[MemoryCandidate] = []
    for n, fact in enumerate(facts):
        batch.append(
            MemoryCandidate(
                tenant=TENANT,
                scope="user",
                scope_id=f"other-{n % users}",
                kind="fact",
                content=fact,
            )
        )
        if len(batch) == 2000:
            store.write_many(batch)
            batch = []
    if batch:
        store.write_many(batch)
    settle(store)


def evaluate(store: MemoryStore, ds: Dataset, ids: list[Any]) -> dict[str, float]:
    """hit@3, hit@8, MRR@8 and false abstains on positives; abstain rate on negatives."""
    results = []
    false_abstain = 0
    for q in ds.questions:
        r = store.recall(
            RecallRequest(
                tenant=TENANT, user_id=USER, query=q.text, budget_chars=20_000, max_items=20
            )
        )
        got = [
            i.memory.id
            for i in sorted(r.items, key=lambda i: -i.relevance)
            if i.memory.kind is Kind.FACT
        ]
        results.append((ids[q.answer], got))  # type: ignore[index]
        false_abstain += not got
    abstain = 0
    for q in ds.negatives:
        r = store.recall(RecallRequest(tenant=TENANT, user_id=USER, query=q.text))
        abstain += not any(i.memory.kind is Kind.FACT for i in r.items)
    n = len(ds.questions)
    return {
        **rank_metrics(results),
        "false_abstain": round(false_abstain / n, 3),
        "negative_abstain": round(abstain / max(len(ds.negatives), 1), 3),
    }


def run(
    sizes: list[int], others: list[int], n_questions: int = 100, n_negatives: int = 40
) -> dict[str, Any]:
    emb = CachedEmbedder.load()
    result: dict[str, Any] = {"sizes": {}, "filtered": {}}
    for n in sizes:
        ds = generate(n, n_questions, n_negatives, seed=n)
        emb.warm(ds.facts, f"facts{n}")
        store = fresh_store(emb, f"bench_quality_{n}")
        try:
            ids = load_user(store, ds)
            settle(store)
            entry = {}
            for mode in MODES:
                ranking = RankingConfig(mode=mode)  # type: ignore[arg-type]
                with reconnect(store, RecallConfig(ranking=ranking)) as by_mode:
                    entry[mode] = evaluate(by_mode, ds, ids)
            result["sizes"][str(n)] = entry
            print(f"quality n={n}: {entry}", flush=True)
        finally:
            store.close()
    if others:
        n = max(sizes)
        ds = generate(n, n_questions, n_negatives, seed=n)
        pool = generate(max(others), 1, 1, seed=100_000).facts
        emb.warm(pool, f"facts{max(others)}")
        store = fresh_store(emb, "bench_quality_filtered")
        try:
            ids = load_user(store, ds)
            loaded = 0
            for extra in sorted(others):
                load_others(store, pool[loaded:extra])
                loaded = extra
                entry = {}
                for strategy in ("auto", "hnsw"):
                    with reconnect(store, RecallConfig(strategy=strategy)) as by_strategy:
                        entry[strategy] = evaluate(by_strategy, ds, ids)
                result["filtered"][str(extra)] = entry
                print(f"filtered user={n} others={extra}: {entry}", flush=True)
        finally:
            store.close()
    return result
