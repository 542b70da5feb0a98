"""The 1k user's recall with queries through the model against its int8 copy, one process.

    python -m bench.int8_scale --rounds 2 --out bench/results/int8-scale-1k.json

Needs ``python -m bench.scale seed --case 1k`` first (the ``scale_1k`` database). Each round
runs the questions with the model, then twice with the int8 copy, then with the model again
(ABBA), each store keeping no query vectors (``bench.scale.connect_uncached``), so every
recall pays for its query embedding. Prints and writes p50/p99 and hit@k/MRR of each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import rank_metrics
from bench.scale import WORK, _dataset, connect_uncached, scale_request
from harness.memory import RecallRequest
from harness.memory.embedding.embedder import choose_embedder
from harness.settings import Settings

__all__ = ["main"]


def run(rounds: int, questions: int) -> dict[str, Any]:
    settings = Settings.from_env()
    model = settings.embed_model
    embedders = {
        "model": choose_embedder(model, settings.embed_model_path).embedder,
        "int8": choose_embedder(
            model, settings.embed_model_path, int8_cache=settings.model_cache
        ).embedder,
    }
    if any(e is None for e in embedders.values()):
        raise SystemExit("needs HARNESS_EMBED_MODEL_PATH (the model folder)")
    stores = {key: connect_uncached("scale_1k", emb) for key, emb in embedders.items()}
    ds = _dataset("1k", questions)
    ids = json.loads((WORK / "scale_1k_ids.json").read_text())

    def request(text: str) -> RecallRequest:
        return scale_request("1k", text)  # type: ignore[no-any-return]

    try:
        for store in stores.values():  # warm the pools, the plans and the models
            for q in ds.questions[:10]:
                store.recall(request(q.text))
        times: dict[str, list[float]] = {key: [] for key in stores}
        found: dict[str, list[Any]] = {key: [] for key in stores}
        for n, key in enumerate(["model", "int8", "int8", "model"] * rounds):
            store = stores[key]
            for q in ds.questions:
                started = time.perf_counter()
                result = store.recall(request(q.text))
                times[key].append(time.perf_counter() - started)
                if n < 4:
                    facts = [str(i.memory.id) for i in result.items if i.memory.kind == "fact"]
                    found[key].append((ids[q.answer], facts))
    finally:
        for store in stores.values():
            store.close()
    return {
        key: {
            "p50_ms": round(statistics.median(t) * 1000, 2),
            "p99_ms": round(sorted(t)[max(0, int(0.99 * len(t)) - 1)] * 1000, 2),
            "recalls": len(t),
            "quality": rank_metrics(found[key]),
        }
        for key, t in times.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.int8_scale", description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--out", type=Path, default=Path("bench/results/int8-scale-1k.json"))
    args = parser.parse_args(argv)
    out = {
        "command": "python -m bench.int8_scale "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        **run(args.rounds, args.questions),
    }
    print(json.dumps(out, indent=1))
    args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
