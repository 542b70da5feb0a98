"""What metrics and traces cost a recall: bench.latency's store and questions, recalled with
the instrumentation switched off (the baseline), on as shipped (metrics; OpenTelemetry's API
without an SDK: no-op spans), and on with an SDK recording every span (a host that traces).

Each question is recalled with the instrumentation off and on back to back, the order
alternating, in the same run on the same store (the machine is shared: the ratio is what
counts); the SDK arm (paired with off again) runs last, because an SDK once installed is the
process's for good. Also: the recording calls of one recall timed by themselves. Query vectors are warmed, so recall is at its fastest and
the overhead at its largest share. Writes ``bench/results/instrumentation.json``.

    python -m bench.instrumentation [--memories 10000] [--rounds 6] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from bench.common import CachedEmbedder, fresh_store, percentiles
from bench.latency import TENANT, USER, WORKFLOW, load
from bench.synthetic import generate
from harness import metrics, tracing
from harness.memory import MemoryStore, RecallRequest
from harness.memory.store import methods

RESULTS = Path(__file__).parent / "results"


@contextlib.contextmanager
def switched_off() -> Iterator[None]:
    """Recall without its instrumentation: the recording calls replaced by no-ops, and the
    span a constant non-recording one (what the code costs without any of it)."""
    from opentelemetry.trace import INVALID_SPAN

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    def no_span(*args: Any, **kwargs: Any) -> Any:
        return INVALID_SPAN

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(methods, "observe_recall", nothing))
        stack.enter_context(mock.patch.object(metrics, "recall_outcome", nothing))
        stack.enter_context(mock.patch.object(tracing, "start", no_span))
        yield


def timed_recall(store: MemoryStore, req: RecallRequest) -> float:
    start = time.perf_counter()
    store.recall(req)
    return time.perf_counter() - start


def paired(
    store: MemoryStore, requests: list[RecallRequest], rounds: int
) -> dict[str, list[float]]:
    """Each request recalled with the instrumentation off and on, back to back (the order
    alternating), so the shared machine's load falls on both arms alike."""
    out: dict[str, list[float]] = {"off": [], "on": []}
    for i in range(rounds):
        for j, req in enumerate(requests):
            for arm in ("off", "on") if (i + j) % 2 == 0 else ("on", "off"):
                if arm == "off":
                    with switched_off():
                        out[arm].append(timed_recall(store, req))
                else:
                    out[arm].append(timed_recall(store, req))
    return out


def recording_cost(n: int = 20_000) -> float:
    """Microseconds the recording calls of one recall take by themselves (no SDK): a span
    started and ended, four stage observations, the judge's verdicts, the outcome."""
    start = time.perf_counter()
    for _ in range(n):
        span = tracing.start("harness.recall", tracing.identity("tenant", "user"))
        for stage in metrics.RECALL_STAGES:
            metrics.recall_stage(stage, 0.001)
        metrics.judge_observed(3, 4, 0.5)
        metrics.recall_outcome("items")
        span.end()
    return (time.perf_counter() - start) / n * 1e6


def run(memories: int, rounds: int, n_questions: int = 100) -> dict[str, Any]:
    emb = CachedEmbedder.load()
    ds = generate(memories, n_questions, 10, seed=memories)
    emb.warm(ds.facts, f"facts{memories}")
    emb.warm_queries([q.text for q in ds.questions], f"questions{memories}")
    store = fresh_store(emb, f"bench_instr_{memories}")
    try:
        load(store, emb, ds)
        requests = [
            RecallRequest(
                tenant=TENANT, user_id=USER, workflow_id=WORKFLOW, query=q.text, max_items=30
            )
            for q in ds.questions
        ]
        for req in requests:  # warm the pool, the plans' caches and the query-vector cache
            store.recall(req)
        samples: dict[str, list[float]] = {**paired(store, requests, rounds), "on_with_sdk": []}
        cost_us = recording_cost()
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        with_sdk = paired(store, requests, max(rounds // 2, 1))
        samples["on_with_sdk"] = with_sdk["on"]
        samples["off_beside_sdk"] = with_sdk["off"]
        exporter.clear()
    finally:
        store.close()
    base = statistics.median(samples["off"])
    sdk_base = statistics.median(samples["off_beside_sdk"])
    result: dict[str, Any] = {
        "recording_calls_us_per_recall": round(cost_us, 1),
        "memories": memories,
        "rounds": rounds,
        "recalls_per_arm": {k: len(v) for k, v in samples.items()},
        "arms": {k: percentiles(v) for k, v in samples.items()},
        "p50_ratio_vs_off": {
            "on": round(statistics.median(samples["on"]) / base, 3),
            "on_with_sdk": round(statistics.median(samples["on_with_sdk"]) / sdk_base, 3),
        },
        "p50_added_us_vs_off": {
            "on": round((statistics.median(samples["on"]) - base) * 1e6, 1),
            "on_with_sdk": round((statistics.median(samples["on_with_sdk"]) - sdk_base) * 1e6, 1),
        },
    }
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", type=Path, default=RESULTS / "instrumentation.json")
    args = parser.parse_args(argv)
    result = run(args.memories, args.rounds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["p50_ratio_vs_off"]), json.dumps(result["p50_added_us_vs_off"]))
    print(f"recording calls alone: {result['recording_calls_us_per_recall']} us per recall")
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
