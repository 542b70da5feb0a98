"""What read replicas cost a caller: the same operations on a primary-only store and on a store
reading a streaming replica (``pg_basebackup -R`` of the primary, both on this machine),
interleaved in one process. Writes ``bench/results/replica_cost.json``.

* ``recall``: a recall with no write of the caller before it (no read-your-writes wait);
* ``write``: one write (with replicas: plus reading the commit's WAL position);
* ``write_then_recall``: a write, then at once a recall that must see it (with replicas: the
  replica is waited for, bounded by ``HARNESS_REPLICA_WAIT_MS``, else the primary answers).

Both servers share this machine's cores, so this measures the routing's overhead, not the
capacity a replica adds. Lexical-only (no model): the embedder does not change routing.

Run: ``python -m bench.replica_cost [--memories 1000] [--rounds 200]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.synthetic import generate
from harness.memory import MemoryCandidate, MemoryStore, RecallRequest
from harness.memory.store.migrate import upgrade_to_head
from harness.settings import Settings
from tests.support.pg_replica import primary_with_replica

RESULTS = Path(__file__).parent / "results" / "replica_cost.json"


def _migrate(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        upgrade_to_head(engine)
    finally:
        engine.dispose()


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def _summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    walls = sorted(s[0] for s in samples)
    return {
        "p50_ms": round(statistics.median(walls), 3),
        "p90_ms": round(walls[int(len(walls) * 0.9)], 3),
        "cpu_p50_ms": round(statistics.median(s[1] for s in samples), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    facts = generate(args.memories, 10, 0).facts
    with primary_with_replica(prepare=_migrate) as server:
        stores = {
            "primary_only": MemoryStore.connect(server.primary_url, embedder=None, migrate=False),
            "with_replica": MemoryStore.connect(
                server.primary_url,
                embedder=None,
                migrate=False,
                settings=Settings.from_env(database_read_url=server.replica_url),
            ),
        }
        loader = stores["primary_only"]
        for i in range(0, len(facts), 500):
            loader.write_many(
                [
                    MemoryCandidate(
                        tenant="bench", scope="user", scope_id="u", kind="fact", content=f
                    )
                    for f in facts[i : i + 500]
                ]
            )
        server.wait_caught_up()

        def recall(store: MemoryStore, n: int) -> None:
            store.recall(
                RecallRequest(tenant="bench", user_id="u", query=facts[n % len(facts)][:60])
            )

        def write(store: MemoryStore, n: int, name: str) -> None:
            store.write(
                MemoryCandidate(
                    tenant="bench",
                    scope="user",
                    scope_id="u",
                    kind="preference",
                    key=f"pref.{name}",
                    content=f"Preference number {n} of {name}",
                )
            )

        samples: dict[str, dict[str, list[tuple[float, float]]]] = {
            name: {"recall": [], "write": [], "write_then_recall": []} for name in stores
        }
        for n in range(args.rounds + 20):
            for name, store in stores.items():
                timings = {
                    "recall": _timed(lambda s=store, i=n: recall(s, i)),
                    "write": _timed(lambda s=store, k=name, i=n: write(s, i, k)),
                }
                write(store, n, name)
                timings["write_then_recall"] = _timed(lambda s=store, i=n: recall(s, i))
                if n >= 20:  # warm-up rounds are dropped
                    for op, value in timings.items():
                        samples[name][op].append(value)
        routing = stores["with_replica"].read_routing()
        for store in stores.values():
            store.close()
    result: dict[str, Any] = {
        "memories": args.memories,
        "rounds": args.rounds,
        "replica_wait_ms": routing.wait_ms,
        "results": {
            name: {op: _summary(s) for op, s in ops.items()} for name, ops in samples.items()
        },
        "ratios_p50": {
            op: round(
                statistics.median(s[0] for s in samples["with_replica"][op])
                / statistics.median(s[0] for s in samples["primary_only"][op]),
                3,
            )
            for op in ("recall", "write", "write_then_recall")
        },
        "replica_reads": routing.replicas[0].reads,
        "primary_reads": routing.primary_reads,
        "fallbacks": dict(routing.fallbacks),
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
