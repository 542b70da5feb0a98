"""What the cyclic garbage collector's full passes cost recall in a long-running process.

    python -m bench.gc_pauses --recalls 1200 --out bench/results/gc-pauses-1k.json

Needs ``python -m bench.scale seed --cases 1k`` first (the ``scale_1k`` database, copied here
and migrated). One process, the 1k user's questions in a loop with the query vectors
precomputed (so the model's time does not hide the collector's), the store keeping no query
vectors (each recall asks the embedder, which answers from its memo). Phase one runs as any host does; phase two after ``gc.freeze()``
(what ``harness-memory mcp`` does once started). Per phase: recall p50/mean/p99/max and every
collection's generation and duration (``gc.callbacks``).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS, CachedEmbedder, percentiles
from bench.scale import _admin, _dataset, _migrate, connect_uncached, scale_request

__all__ = ["main"]


class _Collections:
    """Durations of the collector's passes by generation, while attached."""

    def __init__(self) -> None:
        self.started = 0.0
        self.passes: list[tuple[int, float]] = []

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
        else:
            self.passes.append((int(info["generation"]), time.perf_counter() - self.started))

    def summary(self, recalls: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for generation in (0, 1, 2):
            times = [d for g, d in self.passes if g == generation]
            out[f"gen{generation}"] = {
                "passes": len(times),
                "ms_per_recall": round(sum(times) / recalls * 1000, 3),
                "max_ms": round(max(times) * 1000, 1) if times else 0.0,
            }
        return out


def run(recalls: int) -> dict[str, Any]:
    """Both phases on a fresh copy of ``scale_1k``."""
    db = "scale_1k_gc"
    _admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{db}" TEMPLATE "scale_1k"')
    _migrate(None, db)
    emb = CachedEmbedder.load()
    ds = _dataset("1k", 60)
    texts = [q.text for q in ds.questions]
    emb.warm_queries(texts, "gc-pauses-1k")
    store = connect_uncached(db, emb)  # every recall asks the embedder (its memo)

    def recall(text: str) -> float:
        started = time.perf_counter()
        store.recall(scale_request("1k", text))
        return time.perf_counter() - started

    out: dict[str, Any] = {"recalls_per_phase": recalls}
    try:
        for text in texts[:10]:
            recall(text)
        for phase in ("as a host runs", "after gc.freeze()"):
            if phase == "after gc.freeze()":
                gc.collect()
                gc.freeze()
            collections = _Collections()
            gc.callbacks.append(collections)
            try:
                times = [recall(texts[i % len(texts)]) for i in range(recalls)]
            finally:
                gc.callbacks.remove(collections)
            out[phase] = {
                "latency": percentiles(times),
                "mean_ms": round(statistics.fmean(times) * 1000, 3),
                "max_ms": round(max(times) * 1000, 1),
                "tracked_objects": len(gc.get_objects()),
                "collections": collections.summary(recalls),
            }
            print(phase, json.dumps(out[phase]), flush=True)
    finally:
        store.close()
        _admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recalls", type=int, default=1200)
    parser.add_argument("--out", default=str(RESULTS / "gc-pauses-1k.json"))
    args = parser.parse_args(argv)
    result = run(args.recalls)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
