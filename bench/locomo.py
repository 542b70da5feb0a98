"""LoCoMo evidence retrieval (turn level, categories 1-4) for hybrid, vector-only, full-text-only.

Reads ../shared/data/locomo10.json (CC BY-NC 4.0, evaluation only; never copied here) or
the path in HARNESS_LOCOMO_PATH. One memory per turn: "[session date] Speaker: text" (plus
the shared image's caption when the turn has one); with ``neighbours`` the previous turn is
kept as the memory's context, so a question worded like the question that prompted a turn
still finds the answering turn.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bench.common import CachedEmbedder, fresh_store, reconnect
from harness.memory import MemoryCandidate, MemoryStore, RankingConfig, RecallConfig, RecallRequest

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
TENANT = "locomo"
KS = (5, 10, 20)


def load(path: Path | None = None) -> list[dict[str, Any]]:
    source = path or Path(os.environ.get("HARNESS_LOCOMO_PATH", DEFAULT_PATH))
    data: list[dict[str, Any]] = json.loads(source.read_text(encoding="utf-8"))
    return data


def turns_of(sample: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(dia_id, memory text, previous memory text) in conversation order."""
    conv = sample["conversation"]
    out: list[tuple[str, str, str]] = []
    previous = ""
    n = 1
    while f"session_{n}" in conv:
        date = conv.get(f"session_{n}_date_time", "")
        for turn in conv[f"session_{n}"]:
            text = f"[{date}] {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" (shared an image: {turn['blip_caption']})"
            out.append((turn["dia_id"], text, previous))
            previous = text
        n += 1
    return out


def run(
    neighbours: bool = True,
    limit_conversations: int | None = None,
    modes: tuple[str, ...] = ("hybrid", "vector", "lexical"),
) -> dict[str, Any]:
    data = load()[:limit_conversations]
    emb = CachedEmbedder.load()
    all_turns = {s["sample_id"]: turns_of(s) for s in data}
    texts = [t for turns in all_turns.values() for _, t, _ in turns]
    emb.warm(texts, "locomo-turns")
    questions = [
        q for s in data for q in s["qa"] if q["category"] in (1, 2, 3, 4) and q["evidence"]
    ]
    emb.warm_queries([q["question"] for q in questions], "locomo-questions")
    store = fresh_store(emb, "bench_locomo")
    try:
        dia_of: dict[Any, tuple[str, str]] = {}
        for sample_id, turns in all_turns.items():
            written = store.write_many(
                [
                    MemoryCandidate(
                        tenant=TENANT,
                        scope="user",
                        scope_id=sample_id,
                        kind="fact",
                        content=text,
                        context=(prev or None) if neighbours else None,
                    )
                    for _, text, prev in turns
                ]
            )
            for m, (dia, _, _) in zip(written, turns, strict=True):
                dia_of[m.id] = (sample_id, dia)
        result: dict[str, Any] = {"questions": 0, "neighbours": neighbours}
        for mode in modes:
            ranking = RankingConfig(
                top_n=max(KS),
                mode=mode,  # type: ignore[arg-type]
                use_floor=False,
                depth=100,
            )
            with reconnect(store, RecallConfig(ranking=ranking)) as by_mode:
                hits, n = evaluate(by_mode, data, dia_of)
            result[mode] = {k: round(v / n, 3) for k, v in hits.items()}
            result["questions"] = n
            print(f"locomo {mode}: {result[mode]}", flush=True)
        return result
    finally:
        store.close()


def evaluate(
    store: MemoryStore, data: list[dict[str, Any]], dia_of: dict[Any, tuple[str, str]]
) -> tuple[dict[str, int], int]:
    """Evidence hits over every question of categories 1-4, and how many questions."""
    hits = {f"any@{k}": 0 for k in KS} | {"all@10": 0}
    n = 0
    for sample in data:
        for q in sample["qa"]:
            if q["category"] not in (1, 2, 3, 4) or not q["evidence"]:
                continue
            n += 1
            r = store.recall(
                RecallRequest(
                    tenant=TENANT,
                    user_id=sample["sample_id"],
                    query=q["question"],
                    budget_chars=1_000_000,
                    max_items=max(KS),
                    max_item_chars=100_000,
                )
            )
            ranked = [dia_of[i.memory.id][1] for i in sorted(r.items, key=lambda i: -i.relevance)]
            evidence = set(q["evidence"])
            for k in KS:
                hits[f"any@{k}"] += bool(evidence & set(ranked[:k]))
            hits["all@10"] += evidence <= set(ranked[:10])
    return hits, n


if __name__ == "__main__":
    import sys

    print(json.dumps(run(neighbours="--no-neighbours" not in sys.argv), indent=2))
