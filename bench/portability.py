"""Export and import stream: 100k memories out to a file and back in, with the memory each
step allocated, against the baseline of holding the file's records in memory (what an
import that reads the file whole before checking it needs).

Python's allocation peak per step (``tracemalloc``, reset before each), and the process's
RSS peak at the end. The store is lexical-only (no model: the steps measure the format and
the store, not the embedding of 100k texts; vectors are not in the file). Writes
``bench/results/portability.json``.

    python -m bench.portability [--memories 100000] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import WORK, fresh_store, peak_rss_mb
from harness.memory import MemoryCandidate
from harness.memory.domain.export_format import parse_line

RESULTS = Path(__file__).parent / "results"
TENANT, COPY = "bench-export", "bench-import"


def measured(fn: Callable[[], Any]) -> tuple[dict[str, float], Any]:
    """``fn()``'s wall time and Python allocation peak (MB)."""
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] - before
    return {"seconds": round(seconds, 2), "peak_alloc_mb": round(peak / 2**20, 2)}, out


def run(n: int) -> dict[str, Any]:
    store = fresh_store(None, "bench_portability")
    path = WORK / "portability" / "memories.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        start = time.perf_counter()
        for i in range(0, n, 2000):
            store.write_many(
                [
                    MemoryCandidate(
                        tenant=TENANT,
                        scope="user",
                        scope_id=f"u{j % 500}",
                        kind="fact",
                        key=f"k{j}" if j % 3 == 0 else None,
                        content=f"Fact number {j}: the service in region {j % 17} restarts at "
                        f"{j % 24:02d}:00 and pages the on-call of team {j % 41}.",
                        context="seeded by bench.portability" if j % 5 == 0 else None,
                    )
                    for j in range(i, min(i + 2000, n))
                ]
            )
        seeded_s = time.perf_counter() - start
        tracemalloc.start()

        def export() -> Any:
            with path.open("w", encoding="utf-8") as f:
                return store.export_memories(TENANT, lambda line: f.write(line + "\n"))

        exported, report = measured(export)
        imported, imp = measured(lambda: store.import_memories(path, as_tenant=COPY))
        again, imp_again = measured(lambda: store.import_memories(path, as_tenant=COPY))

        def hold_everything() -> int:
            with path.open(encoding="utf-8") as f:
                records = [parse_line(line, i) for i, line in enumerate(f, start=1) if i > 1]
            return len(records)

        baseline, held = measured(hold_everything)
        tracemalloc.stop()
    finally:
        store.close()
    assert report.memories == n and imp.memories == n and imp_again.existing == n and held == n
    return {
        "memories": n,
        "file_mb": round(path.stat().st_size / 2**20, 1),
        "seed_seconds": round(seeded_s, 1),
        "export": exported,
        "import": imported,
        "import_again_idempotent": again,
        "baseline_hold_all_records": baseline,
        "import_peak_vs_baseline": round(imported["peak_alloc_mb"] / baseline["peak_alloc_mb"], 3),
        "export_peak_vs_baseline": round(exported["peak_alloc_mb"] / baseline["peak_alloc_mb"], 3),
        "process_peak_rss_mb": round(peak_rss_mb(), 1),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=RESULTS / "portability.json")
    args = parser.parse_args(argv)
    result = run(args.memories)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
