"""Cost of a pooled checkout: ``pool_pre_ping`` (main) against the socket poll (this tree).

    python -m bench.pool_checkout --n 2000 --rounds 5   # writes bench/results/pool_checkout.json

Two engines on the bench server, each with the store's pool options (one with the ping
instead of the poll), alternate rounds of ``n`` checkouts running one trivial statement;
per side the median wall and CPU microseconds per checkout+statement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.common import RESULTS, server_url
from harness.memory.store.connect import engine_options, watch_pooled_connections
from harness.settings import Settings


def _round(engine: sa.Engine, n: int) -> tuple[float, float]:
    stmt = sa.text("SELECT 1")
    w, c = time.perf_counter(), time.process_time()
    for _ in range(n):
        with engine.connect() as conn:
            conn.execute(stmt)
    return (time.perf_counter() - w) / n * 1e6, (time.process_time() - c) / n * 1e6


def compare(n: int, rounds: int) -> dict[str, Any]:
    url = server_url()
    options = engine_options(Settings.from_env(), url)
    ping = sa.create_engine(url, **{**options, "pool_pre_ping": True})
    poll = sa.create_engine(url, **options)
    watch_pooled_connections(poll)
    load_before = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, list[tuple[float, float]]] = {"pre_ping": [], "poll": []}
    try:
        for engine in (ping, poll):
            _round(engine, 50)  # pools filled, first connections made
        for r in range(rounds):
            sides = [("pre_ping", ping), ("poll", poll)]
            for name, engine in sides if r % 2 == 0 else sides[::-1]:
                runs[name].append(_round(engine, n))
    finally:
        ping.dispose()
        poll.dispose()
    summary = {
        name: {
            "wall_us": round(statistics.median(w for w, _ in values), 1),
            "cpu_us": round(statistics.median(c for _, c in values), 1),
        }
        for name, values in runs.items()
    }
    summary["poll_over_pre_ping_wall"] = round(  # type: ignore[assignment]
        summary["poll"]["wall_us"] / summary["pre_ping"]["wall_us"], 3
    )
    return {
        "n": n,
        "rounds": rounds,
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "summary": summary,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "pool_checkout.json"))
    args = parser.parse_args(argv)
    result = compare(args.n, args.rounds)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
